"""Attention data parallelism on several servers: the one-server engine (``k / tp`` attention replicas, the routed
experts over the server's ``k`` GPUs) run on each of ``n`` servers, ``n`` independent engines with the users split
between them, written ``--tp T --dp n*k/T --ep k``. Before, the sweep tried attention DP on one server only, so
DeepSeek-V3 on 2 x 8 H200 was offered as TP 2 x PP 4 x DP 2 at 10,087 tok/s and $1.631 a million tokens where one
server gave 11,495 at $0.7154 (recommend deepseek-v3 --gpu h200, before this change); two copies of the one-server
engine serve twice its users at its pace. Over the ladder such a row runs ``n`` times each concurrency swept, its
figures the one-server row's (sweep_attention_dp._scaled_columns); these tests hold them to ``plan`` of the same
layout, which plans it whole."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, shapes_from_catalog

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()
V3 = load_model("deepseek-v3")
H200 = tuple(s for s in shapes_from_catalog(CATALOG.offerings) if s.id == "h200-8x-bm")
LADDER = SweepSpec(workload=Workload(task="inference"))


@pytest.fixture(scope="module")
def ladder():
    return sweep(V3, H200, LADDER)


def _plan_row(row: dict, engine: str = "vllm"):  # type: ignore[type-arg]
    return plan(V3, Workload(task="inference", concurrency=row["concurrency"], engine=engine),
                precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=1, dp=row["dp"], ep=row["ep"]), gpu=H200[0].gpu,
                suggest=False, choose_layout=False)


def test_the_ladder_runs_the_server_engine_on_each_server_at_n_times_its_users(ladder) -> None:
    c = ladder.columns
    servers, ep, tp = (np.asarray(c[name]) for name in ("servers", "ep", "tp"))
    several = np.flatnonzero((ep > tp) & (servers > 1))
    assert set(servers[several].tolist()) == {2, 3, 4} and set(ep[several].tolist()) == {8}
    checked = 0
    for i in several.tolist():
        row = ladder.row(i)
        assert row["gpus"] == 8 * row["servers"] == row["tp"] * row["dp"]
        if row["per_gpu_total_bytes"] == math.inf:  # n sequences on n servers: plan sizes them at the request;
            # or a layout's saturation at one precision, left out at the others (sweep_attention_dp._saturation_plan)
            rungs = len(ladder.concurrency_contexts)  # then one saturation entry per (weights, KV dtype)
            entry = i % (rungs + len(ladder.weights) * len(ladder.kv_caches))
            assert not row["fits"]
            assert row["concurrency"] == row["servers"] or entry >= rungs
            continue
        assert row["concurrency"] % row["servers"] == 0
        p = _plan_row(row)
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes and row["fits"] == p.fits
        assert row["kv_cache_bytes"] == p.per_gpu.kv_cache_bytes and row["budget_bytes"] == p.budget_bytes
        if p.fits:
            perf = plan_performance(p, prompt_tokens=ladder.prompt_tokens, output_tokens=ladder.output_tokens)
            assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-9)
            assert row["decode_tokens_per_s_per_user"] == pytest.approx(perf["decode_tokens_per_s_per_user"],
                                                                        rel=1e-9)
            assert row["prefill_s"] == pytest.approx(perf["ttft_s"], rel=1e-9)
            checked += 1
    assert checked >= 30


def test_at_a_named_concurrency_each_server_count_is_planned_whole() -> None:
    spec = SweepSpec(workload=Workload(task="inference", concurrency=256, engine="sglang"))
    result = sweep(V3, H200, spec)
    c = result.columns
    several = np.flatnonzero((np.asarray(c["ep"]) > np.asarray(c["tp"])) & (np.asarray(c["servers"]) > 1))
    assert several.size
    for i in several.tolist():
        row = result.row(i)
        assert row["concurrency"] == 256
        p = _plan_row(row, "sglang")
        assert row["per_gpu_total_bytes"] == p.per_gpu.total_bytes and row["fits"] == p.fits
        if p.fits:
            perf = plan_performance(p, prompt_tokens=result.prompt_tokens, output_tokens=result.output_tokens)
            assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-9)


def test_recommend_offers_n_servers_at_about_n_times_one_servers_speed_and_its_price() -> None:
    """recommend deepseek-v3 --gpu h200 (the ladder): 1 x 8 runs attention DP at 11,495 tok/s for 2,048 users; 2, 3
    and 4 servers now run that engine on each, n times the users at the same pace and cost a million tokens (before:
    2 x 8 at 10,087, 3 x 8 at 15,697, 4 x 8 at 20,174 tok/s, each at about twice the dollars a million tokens)."""
    rec = recommend(V3, LADDER, CATALOG, "1month", NOW, offerings=[CATALOG.offering("h200-8x-bm")], top=4)
    by_servers = {r.servers: r for r in rec.results}
    one = by_servers[1]
    assert one.config["ep"] == 8 and one.config["ep"] > one.config["tp"]
    for n in (2, 3, 4):
        row = by_servers[n]
        assert row.config["ep"] == 8 and row.config["tp"] * row.config["dp"] == 8 * n
        assert row.config["decode_tokens_per_s_total"] >= 1.8 * one.config["decode_tokens_per_s_total"] * n / 2
        assert float(row.usd_per_million_output_tokens) <= float(one.usd_per_million_output_tokens) * 1.05
        assert {"attention_dp_replicas", "ep_requires_engine_support"} <= set(row.codes)
