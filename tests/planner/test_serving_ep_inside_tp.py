"""The serving chooser also tries a mixture of experts with its routed experts whole over each replica's TP group
(EP inside TP: vLLM ``--tensor-parallel-size 8 --enable-expert-parallel``, TensorRT-LLM ``--tp_size 8 --ep_size 8``,
SGLang ``--tp-size 8 --ep-size 8``), after the usual layouts, and recommend's sweep times the same layouts
(issue 11, "layouts chosen for the user")."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.serving_layouts import _serving_layouts, ep_inside_tp_sizes
from anchorgpu.planner.speed.serving_ranking import split_words
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recipes import build_recipe
from anchorgpu.recommend import shapes_from_catalog

QWEN = "qwen3-235b-a22b"


def _plan(engine: str, **layout: int):  # type: ignore[no-untyped-def]
    return plan(load_model(QWEN), Workload(task="inference", concurrency=128, engine=engine),
                layout=Layout(gpus=8, **layout), gpu=get_gpu("h200"))


def _speed(p) -> float:  # type: ignore[no-untyped-def]
    return float(plan_performance(p)["output_tokens_per_s"])


def test_the_chooser_tries_the_experts_whole_over_each_tp_group_after_the_usual_layouts() -> None:
    model = load_model(QWEN)
    layouts = [(lay.tp, lay.pp, lay.dp, lay.ep or 1) for lay in _serving_layouts(model, 8, "trtllm")]
    inside = [lay for lay in layouts if lay[3] > 1 and lay[3] == lay[0]]
    assert inside == [(2, 1, 4, 2), (4, 1, 2, 4), (8, 1, 1, 8)]
    # after the TP-sliced layouts and attention data parallelism: the planner's first is still TP 1 x DP 8's replicas
    assert layouts[0] == (1, 1, 8, 1) and layouts.index(inside[0]) > layouts.index((1, 1, 8, 8))
    assert ep_inside_tp_sizes(load_model("llama-3.1-70b"), 8) == ()  # a dense model: none


def test_qwen3_235b_on_8_h200_with_tensorrt_llm_is_served_as_tp_8_with_ep_8() -> None:
    """The issue's example at 128 users (at 256, since stop 52's refits, attention data parallelism and TP 8 x EP 8 come
    within 0.3%): TP 8 x EP 8 plans 2,962 output tok/s against TP 8's 2,748 and attention data parallelism's 2,755
    (TensorRT-LLM's per-routed-row MoE cost is paid on 1/8 of the rows instead of all of them), so the chooser picks
    it, the fastest of the layouts more than the EP-inside-TP layout margin (4.0%) faster than TP 8."""
    chosen, given = _plan("trtllm"), _plan("trtllm", tp=8, ep=8)
    lay = chosen.layout
    assert (lay.tp, lay.pp, lay.dp, lay.ep) == (8, 1, 1, 8)
    assert _speed(chosen) == pytest.approx(_speed(given), rel=1e-9)
    assert _speed(chosen) > _speed(_plan("trtllm", tp=1, dp=8, ep=8))
    assert any("Layout chosen on the 8 GPUs asked: TP 8, PP 1, EP 8: the attention and dense layers split by TP 8, "
               "the routed experts split whole over the 8 GPUs (EP inside TP)" in a for a in chosen.assumptions)


def test_vllm_times_the_experts_whole_over_tp_as_sliced_so_its_choice_stays() -> None:
    """vLLM's EP inside TP reads the same bytes and runs the same products and all-reduces in this model (no
    per-routed-row cost): predicted as fast as TP 8, never past the margin, so the choice is what it was."""
    assert _speed(_plan("vllm", tp=8, ep=8)) == pytest.approx(_speed(_plan("vllm", tp=8)), rel=1e-12)
    lay = _plan("vllm").layout
    assert not (lay.ep > 1 and lay.ep == lay.tp)


def test_the_words_say_where_the_experts_are() -> None:
    assert split_words(Layout(gpus=8, tp=4, pp=1, dp=2, ep=4)) == (
        "TP 4, PP 1, DP 2, EP 4: 2 replicas, each the attention and dense layers split by TP 4, the routed experts "
        "split whole over its 4 GPUs (EP inside TP)")


def test_vllm_runs_replicas_with_ep_inside_tp_as_one_engine_each() -> None:
    """vLLM's ``--data-parallel-size`` with ``--enable-expert-parallel`` makes EP TP x DP (FusedMoEParallelConfig),
    so TP 4 x DP 2 with EP 4 is two engines of ``--tensor-parallel-size 4 --enable-expert-parallel``."""
    p = plan(load_model("qwen3-30b-a3b"), Workload(task="inference", concurrency=256),
             layout=Layout(gpus=8, tp=4, dp=2, ep=4), gpu=get_gpu("h100"))
    recipe = build_recipe(p, "vllm")
    assert "--enable-expert-parallel" in recipe.command and "--data-parallel-size" not in recipe.command
    assert any(a.startswith("2 replicas of TP 4 with the experts over EP 4 each") for a in recipe.assumptions)


def test_recommends_sweep_times_tp_8_with_ep_8_as_plan_does() -> None:
    """The sweep's row for one 8 x H200 server is the chooser's layout, at plan's figure; a tie (A100: no
    per-routed-row cost) keeps the TP-sliced layout, listed first."""
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1)
                   if s.id in ("h200-8x-bm", "a100-80gb-sxm-8x-bm"))
    spec = SweepSpec(workload=Workload(task="inference", concurrency=128, engine="trtllm"), weights=("bf16",),
                     kv_caches=("bf16",))
    result = sweep(load_model(QWEN), shapes, spec)
    rows = [result.row(i) for i in range(result.evaluated)]
    best = {}
    for r in rows:
        if r["fits"] and (r["shape"] not in best or r["decode_tokens_per_s_total"] > best[r["shape"]][
                "decode_tokens_per_s_total"]):
            best[r["shape"]] = r
    h200 = best["h200-8x-bm"]
    assert (h200["tp"], h200["pp"], h200["dp"], h200["ep"]) == (8, 1, 1, 8)
    assert h200["decode_tokens_per_s_total"] == pytest.approx(_speed(_plan("trtllm", tp=8, ep=8)), rel=1e-9)
    a100 = best["a100-80gb-sxm-8x-bm"]
    assert a100["ep"] == 1 or a100["ep"] > a100["tp"]
    assert all(r["pp"] == 1 for r in rows if 1 < r["ep"] == r["tp"])


def test_the_readme_journey_states_the_plans_figures() -> None:
    """README's chooser journey quotes the three layouts' speeds; they are the plans' (rounded as the CLI shows)."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
    figures = [f"{_speed(p):,.0f}" for p in (_plan("trtllm"), _plan("trtllm", tp=1, dp=8, ep=8),
                                             _plan("trtllm", tp=8))]
    assert (f"`plan qwen3-235b-a22b --gpu h200 --gpus 8 --concurrency 128 --engine trtllm` takes TP 8 x EP 8 "
            f"({figures[0]} tok/s against attention data parallelism's {figures[1]} and TP 8's {figures[2]}") in readme
    assert f"puts one 8 x H200 server at TP 8 x EP 8, {figures[0]} tok/s" in readme
