"""How the engine admits requests sets the saturation concurrency: vLLM fills pages as tokens arrive
(sequences at their average cached length), TensorRT-LLM's default GUARANTEED_NO_EVICT reserves prompt +
output up front (TensorRT-LLM docs, performance tuning guide, "Useful Runtime Options")."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import load_runs


def _plan(prompt: int, output: int) -> object:
    return plan(load_model("llama-3.1-405b"), Workload(prompt_tokens=prompt, output_tokens=output, concurrency=1),
                precision=PrecisionPlan(weights="fp8", kv_cache="fp8"), layout=Layout(gpus=8, tp=8, pp=1, dp=1),
                gpu=get_gpu("h100"), suggest=False, choose_layout=False)


def test_reserving_prompt_plus_output_holds_fewer_sequences_than_filling_pages() -> None:
    p = _plan(128, 2048)  # S21's request: the average cached length is 128 + 1,024, the reservation 2,176
    average = plan_performance(p)
    full = plan_performance(p, kv_reservation="full")
    assert full["saturation_concurrency"] < average["saturation_concurrency"]
    # no engine cap in between: the counts go as the tokens each sequence takes
    assert full["saturation_concurrency"] / average["saturation_concurrency"] == pytest.approx(1152 / 2176, rel=0.02)
    assert full["max_output_tokens_per_s"] < average["max_output_tokens_per_s"]
    assert any("reserved up front" in a for a in full["assumptions"])
    assert not any("reserved up front" in a for a in average["assumptions"])


def test_requested_concurrency_figures_do_not_depend_on_the_reservation() -> None:
    p = _plan(1000, 1000)
    assert plan_performance(p)["tpot_s"] == plan_performance(p, kv_reservation="full")["tpot_s"]


def test_the_tensorrt_llm_rows_say_they_reserve_and_the_vllm_rows_do_not() -> None:
    rows = {r.id: r.row for r in load_runs()}
    assert all(rows[f"S{i}"].get("kv_reservation") == "full" for i in range(14, 22))
    assert all("kv_reservation" not in rows[i] for i in ("RS6", "RS7", "RS8", "RS9", "RS10"))
