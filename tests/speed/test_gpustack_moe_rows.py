"""GPUStack's vLLM baselines of mixtures of experts on A100 80 GB and H100 (set ``vllm-gpustack-moe`` of
``src/anchorgpu/planner/speed/data/measured_runs.json``: gpustack/gpustack docs/performance-lab/gpt-oss-20b,
gpt-oss-120b, glm-4.5-air and qwen3-235b-a22b, pages a100.md and h100.md, each row naming its page's commit) are held
out, never fitted, and give a MoE plan on an A100 80 GB or an H100 the evidence of its own GPU's MoE serving runs.
"""

from __future__ import annotations

import re

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload, plan
from anchorgpu.planner.speed.calibrate import SETS, serving_kind, set_of
from anchorgpu.planner.speed.calibration import read_calibration_doc
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import load_runs, predict

ROWS = [run for run in load_runs() if run.row.get("set") == "vllm-gpustack-moe"]
MODELS = {"gpt-oss-20b", "gpt-oss-120b", "glm-4.5-air", "qwen3-235b-a22b"}


def test_the_set_is_registered_and_its_rows_are_there() -> None:
    assert "vllm-gpustack-moe" in SETS
    assert len(ROWS) == 32
    assert {set_of(run) for run in ROWS} == {"vllm-gpustack-moe"}
    assert {run.row["model"]["registry"] for run in ROWS} == MODELS
    assert {run.row["gpu"] for run in ROWS} == {"a100-80gb-sxm", "h100-sxm"}
    assert all(run.id.startswith("VGM-") for run in ROWS)


def test_every_row_is_held_out_moe_serving_with_the_engines_defaults() -> None:
    for run in ROWS:
        r = run.row
        assert run.role == "holdout" and run.phase == "serve" and serving_kind(run) == "moe", run.id
        assert run.value > 0 and r["pp"] == 1 and r["gpus"] == r["tp"], run.id
        assert r["weights"] == ("mxfp4" if r["model"]["registry"].startswith("gpt-oss") else "bf16"), run.id
        assert r["kv_cache"] == "bf16" and r["gpu_memory_utilization"] == 0.9, run.id
        # vLLM keeps its small defaults on an A100 of any size (arg_utils: the device name check), large on an H100
        small = r["gpu"].startswith("a100")
        assert (r["max_num_batched_tokens"], r["max_num_seqs"]) == ((2048, 256) if small else (8192, 1024)), run.id
        if run.metric == "tpot_s":  # the one latency row: a fixed small number of requests in flight
            assert r["concurrency"] == 4, run.id
        else:  # every request sent at once, ShareGPT's too (since stop 59): planned as a burst
            assert run.metric == "burst_output_tokens_per_s", run.id
            assert "concurrency" not in r and r["burst_requests"] >= 100, run.id


def test_every_row_names_its_source_page_and_commit() -> None:
    for run in ROWS:
        page = re.match(r"gpustack/gpustack docs/performance-lab/([a-z0-9.-]+)/(a100|h100)\.md \(commit [0-9a-f]{40}\)",
                        run.source)
        assert page, run.id
        assert page.group(2) == run.row["gpu"][:4], run.id
        assert re.search(r"vLLM v0\.1[01]\.\d", run.note) and "held out" in run.note, run.id


def test_the_fit_report_lists_them_as_held_out() -> None:
    """``calibrate --write`` reports each row's error as held out (the fit takes only ``fit`` rows)."""
    report = {row["id"]: row for row in read_calibration_doc()["fit_report"]}
    for run in ROWS:
        assert report[run.id]["role"] == "holdout", run.id
        assert report[run.id]["predicted"] == pytest.approx(predict(run), rel=1e-4, abs=1e-6), run.id


@pytest.mark.parametrize(("model", "gpu"), [("gpt-oss-120b", "a100-80gb-sxm"), ("qwen3-235b-a22b", "a100-80gb-sxm"),
                                            ("gpt-oss-20b", "h100-sxm"), ("glm-4.5-air", "h100-sxm")])
def test_a_moe_plan_on_an_a100_80gb_or_h100_carries_its_gpus_moe_evidence(model: str, gpu: str) -> None:
    w = Workload(task="inference", prompt_tokens=1000, output_tokens=1000, concurrency=64)
    perf = plan_performance(plan(load_model(model), w, gpu=get_gpu(gpu)))
    e = perf["evidence"]
    mine = [run for run in ROWS if run.row["gpu"] == gpu]
    assert e["gpu"] == gpu and e["kind"] == "serve-moe"
    assert e["held_out"] >= len(mine) > 0 and e["basis"] == "held-out"
    assert e["summary"] in perf["assumptions"] and not e["summary"].startswith("no measured")
