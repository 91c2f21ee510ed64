"""The accuracy tables the README and benchmarks/speed_accuracy.md show are the calibration's own output.

A change to the speed model or its constants that moves any row's figure fails here until the tables are
regenerated (``python -m anchorgpu.planner.speed.calibrate --markdown [--all]``), so no document shows a stale error.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs
from cli_runner import run_json

ROOT = Path(__file__).resolve().parents[2]


def _rows_of(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("| ") or line.startswith(("core ", "trtllm-", "rocm-", "vllm-", "megatron-", "deepseek-", "inferencemax "))]


def test_readme_accuracy_table_is_the_calibration_output() -> None:
    expected = _rows_of(calibrate.markdown(calibrate.report_rows(calibration(), load_runs()), load_runs()))
    readme = ROOT.joinpath("README.md").read_text("utf-8")
    start = readme.index("| row | source | what | role | measured | ours | error |")
    shown = _rows_of(readme[start:start + len("\n".join(expected)) + 2000])[:len(expected)]
    assert shown == expected


def test_the_full_table_is_the_calibration_output() -> None:
    expected = _rows_of(calibrate.markdown(calibrate.report_rows(calibration(), load_runs()), load_runs(),
                                           tuple(calibrate.SETS)))
    shown = _rows_of(ROOT.joinpath("benchmarks", "speed_accuracy.md").read_text("utf-8"))
    assert shown == expected


def _readme_block(after: str) -> str:
    readme = ROOT.joinpath("README.md").read_text("utf-8")
    start = readme.index(after)
    return readme[start:readme.index("```", start)]


def test_readme_gpus_compare_example_is_the_cli_output(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's `gpus compare mi300x h100` figures are the calibrated model's current ones (each prediction with
    its band, each ratio with its band), so a change to the model cannot leave the example stale."""
    block = _readme_block("$ anchorgpu gpus compare mi300x h100")
    d = run_json(capsys, "gpus", "compare", "mi300x", "h100")
    for row in d["predicted"]:
        for side in (row["a"], row["b"]):
            shown = f"{side['value']:,.0f} ({side['low']:,.0f}-{side['high']:,.0f})"
            assert shown in block, f"{row['metric']}: {shown} not in the README's example"
        ratio = f"{row['ratio']:.2f}x ({row['ratio_low']:.2f}-{row['ratio_high']:.2f})"
        assert ratio in block, f"{row['metric']}: {ratio} not in the README's example"


def test_readme_recommend_example_is_the_cli_output(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's ranked `recommend` example (its three rows): offering, layout and every figure as the CLI prints
    them today."""
    block = _readme_block("$ anchorgpu recommend llama-3.1-70b --task inference --context 8192 --concurrency 32")
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in block.splitlines() if line.startswith("│")]
    d = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "inference", "--context", "8192", "--concurrency",
                 "32", "--term", "1month", "--top", "3")
    assert len(rows) == len(d["results"]) == 3
    for cells, r in zip(rows, d["results"], strict=True):
        assert cells[1] == r["offering"]
        # the JSON keeps a tenth of a token a second, the table whole ones from the unrounded figure: 627.46 shows as
        # 627 and reads 627.5, so either neighbour of the JSON's figure is the table's
        total = r["decode_tokens_per_s_total"]
        assert cells[7] in {f"{total - 0.05:,.0f}", f"{total:,.0f}", f"{total + 0.049:,.0f}"}
        user = r["decode_tokens_per_s_per_user"]  # kept to a hundredth in the JSON: the same either-neighbour rule
        assert cells[8] in {f"{user - 0.005:,.1f}", f"{user:,.1f}", f"{user + 0.0049:,.1f}"}
        assert cells[9] == f"{r['prefill_s']:,.2f}"
        # a rate per million tokens is kept to four significant digits, as the table prints it ($4.739, not $4.74)
        assert cells[10] == f"${Decimal(r['usd_per_million_output_tokens']):,}"
        assert cells[11] == f"${float(r['total_usd']):,.2f}"


def _readme_journey(command: str) -> str:
    """The README's `plan` journey for COMMAND: the line that runs it and the `#` comment lines under it."""
    lines = ROOT.joinpath("README.md").read_text("utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"anchorgpu {command}"))
    block = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("#  ") and not line.startswith("#    "):
            break
        block.append(line)
    return "\n".join(block)


def test_readme_training_journeys_are_the_cli_output(capsys: pytest.CaptureFixture[str]) -> None:
    """The layouts and figures the README's training journeys state are what `plan` gives today (the planner picks
    the 512-H100 layout, so a change to the speed model can move it: this fails until the README follows)."""
    args = "plan llama-3.1-70b --task train --gpu h100 --gpus 512 --tokens 1e12"
    shown = _readme_journey(args)
    d = run_json(capsys, *args.split())
    layout, performance = d["layout"], d["performance"]
    assert (layout["tp"], layout["pp"], layout["virtual_stages"], layout["dp"], layout["zero"], layout["fsdp"]) == (
        1, 16, 5, 32, 1, False)
    assert "PP 16 interleaved over 5 virtual stages x DP 32 with ZeRO-1, micro-batch 1" in shown
    assert f"FITS ({d['per_gpu']['total_bytes'] / 2**30:.2f} GiB per GPU)" in shown
    assert f"~{performance['train_tokens_per_s'] / 1e3:.0f}k tok/s" in shown
    assert f"{performance['gpu_hours']:,.0f} GPU-hours" in shown
    fsdp = run_json(capsys, *args.split(), "--fsdp")
    assert f"fits in {fsdp['per_gpu']['total_bytes'] / 2**30:.2f} GiB but runs ~{fsdp['performance']['train_tokens_per_s'] / 1e3:.0f}k" in shown

    args = "plan llama-2-7b --task train --gpu h200 --gpus 64 --zero 1 --tokens 1e12"
    assert f"{run_json(capsys, *args.split())['performance']['gpu_hours']:,.0f} GPU-hours" in _readme_journey(args)


def test_readme_replicas_example_is_the_cli_output(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan llama-3.1-8b --gpu h100 --gpus 8 --concurrency 1000`: the README's two predicted figures, the replicas'
    and TP 8's, are the ones the plan's "Layout chosen" assumption gives."""
    d = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--concurrency", "1000")
    chosen = next(a for a in d["assumptions"] if a.startswith("Layout chosen on the 8 GPUs asked"))
    replicas, tp8 = (m.replace(",", "") for m in re.findall(r"\(([\d,]+) output tok/s\).*?at ([\d,]+);", chosen)[0])
    readme = ROOT.joinpath("README.md").read_text("utf-8")
    assert f"(predicted {int(replicas):,} tok/s against TP 8's {int(tp8):,})" in readme
    # the serving keys' example: saturation at the sequences' average length, and how many hold their full length
    perf = d["performance"]
    assert (f"{perf['saturation_concurrency']:,} and {perf['saturation_full_length_concurrency']:,} for `plan "
            "llama-3.1-8b --gpu h100 --gpus 8 --concurrency 1000`") in " ".join(readme.split())


def _set_lines() -> list[tuple[str, str, str, int, int]]:
    """(set, stack, role, within 25%, rows) for each per-set line the calibration prints."""
    markdown = calibrate.markdown(calibrate.report_rows(calibration(), load_runs()), load_runs())
    found = re.findall(r"^(\S+) (\S+) (fit|holdout): \d+ rows, .* within 25%: (\d+)/(\d+)$", markdown, re.M)
    return [(name, stack, role, int(within), int(rows)) for name, stack, role, within, rows in found]


def test_readme_accuracy_summary_counts_are_the_calibration_output() -> None:
    """The README's summary under the set lines ("Where it stands") quotes the totals and some sets' held-out counts;
    they are the calibration's own, so a refit that moves a set fails here until the summary follows. The detail it
    links to (benchmarks/speed_accuracy_notes.md) is there."""
    lines = _set_lines()
    readme = " ".join(ROOT.joinpath("README.md").read_text("utf-8").split())
    summary = readme[readme.index("Where it stands"):readme.index("benchmarks/speed_accuracy_notes.md)")]
    fit = [(w, n) for _, _, role, w, n in lines if role == "fit"]
    held = [(w, n) for _, _, role, w, n in lines if role == "holdout"]
    assert (f"{sum(w for w, _ in fit)} of {sum(n for _, n in fit)} fitted rows and {sum(w for w, _ in held)} of "
            f"{sum(n for _, n in held)} held-out rows within 25%") in summary
    quoted = re.findall(r"`([a-z0-9-]+)`, (\d+)/(\d+)", summary)
    assert len(quoted) >= 4
    for name, within, rows in quoted:
        assert any(s == name and role == "holdout" and (w, n) == (int(within), int(rows))
                   for s, _, role, w, n in lines), f"{name}: {within}/{rows} is not its held-out set line"
    assert ROOT.joinpath("benchmarks", "speed_accuracy_notes.md").read_text("utf-8").startswith(
        "# Speed accuracy: detailed notes")
