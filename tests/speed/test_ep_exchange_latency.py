"""The expert-parallel exchange under attention data parallelism (EP wider than TP): each of its two collectives, an
all-gather of the tokens and a reduce-scatter of the experts' outputs, pays NCCL's measured all-gather /
reduce-scatter latency for the group's size inside an NVLink server, not the 8-GPU all-reduce latency (15 us)
the link carries (benchmarks/trtllm_gptoss_findings.md, branch trtdep; ``engine_terms.ep_exchange_latency_s``).

Figures: AIConfigurator 0.12.0's ``systems/data/b200_sxm/comm/nccl/2.27.5/nccl_perf.parquet`` (half, 256 bytes):
all_gather 8.41 / 11.21 us and reduce_scatter 8.32 / 11.26 us on 2 / 4 B200s; h200_sxm 2.26.2 over 8 GPUs 10.34 and
11.91 us.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.planner.speed import engine_terms, step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.links import Link
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict


def _row(row_id: str):  # type: ignore[no-untyped-def]
    run = next(r for r in load_runs() if r.id == row_id)
    p = _serve_plan(row_id)
    setup = serving_setup(p, prompt_tokens=run.row["prompt_tokens"], output_tokens=run.row["output_tokens"],
                          engine="trtllm")
    return run, p.model, p.gpu, setup


def test_the_latencies_are_stated_data_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["ep_exchange_latency_s"]
    assert "nccl_perf.parquet" in stated["source"] and "all_gather" in stated["source"]
    cal = calibration()
    assert cal.ep_exchange_latency_s == {g: {int(n): v for n, v in by.items()} for g, by in stated["value"].items()}
    # the mean of the tables' all-gather and reduce-scatter on 2 B200s (8.41, 8.32 us)
    assert cal.ep_exchange_latency_s["b200"][2] == pytest.approx((8.41e-6 + 8.32e-6) / 2, abs=0.01e-6)
    # every figure below the stated 8-GPU all-reduce latency it replaces, except B200-class groups of 8 (16-17 us)
    assert all(v < cal.latency_s["scale-up"] for by in cal.ep_exchange_latency_s.values() for n, v in by.items()
               if n < 8)
    assert all("ep_exchange_latency_s" not in body for body in doc["stacks"].values())  # not fitted


def test_lookup_by_group_size_and_fallbacks() -> None:
    cal = calibration()
    b200 = next(r for r in load_runs() if r.id == "IMT-OSS-B200-1k-1k-DEP2-C64")
    gpu = _serve_plan(b200.id).gpu
    nvlink = Link(kind="scale-up", bytes_per_s=9e11, latency_s=1.5e-5, description="")
    table = cal.ep_exchange_latency_s["b200"]
    assert engine_terms.ep_exchange_latency_s(gpu, nvlink, 2, cal) == table[2]
    assert engine_terms.ep_exchange_latency_s(gpu, nvlink, 3, cal) == table[4]  # the next size given
    assert engine_terms.ep_exchange_latency_s(gpu, nvlink, 16, cal) == 1.5e-5  # beyond the table: the link's
    network = Link(kind="network", bytes_per_s=5e10, latency_s=3e-5, description="")
    assert engine_terms.ep_exchange_latency_s(gpu, network, 2, cal) == 3e-5  # off the NVLink domain
    ideal = Link(kind="scale-up", bytes_per_s=9e11, latency_s=0.0, description="")
    assert engine_terms.ep_exchange_latency_s(gpu, ideal, 2, cal) == 0.0  # the ceiling has no latency


@pytest.mark.parametrize(("row_id", "ep"), [("IMT-OSS-B200-1k-1k-DEP2-C64", 2), ("IMT-OSS-B200-1k-1k-DEP4-C64", 4)])
def test_an_attention_dp_step_pays_the_measured_exchange_latency(row_id: str, ep: int) -> None:
    _, model, gpu, setup = _row(row_id)
    cal = calibration()
    c, ceiling = step_constants._pair(model, gpu, setup, cal)
    assert setup.ep == ep and c.ep_per_stage == 2 * model.moe.num_moe_layers
    assert c.ep_latency_s == cal.ep_exchange_latency_s["b200"][ep]
    assert ceiling.ep_latency_s == 0.0
    # a TP layout's all-reduces keep their own latency (TensorRT-LLM's stated figure)
    tp = replace(setup, tp=2, ep=1, replicas=1)
    assert step_constants._pair(model, gpu, tp, cal)[0].ep_latency_s == 0.0


def test_the_attention_dp_rows_are_predicted_closer_than_at_the_all_reduce_latency() -> None:
    # inferencemax-trt-moe's DEP2 / DEP4 rows (InferenceMAX run 20764588467): +27..+59% slow at 15 us a collective
    # (main at 0ed9ca2), +23..+51% at the tables' 8.4 / 11.2 us; the rest of the gap is not the exchange
    cal = calibration()
    rows = [r for r in load_runs() if r.id.startswith("IMT-OSS-B200-") and "-DEP" in r.id]
    assert len(rows) == 7
    at_link = replace(cal, ep_exchange_latency_s={})
    for r in rows:
        now, before = predict(r, cal) / r.value - 1, predict(r, at_link) / r.value - 1
        assert 0.0 < now < before, (r.id, now, before)
    # 2 within 25% with the fitted MoE falloff; 4 with TRTLLM-gen's measured one (branch moebackend: DEP4-C64 1k/1k,
    # DEP2-C64 1k/8k and 8k/1k, DEP2-C128 8k/1k); 3 once stop 52 read the experts' share of the weight bytes, not of
    # the parameters (branch byteshare: DEP2-C64 1k/8k +24.2 -> +25.0%); 4 again with TensorRT-LLM's attention-DP
    # balance (branch oss8k: the ranks' prompts share steps); 5 after stop 63's refit (DEP2-C128 1k/1k +24.9%; the
    # two still beyond, DEP2-C64 1k/1k +34.3% and DEP2-C128 1k/8k +31.8%)
    assert sum(abs(predict(r, cal) / r.value - 1) <= 0.25 for r in rows) == 5
