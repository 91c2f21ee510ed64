"""Over the concurrency ladder each layout is also swept at its own saturation (planner.sweep_saturation): the most
sequences ``plan --concurrency N`` lets it hold, at most its replicas x its engine's sequence cap. Before, the ladder's
powers of two priced a layout between two rungs at the lower one: Mixtral-8x22B as TP 8 x DP 3 on 24 H200 (three vLLM
engines of 1,024 sequences each) runs 3,072 at once (`plan mixtral-8x22b --gpu h200 --gpus 24`: at saturation 20,600
tok/s), where the ladder had 2,048 and 4,096; `recommend qwen3-30b-a3b --gpu h100` gave 3 x 1 H100 (DP 3) 128 users
and 4,677 tok/s where plan's saturation gave 7,358."""

from __future__ import annotations

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from anchorgpu.recommend.eligibility import engine_cap

SHAPES = shapes_from_catalog(load_catalog().offerings, max_servers=3)
LADDER = SweepSpec(workload=Workload(task="inference"))


def _best(result, **layout: int) -> dict:  # type: ignore[no-untyped-def,type-arg]
    """The row of the layout recommend would show: the most tokens/s in all of those that fit with no user queued
    past the engines' sequence caps (recommend.service)."""
    c = result.columns
    cap = engine_cap(Workload(task="inference"), result.shapes[0].gpu)  # vLLM's, as the sweeps below run
    at = np.asarray(c["fits"], dtype=bool) & (np.asarray(c["concurrency"]) <= np.asarray(c["dp"]) * cap)
    for name, value in layout.items():
        at &= np.asarray(c[name]) == value
    total = np.where(at, np.nan_to_num(np.asarray(c["decode_tokens_per_s_total"], dtype=np.float64)), -1.0)
    return result.row(int(np.argmax(total)))


def _plan(model, row: dict, gpu):  # type: ignore[no-untyped-def,type-arg]
    return plan(model, Workload(task="inference", concurrency=row["concurrency"]),
                precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], ep=row["ep"]), gpu=gpu,
                suggest=False, choose_layout=False)


@pytest.mark.parametrize(("model_name", "shape_id", "layout"), [
    # three vLLM engines of max_num_seqs 1,024 (its cap binds: plan's saturation is 3,072)
    ("mixtral-8x22b-v0.1", "h200-8x-bm", dict(servers=3, tp=8, pp=1, dp=3, ep=1)),
    # three replicas of one H100 each, and one: their KV caches bind
    ("qwen3-30b-a3b", "h100-sxm-1x-vm", dict(servers=3, tp=1, pp=1, dp=3, ep=1)),
    ("llama-3.1-70b", "h100-sxm-8x-bm", dict(servers=1, tp=2, pp=2, dp=2, ep=1)),
])
def test_a_layouts_best_row_runs_the_most_sequences_plan_lets_it_hold(model_name: str, shape_id: str,
                                                                      layout: dict[str, int]) -> None:
    model = load_model(model_name)
    shapes = tuple(s for s in SHAPES if s.id == shape_id)
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="inference"), weights=("bf16",)))
    row = _best(result, **layout)
    gpu = shapes[0].gpu
    p = _plan(model, row, gpu)
    assert p.fits
    perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
    # the row is plan --concurrency N's (the sweep and plan share their formulas)
    assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-6)
    # one more sequence a replica does not fit, or the engines' caps are reached
    cap = perf["saturation_concurrency"] if row["concurrency"] == perf["saturation_concurrency"] else None
    if cap is None:
        more = _plan(model, {**row, "concurrency": row["concurrency"] + row["dp"]}, gpu)
        assert not more.fits
    # where the engine's cap binds, the row is plan's own saturation figure; where the KV cache binds, vLLM's
    # saturation holds its sequences at their average length (prompt + half the output), which plan --concurrency N
    # does not let fit at N, so the row is at most that figure and within the ratio of the two lengths
    top = perf["max_output_tokens_per_s"]
    if cap is not None:
        assert row["decode_tokens_per_s_total"] >= top * (1 - 1e-6)
    else:
        assert top * (result.prompt_tokens + result.output_tokens // 2) / (
            result.prompt_tokens + result.output_tokens) <= row["decode_tokens_per_s_total"] <= top * (1 + 1e-6)


def test_the_three_replica_mixtral_row_is_plans_saturation_figure() -> None:
    """plan mixtral-8x22b --gpu h200 --gpus 24 chooses TP 8 x DP 3: at saturation 3,072 sequences; the sweep's row of
    that layout runs them, at plan's figure."""
    model = load_model("mixtral-8x22b-v0.1")
    shapes = tuple(s for s in SHAPES if s.id == "h200-8x-bm")
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="inference"), weights=("bf16",)))
    row = _best(result, servers=3, tp=8, pp=1, dp=3, ep=1)
    chosen = plan(model, Workload(task="inference"), precision=PrecisionPlan(weights="bf16", kv_cache="bf16"),
                  layout=Layout(gpus=24, tp=8, pp=1, dp=3), gpu=shapes[0].gpu, suggest=False, choose_layout=False)
    perf = plan_performance(chosen)
    assert perf["saturation_concurrency"] == row["concurrency"] == 3 * 1024
    # at least plan's figure (20,600 tok/s); plan at its default concurrency of 1 sizes that one sequence at the
    # model's window, and its figure at saturation comes out 2.7% below plan --concurrency 3072's (21,172), the row's
    assert row["decode_tokens_per_s_total"] >= perf["max_output_tokens_per_s"] * (1 - 1e-6)
    at_row = plan_performance(_plan(model, row, shapes[0].gpu))
    assert row["decode_tokens_per_s_total"] == pytest.approx(at_row["max_output_tokens_per_s"], rel=1e-6)


def test_the_swept_line_names_the_saturation_rung() -> None:
    model = load_model("llama-3.1-8b")
    result = sweep(model, tuple(s for s in SHAPES if s.id == "h100-sxm-1x-vm"), LADDER)
    line = next(a for a in result.assumptions if a.startswith("Swept"))
    assert "each layout at its own saturation" in line
    assert ("(the most sequences of 1,280 tokens each, the ladder's top's length, that plan --concurrency N lets it "
            "hold, at most its engine's sequence cap x its replicas)") in line
    named = sweep(model, tuple(s for s in SHAPES if s.id == "h100-sxm-1x-vm"),
                  SweepSpec(workload=Workload(task="inference", concurrency=8)))
    assert not any("own saturation" in a for a in named.assumptions)
