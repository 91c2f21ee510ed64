"""The ``performance`` section of ``anchorgpu plan --json`` (planner.performance.plan_performance)."""

from __future__ import annotations

import json

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.cli import main
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.performance import plan_performance

KEYS = {"prefill_s", "decode_tokens_per_s_per_user", "decode_tokens_per_s_total", "train_tokens_per_s",
        "train_time_s", "checkpoint_bytes", "checkpoint_write_s", "assumptions", "warnings", "compute_precision"}


def _plan_json(capsys, *argv: str) -> dict:
    assert main(["plan", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_plan_json_carries_serving_speed_with_the_options_given(capsys) -> None:
    data = _plan_json(capsys, "llama-3.1-70b", "--gpu", "h100", "--gpus", "4", "--context", "8k", "--concurrency",
                      "32", "--prompt", "2048", "--output-tokens", "512", "--mbu", "0.6")
    perf = data["performance"]
    assert KEYS <= set(perf)
    assert perf["prefill_s"] > 0 and perf["decode_tokens_per_s_total"] > perf["decode_tokens_per_s_per_user"] > 0
    assert perf["train_tokens_per_s"] is None
    assert any("mbu 0.6" in a for a in perf["assumptions"])
    assert any("2304 cached tokens" in a for a in perf["assumptions"])  # 2048 + 512/2


def test_plan_json_carries_training_time_and_checkpoint(capsys) -> None:
    data = _plan_json(capsys, "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "64", "--zero", "1",
                      "--seq", "4096", "--tokens", "1e12", "--mfu", "0.4")
    perf = data["performance"]
    assert perf["train_tokens_per_s"] > 0
    assert perf["train_time_s"] == pytest.approx(1e12 / perf["train_tokens_per_s"])
    assert perf["checkpoint_bytes"] == data["checkpoint_bytes"]  # the planner's own checkpoint size
    assert perf["checkpoint_write_s"] > 0
    # DP only: no bubble, no TP traffic; what separates it from --mfu 0.4 is the gradient sync over the
    # network (8 servers) that the last backward pass cannot hide, and it is stated
    assert 0.3 < perf["train_predicted_mfu"] < 0.4
    assert any("gradient sync not hidden" in a for a in perf["assumptions"])


def test_a_bigger_global_batch_hides_more_of_the_gradient_sync() -> None:
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096), layout=Layout(gpus=64, zero=1),
             gpu=get_gpu("h100"))
    small, big = plan_performance(p, global_batch_tokens=2**20), plan_performance(p, global_batch_tokens=2**24)
    assert big["train_tokens_per_s"] > small["train_tokens_per_s"]


def test_fp8_weights_on_an_a100_are_timed_at_the_bf16_rate_with_the_registry_warning() -> None:
    model = load_model("llama-3.1-8b")
    p = plan(model, Workload(context_tokens=4096), precision=PrecisionPlan(weights="fp8"), gpu=get_gpu("a100"))
    section = plan_performance(p)
    assert section["compute_precision"] == "bf16"
    assert "fp8_without_hardware" in {w["code"] for w in section["warnings"]}


def test_more_concurrency_in_a_plan_raises_total_and_lowers_per_user_speed() -> None:
    model = load_model("llama-3.1-8b")
    gpu = get_gpu("h100")

    def section(concurrency: int) -> dict:
        return plan_performance(plan(model, Workload(context_tokens=4096, concurrency=concurrency), gpu=gpu))

    one, many = section(1), section(64)
    assert many["decode_tokens_per_s_total"] > one["decode_tokens_per_s_total"]
    assert many["decode_tokens_per_s_per_user"] < one["decode_tokens_per_s_per_user"]


def test_without_a_gpu_the_section_says_why_instead_of_guessing() -> None:
    section = plan_performance(plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096)))
    assert section["prefill_s"] is None and "GPU" in section["assumptions"][0]


def test_tp_across_servers_is_timed_over_the_network_and_warned() -> None:
    model = load_model("llama-3.1-70b")
    p = plan(model, Workload(context_tokens=4096, concurrency=8), layout=Layout(gpus=16, tp=16), gpu=get_gpu("h100"))
    section = plan_performance(p)
    assert "tp_across_nodes" in {w["code"] for w in section["warnings"]}
    inside = plan_performance(plan(model, Workload(context_tokens=4096, concurrency=8), layout=Layout(gpus=8, tp=8),
                                   gpu=get_gpu("h100")))
    assert section["tp_communication_s_per_step"] > inside["tp_communication_s_per_step"]


def test_attach_performance_puts_the_section_where_plan_to_json_emits_it() -> None:
    from anchorgpu.planner import plan_to_json
    from anchorgpu.planner.performance import attach_performance

    p = plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096), gpu=get_gpu("h100"))
    data = plan_to_json(attach_performance(p, mfu=0.5))
    assert KEYS <= set(data["performance"]) and any("mfu 0.5" in a for a in data["performance"]["assumptions"])
