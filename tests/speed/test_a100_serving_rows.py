"""GPUStack's vLLM 0.11.0 baselines on one A100 (set ``vllm-gpustack-a100`` of
``src/anchorgpu/planner/speed/data/measured_runs.json``: gpustack/gpustack docs/performance-lab/qwen3-14b/a100.md and
qwen3-32b/a100.md, commit 10e9444a07c73556f2ef0d10d2b2766bbf54c9c0) are held out, never fitted, and give a plan on an
A100 80 GB the evidence of its own GPU's serving runs.
"""

from __future__ import annotations

import re

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload, plan
from anchorgpu.planner.speed.calibrate import SETS, set_of
from anchorgpu.planner.speed.calibration import read_calibration_doc
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import load_runs

ROWS = [run for run in load_runs() if run.row.get("set") == "vllm-gpustack-a100"]


def test_the_set_is_registered_and_its_rows_are_there() -> None:
    assert "vllm-gpustack-a100" in SETS
    assert len(ROWS) == 10
    assert {set_of(run) for run in ROWS} == {"vllm-gpustack-a100"}
    assert {run.row["model"]["registry"] for run in ROWS} == {"qwen3-14b", "qwen3-32b"}


def test_every_row_is_held_out_serving_on_one_a100_80gb() -> None:
    for run in ROWS:
        assert run.role == "holdout" and run.phase == "serve", run.id
        # every request sent at once (ShareGPT's 1,000 too, since stop 59): a burst, each request at the mean lengths
        assert run.metric == "burst_output_tokens_per_s", run.id
        assert run.value > 0 and run.row["burst_requests"] >= 100, run.id
        assert (run.row["gpu"], run.row["gpus"], run.row["tp"]) == ("a100-80gb-sxm", 1, 1), run.id
        # vLLM keeps its small defaults on an A100 of any size (arg_utils: the device name check)
        assert (run.row["max_num_batched_tokens"], run.row["max_num_seqs"]) == (2048, 256), run.id


def test_every_row_names_its_source_page_and_commit() -> None:
    for run in ROWS:
        assert run.source.startswith("gpustack/gpustack docs/performance-lab/qwen3-"), run.id
        assert re.search(r"\(commit [0-9a-f]{40}\)", run.source), run.id
        assert "vLLM v0.11.0" in run.note and "A100" in run.note, run.id


def test_the_fit_report_lists_them_as_held_out() -> None:
    """``calibrate --write`` reports each row's error as held out (the fit takes only ``fit`` rows)."""
    report = {row["id"]: row for row in read_calibration_doc()["fit_report"]}
    for run in ROWS:
        assert report[run.id]["role"] == "holdout", run.id


def test_a_plan_on_an_a100_80gb_now_carries_its_gpus_serving_evidence() -> None:
    w = Workload(task="inference", prompt_tokens=1000, output_tokens=200, concurrency=16)
    perf = plan_performance(plan(load_model("qwen3-14b"), w, gpu=get_gpu("a100-80gb-sxm")))
    e = perf["evidence"]
    assert e["gpu"] == "a100-80gb-sxm" and e["kind"] == "serve"
    assert e["rows"] >= len(ROWS) > 0 and e["held_out"] >= len(ROWS) and e["basis"] == "held-out"
    assert e["summary"] in perf["assumptions"] and not e["summary"].startswith("no measured")
