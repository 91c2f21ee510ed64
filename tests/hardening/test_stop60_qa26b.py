"""Stop 60's three face fixes from the QA pass's "Left" items 2-4 (benchmarks/hardening/stop60_qa26b.md).

1. ``recommend llama-3.1-405b --task train --tokens 1e15`` wrote its run time as "8,122,7… days": 194,945,411 h in
   days overflowed the column and rich cut it. Times past 365 days are now written in years (a year of 8,760 h, the
   year of the longest term a quote prices), and a numeric column folds a figure that does not fit, never cuts it.
2. ``gpus compare h100 h100`` (or ``h100 h100-sxm``) printed "1.00x (0.80-1.25)" on every predicted row, a band as if
   the two predictions erred apart; they are one GPU, so the CLI (exit 2), the API (422) and the page refuse it.
3. FP8 training's plan said "weights bf16" in its header and "Weights stored as bf16" beside the line that holds the
   weights in FP8 with their transposes; the words now name what is held. The JSON's ``precision.weights`` ("bf16",
   the format resolved) is a contract and unchanged.
"""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from anchorgpu.units import fmt_duration
from cli_runner import run, run_json

# 1. long times and numeric cells


def test_a_time_past_a_year_is_written_in_years() -> None:
    """A run of 194,945,411 h (recommend's #1 for 405B on 1e15 tokens, stop60_qa26) is 22,254 years of 8,760 h."""
    assert fmt_duration(194_945_411 * 3_600) == "22,254.0 years"
    assert fmt_duration(364 * 86_400) == "364.0 days"  # below a year: days, as before
    assert fmt_duration(365 * 86_400) == "1.0 years"


def test_recommend_never_cuts_a_number(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "8,122,7… days" in the run-time column and "$27,156…" in the total column (rich's ellipsis)."""
    code, out, err = run(capsys, "recommend", "llama-3.1-405b", "--task", "train", "--tokens", "1e15", "--top", "3")
    assert code == 0, err
    table = out[: out.index("train tok/s: band")]
    assert "…" not in table, table
    # the JSON keeps seconds; the table writes the first row's run time in years of 8,760 h (22,254 at stop 60's qa26b)
    body = run_json(capsys, "recommend", "llama-3.1-405b", "--task", "train", "--tokens", "1e15", "--top", "3")
    seconds = body["results"][0]["train_time_s"]
    assert seconds > 365 * 86_400
    years = fmt_duration(seconds).removesuffix(" years")
    assert re.search(rf"\b{re.escape(years)}\b", table) and "years" in table, (years, table)


@pytest.mark.parametrize("columns", [140, 110])
def test_a_narrow_recommend_table_wraps_or_folds_instead_of_cutting(capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    columns: int) -> None:
    """At 140 columns the layout wraps between its parts and every figure shows whole on its line; at 110 (too
    narrow for eleven columns) a long figure folds onto the next line: nothing is cut with an ellipsis. Before, 140
    cut "$27,156…" and 110 left the five numeric columns empty (one or two characters wide, their cells cut away)."""
    import sys

    from rich.console import Console

    from anchorgpu.cli import recommend_render

    def narrow() -> Console:  # a terminal of that width (a pipe is widened to 160), no colours
        return Console(file=sys.stdout, force_terminal=True, width=columns, color_system=None)

    monkeypatch.setattr(recommend_render, "console", narrow)
    code, out, err = run(capsys, "recommend", "llama-3.1-405b", "--task", "train", "--tokens", "1e15", "--top", "3")
    assert code == 0, err
    table = out[: out.index("train tok/s: band")]
    assert "…" not in table, table
    assert "1,423" in table and "$1.55" in table, table  # #1's speed (1,423 after stop 61's refit cd9b23fe, 1,425 before) and $/GPU-h fit either width
    if columns == 140:  # #1's run time (years, as its JSON's seconds write) and total, whole
        seconds = run_json(capsys, "recommend", "llama-3.1-405b", "--task", "train", "--tokens", "1e15", "--top",
                           "3")["results"][0]["train_time_s"]
        assert fmt_duration(seconds).removesuffix(" years") in table and "$27,156.00" in table, table


# 2. a GPU compared with itself


@pytest.mark.parametrize(("a", "b"), [("h100", "h100"), ("h100", "h100-sxm"), ("MI300X", "mi300x")])
def test_one_gpu_named_twice_is_refused_on_every_face(capsys: pytest.CaptureFixture[str], client: TestClient,
                                                      a: str, b: str) -> None:
    """Before: exit 0 and "1.00x (0.80-1.25)" on each predicted row."""
    code, out, err = run(capsys, "gpus", "compare", a, b)
    assert code == 2 and out == "" and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: {a} and {b} are the same GPU (")
    assert "every ratio is exactly 1.00x; give two different GPUs" in err
    r = client.get("/v1/gpus/compare", params={"a": a, "b": b})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith(f"{a} and {b} are the same GPU (")
    page = client.get("/gpus/compare", params={"a": a, "b": b})
    assert page.status_code == 422 and "are the same GPU" in page.text


def test_two_gpus_on_equal_figures_keep_their_bands(capsys: pytest.CaptureFixture[str]) -> None:
    """H100 SXM and H800 share memory, bandwidth and peaks (not the link): two devices, each with its own measured
    band, so a ratio of 1.00x keeps one (8B training: 1.00x, likely 0.83-1.20x, on 2026-12-07's calibration)."""
    body = run_json(capsys, "gpus", "compare", "h100", "h800")
    training = next(row for row in body["predicted"] if row["label"].startswith("8B training"))
    assert training["ratio"] == pytest.approx(1.0, abs=0.005)
    assert training["ratio_low"] < 0.95 and training["ratio_high"] > 1.05


# 3. FP8 training's weights


_FP8 = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--train-precision", "fp8")


def test_fp8_training_names_the_weights_it_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """Before: "Layout ... · weights bf16" and "Weights stored as bf16 (default for task train)." beside "the weights
    held in FP8 with their transposes ... in place of the 16-bit weights"."""
    code, out, err = run(capsys, *_FP8)
    assert code == 0, err
    flat = re.sub(r"\s+", " ", out)
    layout = next(line for line in out.splitlines() if line.startswith("Layout "))
    assert layout.endswith("· weights fp8 + transposes"), layout
    assert "Weights stored as bf16" not in flat
    assert "Weights: the bf16 checkpoint (default for task train), held in FP8 with their transposes" in flat
    assert "Mixed precision: 2-byte weights (FP8 with their transposes under FP8 training, below) and 16-bit" in flat
    # the JSON's format key keeps its value (a contract), and mixed precision keeps its words
    assert run_json(capsys, *_FP8)["precision"]["weights"] == "bf16"
    code, out, _ = run(capsys, *_FP8[:-2])
    assert "· weights bf16" in out and "Weights stored as bf16 (default for task train)." in out
    assert "Mixed precision: 16-bit weights and gradients" in re.sub(r"\s+", " ", out)


def test_fp8_training_rows_say_fp8_in_recommend_and_on_the_pages(capsys: pytest.CaptureFixture[str],
                                                                 client: TestClient) -> None:
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp8", "--top", "2")
    assert code == 0, err
    rows = [line for line in out.splitlines() if line.startswith("│1 ") or line.startswith("│2 ")]
    assert rows and all("│ fp8 " in line and "bf16" not in line for line in rows), rows
    page = client.get("/plan", params={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                       "train_precision": "fp8"})
    assert page.status_code == 200
    assert re.search(r"<dt>Weights</dt><dd>fp8 \+ transposes", page.text), page.text[:300]
