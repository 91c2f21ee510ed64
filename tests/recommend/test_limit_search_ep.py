"""The per-user limit search (sweep_serving_limits.layout_limit_rungs) times each layout with its own expert
parallelism. A mixture of experts is swept with every single-stage layout twice under one (shape, TP, PP): its routed
experts split by TP (EP 1) and whole over the TP group (EP = TP, sweep_grid.layout_grid), and a TensorRT-LLM tick of the
latter charges 1 / EP of the routed rows (speed.step_constants.routed_rows_per_token_share). Keyed on (shape, TP, PP)
alone, the search timed an EP = TP layout with its EP 1 twin's ticks (too slow, its first token ~20% late at one user):
``recommend qwen3-235b-a22b --engine trtllm --prompt 1000 --output-tokens 1000 --min-tokens-per-s-per-user 30
--max-ttft-s 2`` listed 8 x H200 TP 8 EP 8 at 131 users where plan() of that layout keeps both limits up to 144 (30.09
tok/s; 145: 29.99), DeepSeek-R1 (FP8 blocks) at 77 where plan() keeps them up to 80 (30.12; 81: 29.99)
(stop59_epgroup.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import anchorgpu.planner.sweep_serving as sweep_serving
import anchorgpu.planner.sweep_serving_limits as sweep_serving_limits
from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.batching import serving_estimate
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_floor import UserLimits
from anchorgpu.planner.sweep_grid import Layouts, layout_grid, tick_groups, tick_pairs
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog

SHAPES = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.id == "h200-8x-bm")
PROMPT, OUTPUT = 1000, 1000  # the request of the recommend calls above
LIMITS = UserLimits(30.0, 2.0)


def _limit_search(model_name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[Any, ...], np.ndarray]:
    """The arguments and answer of the sweep's one limit search (TensorRT-LLM, 1,000 / 1,000 tokens, ``LIMITS``)."""
    seen: list[tuple[tuple[Any, ...], np.ndarray]] = []
    searched = sweep_serving.layout_limit_rungs

    def keep(*args: Any, **kwargs: Any) -> np.ndarray:
        rungs = searched(*args, **kwargs)
        seen.append((args, rungs))
        return rungs

    monkeypatch.setattr(sweep_serving, "layout_limit_rungs", keep)
    spec = SweepSpec(workload=Workload(task="inference", engine="trtllm"), prompt_tokens=PROMPT, output_tokens=OUTPUT,
                     min_tokens_per_s_per_user=LIMITS.min_tokens_per_s_per_user, max_ttft_s=LIMITS.max_ttft_s)
    sweep(load_model(model_name), SHAPES, spec)
    (found,) = seen
    return found


def _twins(lay: Layouts) -> list[tuple[int, int]]:
    """Each layout with the experts whole over TP (1 < EP = TP) and the EP 1 layout of its (shape, servers, TP, PP)."""
    plain = {(s, n, t, p): i for i, (s, n, t, p, e) in enumerate(zip(
        lay.shape.tolist(), lay.servers.tolist(), lay.tp.tolist(), lay.pp.tolist(), lay.ep.tolist(), strict=True))
        if e == 1}
    return [(i, plain[key]) for i, key in enumerate(zip(lay.shape.tolist(), lay.servers.tolist(), lay.tp.tolist(),
                                                        lay.pp.tolist(), strict=True))
            if 1 < lay.ep[i] == lay.tp[i] and key in plain]


def test_the_limit_searchs_figures_are_each_eps_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Qwen3-30B-A3B on TensorRT-LLM: the search's tokens/s a user and first token at 1, 4 and 16 users a replica are
    the sweep's rows' (serving_columns, which test_sweep_agrees_with_plan holds to plan) for every layout, EP 1 and
    EP = TP alike; EP = TP layouts are there beside their EP 1 twins (else this would test nothing)."""
    args, _ = _limit_search("qwen3-30b-a3b", monkeypatch)
    model, shapes, spec, lay, weights, kvs, context, prompt, output, media, cross = args[:11]
    assert len(_twins(lay)) >= 2  # TP 2, 4 and 8 on 8 x H200 (serving_layouts.ep_inside_tp_sizes)
    figures = sweep_serving_limits.user_figures(model, shapes, spec, lay, weights, kvs, context, prompt, output, media,
                                          cross, ttft=True)
    rows = len(weights) * len(kvs)
    for per_replica in (1, 4, 16):
        speed, first = figures(np.broadcast_to(per_replica * lay.dp, (1, rows, len(lay))).copy(), None)
        assert first is not None
        for dp in np.unique(lay.dp).tolist():
            at = np.flatnonzero(lay.dp == dp)
            cols = sweep_serving.serving_columns(model, shapes, spec, lay, weights, kvs, (per_replica * dp,),
                                                 (context,), prompt, output, None, media, cross)
            per_user = cols["decode_tokens_per_s_per_user"][at, :, :, 0].reshape(at.size, rows).T
            prefill = cols["prefill_s"][at, :, :, 0].reshape(at.size, rows).T
            ok = np.isfinite(per_user)
            assert ok.any()
            assert np.allclose(speed[0][:, at][ok], per_user[ok], rtol=1e-9, atol=0)
            assert np.allclose(first[0][:, at][ok], prefill[ok], rtol=1e-9, atol=0)


def _met_by_plan(model: ModelSpec, shape: Any, context: int, weights: str, kv: str, lay: Layouts, j: int,
                 concurrency: int) -> bool:
    """Whether plan() of layout ``j`` (its own EP) at ``concurrency`` keeps ``LIMITS`` (the scalar serving model)."""
    tp, ep, dp = int(lay.tp[j]), int(lay.ep[j]), int(lay.dp[j])
    p = plan(model, Workload(task="inference", context_tokens=context, concurrency=concurrency, engine="trtllm"),
             precision=PrecisionPlan(weights=weights, kv_cache=kv),
             layout=Layout(gpus=tp * dp, tp=tp, pp=1, dp=dp, ep=ep if ep > 1 else None), gpu=shape.gpu,
             suggest=False, choose_layout=False)
    setup = replace(serving_setup(p, prompt_tokens=PROMPT, output_tokens=OUTPUT), gpus_per_server=shape.gpus_per_server)
    est = serving_estimate(model, shape.gpu, setup, prompt_tokens=PROMPT, output_tokens=OUTPUT,
                           concurrency=concurrency, saturation_concurrency=concurrency)
    return bool(LIMITS.met(np.array(1.0 / est.tpot_s), np.array(est.ttft_s)))


@pytest.mark.parametrize("model_name", ["qwen3-235b-a22b", "deepseek-r1"])
def test_each_eps_limit_rung_is_plans_most_users_within_the_limits(model_name: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """On 8 x H200, at every precision swept, each EP = TP layout's rung and its EP 1 twin's: plan() of that layout
    (its own EP) keeps both limits there and misses one with a sequence a replica more, below the saturation rung
    (the search's answer, sweep_floor.limit_sequences); or, where plan() misses them at the rung, the rung is one
    sequence a replica's."""
    args, rungs = _limit_search(model_name, monkeypatch)
    model, shapes, lay, weights, kvs, context, saturation = (*args[:2], *args[3:7], args[12])
    precisions = [(w, kv) for w in weights for kv in kvs]
    checked = 0
    for pair in _twins(lay):
        for j in pair:
            for r, (w, kv) in enumerate(precisions):
                rung, top, dp = int(rungs[r, j]), max(int(saturation[r, j]), 2), int(lay.dp[j])
                shape = shapes[lay.shape[j]]
                if not _met_by_plan(model, shape, context, w, kv, lay, j, rung):
                    assert rung == max(dp, 2)  # even one sequence a replica misses them
                elif 2 < rung < top:
                    assert not _met_by_plan(model, shape, context, w, kv, lay, j, rung + dp)
                    checked += 1
    assert checked  # rungs below saturation held to plan() on both sides


def test_the_limit_search_and_the_sweeps_pairs_group_alike() -> None:
    """One grouping for the sweep's tick pairs and its limit search (sweep_grid.tick_groups), EP in its key: a mixture
    of experts' EP 1 and EP = TP layouts of one (shape, TP, PP) are two groups in both."""
    lay = layout_grid(load_model("qwen3-30b-a3b"), SHAPES, training=False, max_pp=8, zero_stages=(0,))
    firsts, group = sweep_serving_limits._tick_groups(lay)
    assert np.array_equal(firsts, tick_groups(lay)[0]) and np.array_equal(group, tick_groups(lay)[1])
    keys = list(zip(lay.shape.tolist(), lay.tp.tolist(), lay.pp.tolist(), lay.ep.tolist(), strict=True))
    assert len({keys[f] for f in firsts.tolist()}) == firsts.size == len(set(keys))
    assert len(set(keys)) > len({k[:3] for k in keys})  # EP = TP beside EP 1 under one (shape, TP, PP)
    assert all(keys[i] == keys[firsts[g]] for i, g in enumerate(group.tolist()))
    conc = np.array([[1], [2], [4]])
    assert np.array_equal(tick_pairs(lay, conc, -(-conc // lay.dp)).groups, firsts)
