"""The accuracy tables the README and benchmarks/speed_accuracy.md show are the calibration's own output.

A change to the speed model or its constants that moves any row's figure fails here until the tables are
regenerated (``python -m anchorgpu.planner.speed.calibrate --markdown [--all]``), so no document shows a stale error.
"""

from __future__ import annotations

from pathlib import Path

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs

ROOT = Path(__file__).resolve().parents[2]


def _rows_of(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("| ") or line.startswith(("core ", "trtllm-", "rocm-", "vllm-", "inferencemax "))]


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
