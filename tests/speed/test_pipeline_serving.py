"""Serving with pipeline stages: the stages work on different micro-batches at once.

TensorRT-LLM's perf-overview (commit 00f3768, the Llama 3.3 70B table, RTX 6000 Pro Blackwell Server Edition, FP4,
1000/1000) measured 1,787 output tok/s on 1 GPU, 3,707 with PP2, 5,961 with PP4 and 8,166 with PP8: a full engine
gains from every stage. One user gains nothing: a token still passes every stage in turn.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from sweep_rows import plan_of_row


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


def _oss_ladder(concurrency: int) -> dict:
    """gpt-oss-120b (INT8) over 16 RTX 5090s, TP8 x PP2, 32,000-token prompts: at 64 users and up the steps' prompt
    tokens fill more than one chunk a cycle but not one per micro-batch (speed_invariants.py found the drop)."""
    p = plan(load_model("gpt-oss-120b"), Workload(task="inference", prompt_tokens=32000, output_tokens=1000,
                                                  concurrency=concurrency),
             precision=PrecisionPlan(weights="int8"), layout=Layout(gpus=16, tp=8, pp=2),
             gpu=get_gpu("rtx-5090"), suggest=False, choose_layout=False)
    assert p.fits
    return plan_performance(p)


def test_more_users_never_lower_the_output_over_pipeline_stages() -> None:
    """Between one prompt chunk a cycle and one in every micro-batch, whole chunks ride in that many micro-batches
    (each has its own token budget), not a slice in each: spreading them shrank every product (a MoE's expert rows
    most), and 64 users came out slower in total than 56 (674 against 841 tok/s)."""
    ladder = [_oss_ladder(c) for c in (48, 56, 64, 80, 96, 128)]
    rates = [d["output_tokens_per_s"] for d in ladder]
    tpots = [d["tpot_s"] for d in ladder]
    assert rates == sorted(rates) and tpots == sorted(tpots)


def test_the_sweep_carries_whole_chunks_over_stages_as_the_planner_does() -> None:
    """The vectorised sweep's pipelined rows (gpt-oss-120b over L40S servers, 128 users of 32,000-token prompts)
    equal the scalar estimate's, some of them between one chunk a cycle and one a micro-batch."""
    from dataclasses import replace

    from anchorgpu.catalog import load_catalog
    from anchorgpu.planner.speed.batching import prefill_chunk_share, serving_estimate
    from anchorgpu.planner.speed.estimate import serving_setup
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    model = load_model("gpt-oss-120b")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=2) if s.gpu.name == "l40s")
    assert shapes
    w = Workload(task="inference", prompt_tokens=32000, output_tokens=1000, concurrency=128)
    result = sweep(model, shapes, SweepSpec(workload=w, weights=("int8",), prompt_tokens=32000, output_tokens=1000))
    assert (result.prompt_tokens, result.output_tokens) == (32000, 1000)
    between = 0
    for i in range(result.evaluated):
        row = result.row(i)
        if not row["fits"] or row["pp"] < 2:
            continue
        p, shape = plan_of_row(model, w, result, row)
        setup = replace(serving_setup(p, prompt_tokens=32000, output_tokens=1000),
                        gpus_per_server=shape.gpus_per_server)
        est = serving_estimate(model, shape.gpu, setup, prompt_tokens=32000, output_tokens=1000,
                               concurrency=row["concurrency"], saturation_concurrency=row["concurrency"])
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=1e-6)
        per_replica = -(-row["concurrency"] // row["dp"])
        share = prefill_chunk_share(per_replica, 32000, 1000, setup.max_num_batched_tokens)[1]
        between += 1 < share < min(row["pp"], per_replica)
    assert between >= 1
