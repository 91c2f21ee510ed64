"""``anchorgpu gpus compare A B`` names, for each GPU, the framework that trains in FP8 and in FP4 there, worded as
``gpus show`` words it (gpus.toml training_stacks and training_sources; ``fmt_training_stacks``): a table row and the
``--json`` answer's ``training``."""

from __future__ import annotations

import pytest

from cli_runner import run, run_json

# gpus.toml: mi355x trains FP8 and FP4 with ROCm Transformer Engine (S33); h100 trains FP8 with NVIDIA's Transformer
# Engine (S32) and has no FP4 tensor cores; the A100 has neither unit and no training source
MI355X = "FP8: ROCm Transformer Engine; FP4: ROCm Transformer Engine (MXFP4BlockScaling) (S33)"
H100 = "FP8: Transformer Engine; FP4: none (no FP4 tensor cores) (S32)"
A100 = "FP8: none (no FP8 tensor cores); FP4: none (no FP4 tensor cores)"


def _training_row(table: str) -> list[str]:
    """The table's "FP8 / FP4 training" row, each cell's wrapped lines joined: [label, a, b, ratio]."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("│ FP8 / FP4 training"))
    cells: list[list[str]] = [[], [], [], []]
    for line in lines[start:]:
        if not line.startswith("│"):
            break
        for cell, text in zip(cells, line.split("│")[1:-1], strict=True):
            if text.strip():
                cell.append(text.strip())
    return [" ".join(cell) for cell in cells]


def test_the_compare_table_has_the_training_row_of_gpus_show(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "gpus", "compare", "mi355x", "h100")
    assert code == 0
    assert _training_row(out) == ["FP8 / FP4 training", MI355X, H100, "-"]
    code, show, _ = run(capsys, "gpus", "show", "mi355x")  # the same words as `gpus show`
    assert code == 0 and "FP8: ROCm Transformer Engine;" in show


def test_the_compare_json_has_each_sides_training_line(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "gpus", "compare", "h100", "a100")
    assert data["training"] == {"a": H100, "b": A100}
    # the frameworks themselves stay in a and b, as gpus show --json has them
    assert data["a"]["training_stacks"] == {"fp8": "Transformer Engine", "fp4": None}
    assert "training" not in data["ratios"]  # a framework's name has no ratio
