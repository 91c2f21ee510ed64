"""The only L40S rows: TensorRT-LLM's 2023 performance page (NVIDIA/TensorRT-LLM docs/source/performance.md, commit
138f96d; TensorRT-LLM v0.5), Llama 2 7B with FP8 weights and KV cache on one L40S (set ``trtllm-l40s`` of
``src/anchorgpu/planner/speed/data/measured_runs.json``, all held out):

- peak throughput of static batches (gptSessionBenchmark): batch 64 at 128/128 -> 3,240 output tokens/s, 64 at
  128/2048 -> 1,622, 32 at 2048/128 -> 581, 16 at 2048/2048 -> 531;
- first-token latency of one prompt: 14 ms at 128 tokens, 73 ms at 2,048.
"""

from __future__ import annotations

import pytest

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict
from cli_runner import run_json

ROWS = {run.id: run for run in load_runs() if run.row.get("set") == "trtllm-l40s"}
PAGE = {"TRT05-L40S-L2-7B-128/128": 3240, "TRT05-L40S-L2-7B-128/2048": 1622, "TRT05-L40S-L2-7B-2048/128": 581,
        "TRT05-L40S-L2-7B-2048/2048": 531, "TRT05-L40S-L2-7B-TTFT-128": 0.014, "TRT05-L40S-L2-7B-TTFT-2048": 0.073}


def test_the_rows_are_the_pages_figures_held_out() -> None:
    assert "trtllm-l40s" in calibrate.SETS
    assert {run_id: run.value for run_id, run in ROWS.items()} == PAGE
    for run in ROWS.values():
        assert run.role == "holdout" and run.row["gpu"] == "l40s"
        assert (run.row["weights"], run.row["kv_cache"]) == ("fp8", "fp8")
        assert run.source.startswith("NVIDIA/TensorRT-LLM docs/source/performance.md (commit 138f96d")


def test_a_static_batch_is_its_output_over_its_prefill_and_decode() -> None:
    """The throughput rows are whole static batches: the batch's output tokens over the time from its first prompt
    token to its last output token, the same time a latency row of that batch would be predicted at."""
    from dataclasses import replace

    run = ROWS["TRT05-L40S-L2-7B-128/2048"]
    latency = predict(replace(run, metric="request_latency_s"))
    assert predict(run) == pytest.approx(run.row["batch"] * run.row["output_tokens"] / latency)


def test_every_l40s_row_comes_within_25_percent() -> None:
    for run_id, run in ROWS.items():
        assert abs(predict(run) / run.value - 1) <= 0.25, run_id


def test_an_l40s_plan_carries_that_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    evidence = calibration().evidence_for(get_gpu("l40s"), "serve")
    assert evidence is not None and evidence.held_out == 6
    d = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "l40s", "--prompt", "1000", "--output-tokens", "200",
                 "--concurrency", "16")
    summary = d["performance"]["evidence"]["summary"]
    assert summary.startswith("on l40s, 6 held-out") and "no measured run" not in summary
