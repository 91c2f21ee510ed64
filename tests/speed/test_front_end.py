"""The serving front end's start delay in GPUStack's 128-token bursts, read from each row's own page
(``speed/front_end.py``; benchmarks/hardening/stop60_vgm2.md and stop61_gpustack.md).

Every figure here is a row's: the page's 'Benchmark duration (s)', 'Mean TTFT (ms)' and 'P99 TTFT (ms)' of the
'# random 128 input' block its ``source`` names (gpustack/gpustack docs/performance-lab/<model>/<gpu>.md), stored
in the row's ``front_end``."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from anchorgpu.planner.speed.front_end import front_end_delay_s, p99_check_s
from anchorgpu.planner.speed.runs import load_runs, predict

RUNS = {run.id: run for run in load_runs()}
FRONT = {key: run for key, run in RUNS.items() if "front_end" in run.row}
# GPUStack's bursts of 1,000 requests of 128 prompt and 4 output tokens: vLLM 0.11 and TensorRT-LLM 1.2.0rc1
SHORT = {key for key, run in RUNS.items() if key.startswith(("VGA-", "TGA-", "VGM-")) and key.endswith("-128")}


def _without(key: str) -> float:
    run = RUNS[key]
    return predict(replace(run, row={k: v for k, v in run.row.items() if k != "front_end"}))


def test_every_short_burst_carries_its_pages_front_end_figures_and_no_other_row_does() -> None:
    assert set(FRONT) == SHORT and len(SHORT) == 10
    for key, run in FRONT.items():
        r, fe = run.row, run.row["front_end"]
        assert r["metric"] == "burst_output_tokens_per_s" and (r["prompt_tokens"], r["output_tokens"]) == (128, 4), key
        assert "'# random 128 input'" in run.source, key
        # the row's value is still the page's own figure: its output tokens over the page's duration
        assert run.value == pytest.approx(r["burst_requests"] * 4 / fe["benchmark_duration_s"], rel=5e-3), key
        # the derivation written in the row states the start delay the code reads from its figures
        said = re.search(r"t0 = 2 x [0-9.]+ - [0-9.]+ = ([0-9.]+) s", fe["derivation"])
        assert said and float(said.group(1)) == pytest.approx(front_end_delay_s(r), abs=0.006), key
        # a third figure of the page checks the even spread the reading assumes: the P99 TTFT where t0 + 0.99 T puts
        # it, to 0.03-0.31 s (gpt-oss-20b on the H100, 0.25 s of a 4.70 s run, the most of the run: 5.4%)
        assert abs(p99_check_s(r) - fe["p99_ttft_s"]) < 0.06 * fe["benchmark_duration_s"], key


def test_the_delay_is_the_pages_and_adds_to_the_planned_burst() -> None:
    """Qwen3-14B on one A100, vLLM 0.11 (qwen3-14b/a100.md @10e9444): duration 26.79 s, mean TTFT 19,451.46 ms, so
    the engine started 2 x 19.45146 - 26.79 = 12.11 s after the burst was sent; the row's prediction is its 4,000
    output tokens over that delay plus the planned burst."""
    run = RUNS["VGA-Q14-128"]
    assert front_end_delay_s(run.row) == pytest.approx(12.11292)
    planned = 4000 / _without("VGA-Q14-128")
    assert predict(run) == pytest.approx(4000 / (12.11292 + planned), rel=1e-12)


@pytest.mark.parametrize("key", ["VGA-Q14-128", "VGA-Q32-128", "VGM-GLMA-A100-128", "VGM-Q235-A100-128",
                                 "VGM-Q235-H100-128", "VGM-OSS20-H100-128"])
def test_vllms_short_bursts_are_its_front_end_then_the_planned_engine(key: str) -> None:
    """The six vLLM rows whose pages show a start of 1.6-12.8 s: with it each is within 25% of the page, without it
    none is (the planner's burst alone is 42-165% too fast, stop60_vgm2.md)."""
    run = RUNS[key]
    assert abs(predict(run) / run.value - 1) <= 0.25, key
    assert _without(key) / run.value - 1 > 0.25, key


def test_a_reading_the_premise_does_not_hold_for_is_refused() -> None:
    assert front_end_delay_s({"prompt_tokens": 128}) == 0.0
    with pytest.raises(ValueError, match="not spread evenly"):
        front_end_delay_s({"front_end": {"benchmark_duration_s": 10.0, "mean_ttft_s": 4.0}})
