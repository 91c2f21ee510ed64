"""TensorRT-LLM's MoE kernel: a stated cost a routed row beyond the roofline, per GPU family, on that engine only.

The figures are read from AIConfigurator 0.12.0's measured kernel tables (``systems/data/<gpu>/moe/trtllm/1.3.0rc20/
moe_perf.parquet``; benchmarks/moe_small_batch_findings.md, Stops 47, 50 and 51): about 12 ns a row on B200/GB200
NVFP4, 8 ns on Hopper FP8, none on the RTX PRO 6000. ``engine_terms.trtllm_moe_s_per_token``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.engine_terms import trtllm_moe_s_per_token
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.speed.serving_setup import serving_setup

B200_ROW = "PQ30-B200-2048/128"  # perf-overview.md (TensorRT-LLM 00f3768), Qwen3-30B-A3B, B200 TP1 FP4, 2048/128: 6,251 tok/s


def _setup(run_id: str, engine: str | None):
    p = _serve_plan(run_id)
    r = p.workload
    return p, serving_setup(p, prompt_tokens=r.prompt_tokens, output_tokens=r.output_tokens, engine=engine)


def test_the_family_figures_are_stated_data_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["trtllm_moe_s_per_routed_row"]
    assert "moe_perf.parquet" in stated["source"] and "AIConfigurator 0.12.0" in stated["source"]
    assert calibration().trtllm_moe_s_per_routed_row == stated["value"] == {"9.0": 8e-9, "10.0": 1.2e-8, "12.0": 0.0}
    assert all("trtllm_moe_s_per_routed_row" not in body for body in doc["stacks"].values())  # not fitted


def test_only_under_tensorrt_llm() -> None:
    p, trt = _setup(B200_ROW, "trtllm")
    _, vllm = _setup(B200_ROW, "vllm")
    cal = calibration()
    moe = p.model.moe
    # 12 ns x 8 experts a token x 48 MoE layers, one GPU: 4.6 us a token
    assert trtllm_moe_s_per_token(p.model, p.gpu, trt, cal) == pytest.approx(12e-9 * 8 * 48)
    assert (moe.experts_per_token, moe.num_moe_layers) == (8, 48)
    assert trtllm_moe_s_per_token(p.model, p.gpu, vllm, cal) == 0.0
    assert trtllm_moe_s_per_token(load_model("llama-3.1-8b"), p.gpu, trt, cal) == 0.0  # dense: no routed rows
    # the plan's own engine is the default: this row is planned with vLLM's memory, so unmarked it pays nothing
    assert p.workload.engine == "vllm" and _setup(B200_ROW, None)[1].engine == "vllm"


def test_prediction_only_not_the_ceiling() -> None:
    p, trt = _setup(B200_ROW, "trtllm")
    _, vllm = _setup(B200_ROW, "vllm")
    # decode-only steps: with a prompt chunk the ceilings differ by TensorRT-LLM's own attention kernel for the
    # prompt (engine_terms.prompt_attention_apart), not by this cost
    step = {name: [decode_step(p.model, p.gpu, s, batch=512, cached_tokens=2048, ideal=ideal).step_s
                   for ideal in (False, True)]
            for name, s in (("trt", trt), ("vllm", vllm))}
    assert step["trt"][0] > step["vllm"][0]
    assert step["trt"][1] == step["vllm"][1]


def test_per_family_hopper_less_rtx_pro_6000_none_unknown_none() -> None:
    cal = calibration()
    p, trt = _setup(B200_ROW, "trtllm")
    b200 = trtllm_moe_s_per_token(p.model, p.gpu, trt, cal)
    assert trtllm_moe_s_per_token(p.model, get_gpu("h200"), trt, cal) == pytest.approx(b200 * 8 / 12)
    assert trtllm_moe_s_per_token(p.model, get_gpu("gb200"), trt, cal) == pytest.approx(b200)
    rtx, rtx_trt = _setup("PQ30-RTXTP1PP1-2048/128", "trtllm")
    assert trtllm_moe_s_per_token(rtx.model, rtx.gpu, rtx_trt, cal) == 0.0
    assert trtllm_moe_s_per_token(p.model, get_gpu("a100-80gb-sxm"), trt, cal) == 0.0  # no table read


def test_a_gpu_runs_its_share_of_the_rows() -> None:
    """TP 8 with EP 8 (the source's attention DP splits the experts by EP over its 8 GPUs) leaves each GPU an eighth
    of the rows; so does attention DP over EP 8 (each GPU serves eight replicas' tokens with an eighth of the
    experts)."""
    cal = calibration()
    p, trt = _setup("PQ235-B200-2048/128", "trtllm")
    assert trt.tp == 8
    assert trtllm_moe_s_per_token(p.model, p.gpu, trt, cal) == pytest.approx(12e-9 * 8 * 94 / 8)
    assert trt.ep == 8  # the row's attention DP split the experts by EP over its 8 GPUs
    adp = replace(trt, tp=1, ep=8)
    assert trtllm_moe_s_per_token(p.model, p.gpu, adp, cal) == pytest.approx(12e-9 * 8 * 94)


def test_sliced_experts_run_every_row_on_every_gpu() -> None:
    """MoE TP (EP 1): each GPU runs all k rows of every token on its 1/tp slice of each expert, so the per-row cost
    does not divide by TP (AIConfigurator's Qwen3-235B tables, MoE TP 1 -> 8: Stop 57); EP 2 inside TP 8 halves it."""
    cal = calibration()
    p, trt = _setup("PQ235-B200-2048/128", "trtllm")
    sliced = replace(trt, ep=1)
    assert trtllm_moe_s_per_token(p.model, p.gpu, sliced, cal) == pytest.approx(12e-9 * 8 * 94)
    assert trtllm_moe_s_per_token(p.model, p.gpu, replace(trt, ep=2), cal) == pytest.approx(12e-9 * 8 * 94 / 2)


def test_the_measured_rows_carry_their_engine_and_the_b200_row_comes_within_25_percent() -> None:
    """perf-overview.md's Qwen3-30B-A3B on one B200: +124.6% before the term, +7.1% with it (Stop 51)."""
    run = next(r for r in load_runs() if r.id == B200_ROW)
    assert engine_of(run) == "trtllm" and run.value == 6251
    assert abs(predict(run) / run.value - 1) <= 0.25
    # the same row timed with another engine's kernels (no per-row cost) misses as before
    as_vllm = replace(run, row={**run.row, "engine": "vllm"})
    assert engine_of(as_vllm) == "vllm" and predict(as_vllm) / run.value - 1 > 0.25
