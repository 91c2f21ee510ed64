"""The serving sweep (and so ``recommend``) tries attention data parallelism for a mixture of experts: on one server
of k GPUs, k / tp replicas of the attention and dense layers, each with its own users' KV cache, and the routed
experts over all k (EP k). DeepSeek-R1 for 512 users of 1,000 + 1,000 tokens on one 8 x H200 server: TP 8 does not
fit (its MLA cache is whole on every GPU), TP 4 x PP 2 does and was the only fitting layout the sweep had; attention
data parallelism holds more users and serves them faster, so the same server's dollars per million tokens fall.
TensorRT-LLM's DeepSeek-R1 guide serves it so on 8 H200 (row TRT-DSR1-ADP-H200 of measured_runs.json, from
NVIDIA/TensorRT-LLM docs/source/blogs/Best_perf_practice_on_DeepSeek-R1_in_TensorRT-LLM.md, commit 01c4ece)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recipes.for_results import attach_recipes
from anchorgpu.recommend import recommend, recommendation_to_json, shapes_from_catalog

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CATALOG = load_catalog()
R1 = load_model("deepseek-r1")
SPEC = SweepSpec(workload=Workload(task="inference", concurrency=512), prompt_tokens=1000, output_tokens=1000)
H200 = tuple(s for s in shapes_from_catalog(CATALOG.offerings, max_servers=2) if s.id == "h200-8x-bm")


@pytest.fixture(scope="module")
def h200_sweep():
    return sweep(R1, H200, SPEC)


def test_one_server_gets_attention_dp_layouts_each_planned_whole(h200_sweep) -> None:
    c = h200_sweep.columns
    # (EP wider than TP: the rows with the experts whole over each TP group, EP = TP, are swept in numpy)
    adp = np.flatnonzero((np.asarray(c["ep"]) > np.asarray(c["tp"])) & (np.asarray(c["servers"]) == 1))
    assert adp.size and set(np.asarray(c["tp"])[adp].tolist()) == {1, 2, 4}
    for i in adp.tolist():
        row = h200_sweep.row(i)
        assert (row["gpus"], row["servers"], row["pp"], row["ep"]) == (8, 1, 1, 8)
        p = plan(R1, Workload(task="inference", context_tokens=2000, prompt_tokens=1000, output_tokens=1000,
                              concurrency=512),
                 precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                 layout=Layout(gpus=8, tp=row["tp"], pp=1, dp=row["dp"], ep=8), gpu=H200[0].gpu, choose_layout=False)
        assert row["fits"] == p.fits and row["per_gpu_total_bytes"] == p.per_gpu.total_bytes
        if p.fits:
            perf = plan_performance(p, prompt_tokens=1000, output_tokens=1000)
            assert row["decode_tokens_per_s_total"] == pytest.approx(perf["output_tokens_per_s"], rel=1e-9)
    assert any(a.startswith("Expert parallelism swept as attention data parallelism") for a in h200_sweep.assumptions)


def test_a_dense_model_sweeps_no_expert_parallelism() -> None:
    result = sweep(load_model("llama-3.1-70b"), H200, SweepSpec(workload=Workload(task="inference", concurrency=32,
                                                                                 context_tokens=8192)))
    assert (np.asarray(result.columns["ep"]) == 1).all()


def test_the_server_is_recommended_with_attention_dp_and_cheaper_tokens(h200_sweep) -> None:
    c = h200_sweep.columns
    one_server = np.asarray(c["servers"]) == 1
    fits = np.asarray(c["fits"], dtype=bool) & one_server
    speed = np.asarray(c["decode_tokens_per_s_total"])
    split = fits & (np.asarray(c["ep"]) == 1)
    assert split.any()  # TP 4 x PP 2 fits too
    assert np.nanmax(np.where(fits & ~split, speed, np.nan)) > np.nanmax(np.where(split, speed, np.nan))
    rec = recommend(R1, SPEC, CATALOG, "1month", NOW, offerings=[CATALOG.offering("h200-8x-bm")], top=5)
    best = next(r for r in rec.results if r.servers == 1)
    assert best.config["ep"] == 8 and best.config["tp"] * best.config["dp"] == 8
    assert {"attention_dp_replicas", "ep_requires_engine_support"} <= set(best.codes)  # the engine must run it
    # and the recommendation says what backs attention-DP timing (calibration.json caveats.attention_dp)
    assert any(a.startswith("Attention data parallelism: ") for a in rec.assumptions)
    body = attach_recipes(recommendation_to_json(rec), R1, SPEC.workload, "vllm")
    row = next(r for r in body["results"] if r["servers"] == 1)
    assert "--enable-expert-parallel" in row["recipe"]["command"]


def test_tensorrt_llm_runs_attention_replicas_of_one_gpu() -> None:
    """TensorRT-LLM's attention takes TP 1 under enable_attention_dp (its Mapping: the attention TP size is 1 when
    attention DP is on), so a sweep sized for it tries no TP 2 or 4 attention replicas, which its launch cannot run."""
    spec = SweepSpec(workload=Workload(task="inference", concurrency=512, engine="trtllm"), prompt_tokens=1000,
                     output_tokens=1000)
    result = sweep(R1, H200, spec)
    ep, tp = np.asarray(result.columns["ep"]), np.asarray(result.columns["tp"])
    assert (ep > tp).any() and set(tp[ep > tp].tolist()) == {1}
    assert any("of TP 1 (TensorRT-LLM's enable_attention_dp)" in a for a in result.assumptions)
