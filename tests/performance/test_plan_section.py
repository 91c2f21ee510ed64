"""The ``performance`` section of ``anchorgpu plan --json``: predictions, bands, ceilings, breakdowns."""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.cli import main
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan, plan_to_json
from anchorgpu.planner.speed.estimate import attach_performance, plan_performance
from anchorgpu.planner.speed.training import BREAKDOWN_KEYS

SERVING = ("ttft_s", "tpot_s", "output_tokens_per_s", "max_output_tokens_per_s", "decode_tokens_per_s_per_user")
TRAINING = ("train_tokens_per_s", "train_tflops_per_gpu", "train_mfu", "train_time_s", "gpu_hours")


def _plan_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_serving_section_has_every_prediction_with_its_band_and_ceiling(capsys) -> None:
    perf = _plan_json(capsys, "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--context", "8k", "--concurrency",
                      "32", "--prompt", "2048", "--output-tokens", "512")["performance"]
    for key in SERVING:
        assert {key, f"{key}_low", f"{key}_high", f"{key}_ceiling"} <= set(perf), key
        assert perf[f"{key}_low"] <= perf[key] <= perf[f"{key}_high"]
    # a rate never beats its ceiling, a duration never undercuts it
    for key in ("output_tokens_per_s", "max_output_tokens_per_s", "decode_tokens_per_s_per_user"):
        assert perf[key] < perf[f"{key}_ceiling"]
    for key in ("ttft_s", "tpot_s"):
        assert perf[key] > perf[f"{key}_ceiling"]
    assert perf["max_output_tokens_per_s"] > perf["output_tokens_per_s"] > perf["decode_tokens_per_s_per_user"]
    assert any("2,048 prompt + 512 output" in a for a in perf["assumptions"])


def test_training_section_has_breakdown_time_and_gpu_hours(capsys) -> None:
    data = _plan_json(capsys, "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--zero", "1",
                      "--seq", "4096", "--tokens", "1e12")
    perf = data["performance"]
    for key in TRAINING:
        assert {key, f"{key}_low", f"{key}_high", f"{key}_ceiling"} <= set(perf), key
    assert set(perf["step_time_breakdown_s"]) == set(BREAKDOWN_KEYS)
    assert sum(perf["step_time_breakdown_s"].values()) == pytest.approx(perf["step_time_s"])
    # a run is whole optimizer steps (stop 59, planner/run_steps.py): ceil(tokens / global batch) steps of step_time_s
    steps = -(-10**12 // perf["global_batch_tokens"]) if "global_batch_tokens" in perf else None
    if steps is not None:
        assert perf["train_time_s"] == pytest.approx(steps * perf["step_time_s"])
    assert perf["train_time_s"] >= 1e12 / perf["train_tokens_per_s"] * (1 - 1e-9)
    assert perf["train_time_s"] == pytest.approx(1e12 / perf["train_tokens_per_s"], rel=1e-5)  # 1e12 / 4M: 238,419 steps
    assert perf["gpu_hours"] == pytest.approx(perf["train_time_s"] * 64 / 3600)
    assert perf["checkpoint_bytes"] == data["checkpoint_bytes"]
    # MFU as the Llama 3 paper counts it: model FLOPs per GPU over the dense peak
    assert perf["train_mfu"] == pytest.approx(perf["train_tflops_per_gpu"] / 989)


def test_a_bigger_global_batch_shrinks_the_pipeline_bubble() -> None:
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")

    def section(batch: int) -> dict:
        p = plan(model, Workload(task="train", seq_tokens=4096, global_batch_tokens=batch, micro_batch=1,
                                 recompute="full"), layout=Layout(gpus=64, tp=8, pp=8, zero=1, virtual_stages=1),
                 gpu=gpu)
        return plan_performance(p)

    small, big = section(2**20), section(2**24)
    assert big["pipeline_bubble_fraction"] < small["pipeline_bubble_fraction"]
    assert big["train_tokens_per_s"] > small["train_tokens_per_s"]


def test_interleaving_shrinks_the_bubble() -> None:
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    work = Workload(task="train", seq_tokens=4096, global_batch_tokens=2**21, micro_batch=1, recompute="full")
    one, five = (plan_performance(plan(model, work, layout=Layout(gpus=64, tp=8, pp=8, zero=1, virtual_stages=v),
                                       gpu=gpu)) for v in (1, 5))
    assert five["step_time_breakdown_s"]["pp_bubble"] < one["step_time_breakdown_s"]["pp_bubble"] / 4


def test_fp8_weights_on_an_a100_are_timed_at_the_bf16_rate_with_the_registry_warning() -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096), precision=PrecisionPlan(weights="fp8"),
             gpu=get_gpu("a100"))
    section = plan_performance(p)
    assert section["compute_precision"] == "bf16"
    assert "fp8_without_hardware" in {w["code"] for w in section["warnings"]}


def test_more_concurrency_raises_total_and_lowers_per_user_speed() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")

    def section(concurrency: int) -> dict:
        return plan_performance(plan(model, Workload(context_tokens=4096, concurrency=concurrency), gpu=gpu))

    one, many = section(1), section(64)
    assert many["output_tokens_per_s"] > one["output_tokens_per_s"]
    assert many["decode_tokens_per_s_per_user"] < one["decode_tokens_per_s_per_user"]


def test_without_a_gpu_or_when_it_does_not_fit_the_section_says_why_instead_of_guessing() -> None:
    section = plan_performance(plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096)))
    assert "ttft_s" not in section and "GPU" in section["assumptions"][0]
    too_big = plan(load_model("llama-3.1-70b"), Workload(context_tokens=4096), layout=Layout(gpus=1),
                   gpu=get_gpu("h100"))
    assert too_big.fits is False
    section = plan_performance(too_big)
    assert "output_tokens_per_s" not in section and "does not fit" in section["assumptions"][0]


def test_tp_across_servers_is_slower_than_inside_one_and_warned() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    work = Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="full", global_batch_tokens=2**21)
    across = plan_performance(plan(model, work, layout=Layout(gpus=16, tp=16, zero=1), gpu=gpu))
    inside = plan_performance(plan(model, work, layout=Layout(gpus=16, tp=8, dp=2, zero=1), gpu=gpu))
    assert "tp_across_nodes" in {w["code"] for w in across["warnings"]}
    assert across["step_time_breakdown_s"]["tp_comm"] > 3 * inside["step_time_breakdown_s"]["tp_comm"]


def test_user_efficiencies_replace_the_calibrated_ones_and_are_stated() -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096), gpu=get_gpu("h100"))
    data = plan_to_json(attach_performance(p, mbu=0.5))
    default = plan_performance(p)
    assert any("mbu 0.5" in a for a in data["performance"]["assumptions"])
    assert data["performance"]["decode_tokens_per_s_per_user"] < default["decode_tokens_per_s_per_user"]
