"""Serving with pipeline stages: the stages work on different micro-batches at once.

TensorRT-LLM's perf-overview (commit 00f3768, the Llama 3.3 70B table, RTX 6000 Pro Blackwell Server Edition, FP4,
1000/1000) measured 1,787 output tok/s on 1 GPU, 3,707 with PP2, 5,961 with PP4 and 8,166 with PP8: a full engine
gains from every stage. One user gains nothing: a token still passes every stage in turn.
"""

from __future__ import annotations

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance


def _perf(pp: int) -> dict:
    p = plan(load_model("llama-3.3-70b"), Workload(prompt_tokens=1000, output_tokens=1000, concurrency=1,
                                                 gpu_memory_utilization=0.95),
             precision=PrecisionPlan(weights="nvfp4", kv_cache="fp8"), layout=Layout(gpus=pp, tp=1, pp=pp, dp=1),
             gpu=get_gpu("rtx-pro-6000"), suggest=False, choose_layout=False)
    assert p.fits
    return plan_performance(p, kv_reservation="full")


def test_a_full_engine_gains_from_every_pipeline_stage() -> None:
    one, two, four = (_perf(pp)["max_output_tokens_per_s"] for pp in (1, 2, 4))
    # measured 3,707 / 1,787 = 2.07x and 5,961 / 1,787 = 3.34x; a model that paid every stage in turn for the
    # whole batch gave 1.08x and 1.11x
    assert 1.6 < two / one < 2.6 and 2.6 < four / one < 4.6


def test_one_user_waits_for_every_stage() -> None:
    one, four = (_perf(pp)["decode_tokens_per_s_per_user"] for pp in (1, 4))
    assert four <= one
