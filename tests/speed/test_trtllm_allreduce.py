"""TensorRT-LLM's TP all-reduces: its own kernels' measured latency inside an NVLink server, and the two RMSNorms a
layer runs inside them (benchmarks/trtllm_gptoss_findings.md).

The latencies are AIConfigurator 0.12.0's silicon tables (``systems/data/<gpu>/comm/trtllm/1.2.0rc5/
custom_allreduce_perf.parquet``, smallest message over 8 GPUs: B200 4.82 us, H200 3.50, H100 3.47) where the
planner's NCCL figure is 15 us; the fusion is read from TensorRT-LLM's ``modeling_gpt_oss.py`` (``forward_tp``:
``AllReduceFusionOp.RESIDUAL_RMS_NORM``). ``engine_terms.allreduce_latency_s``, ``launches.fuses_norms_into_allreduce``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.launches import launch_ratio
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict


def _row_setup(row_id: str, engine: str = "trtllm"):  # type: ignore[no-untyped-def]
    run = next(r for r in load_runs() if r.id == row_id)
    p = _serve_plan(row_id)
    setup = serving_setup(p, prompt_tokens=run.row["prompt_tokens"], output_tokens=run.row["output_tokens"],
                          engine=engine)
    return run, p.model, p.gpu, setup


def test_the_latencies_are_stated_data_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["trtllm_allreduce_latency_s"]
    assert "custom_allreduce_perf.parquet" in stated["source"] and "1.2.0rc5" in stated["source"]
    assert calibration().trtllm_allreduce_latency_s == stated["value"]
    # each below NCCL's stated scale-up latency (15 us), as the tables measure (3.5-4.8 us against 10-26 us)
    assert all(v < calibration().latency_s["scale-up"] / 2 for v in stated["value"].values())
    assert all("trtllm_allreduce_latency_s" not in body for body in doc["stacks"].values())  # not fitted


def test_a_trtllm_tp_step_pays_its_own_allreduce_latency_and_launches_two_norms_fewer() -> None:
    # IMT-OSS-B200-1k-1k-TP8-C4: gpt-oss-120b, B200, TP 8 (measured TPOT 2.186 ms)
    _, model, gpu, setup = _row_setup("IMT-OSS-B200-1k-1k-TP8-C4")
    cal = calibration()
    trt, _ = step_constants._pair(model, gpu, setup, cal)
    vllm, _ = step_constants._pair(model, gpu, replace(setup, engine="vllm"), cal)
    assert trt.allreduce_latency_s == cal.trtllm_allreduce_latency_s["b200"]
    assert vllm.allreduce_latency_s == cal.latency_s["scale-up"]
    k = cal.stack(gpu)
    layers_trt, layers_vllm = trt.fixed_s - k.per_step_s, vllm.fixed_s - k.per_step_s
    # gpt-oss: attention 5 + MoE 8 kernels a layer on vLLM's count, 2 fewer where the norms ride the all-reduces
    assert layers_trt / layers_vllm == pytest.approx(11 / 13)
    assert launch_ratio(model, cal.launches, norms_in_allreduce=True) < launch_ratio(model, cal.launches)


@pytest.mark.parametrize("row_id", ["IMT-OSS-B200-1k-1k-TP1-C128", "IMT-OSS-B200-1k-1k-DEP2-C64"])
def test_without_a_tp_allreduce_nothing_is_fused(row_id: str) -> None:
    # TP 1, or attention DP (TensorRT-LLM's forward_normal runs both norms apart): the launches are vLLM's count
    _, model, gpu, setup = _row_setup(row_id)
    cal = calibration()
    trt, _ = step_constants._pair(model, gpu, setup, cal)
    vllm, _ = step_constants._pair(model, gpu, replace(setup, engine="vllm"), cal)
    assert trt.fixed_s == vllm.fixed_s


def test_the_tensorrt_llm_gpt_oss_tp_rows_are_predicted_near_their_measurement() -> None:
    # inferencemax-trt-moe's TP 2/4/8 rows at 4-16 in flight (InferenceMAX run 20764588467): 37-61% slow on NCCL's
    # latency and vLLM's launch count, 2-20% slow with TensorRT-LLM's (before a refit)
    cal = calibration()
    rows = [r for r in load_runs() if r.id.startswith("IMT-OSS-B200-") and "-TP1-" not in r.id and "-DEP" not in r.id
            and int(r.id.rsplit("-C", 1)[1]) <= 16]
    assert len(rows) == 23
    errors = [predict(r, cal) / r.value - 1 for r in rows]
    assert max(abs(e) for e in errors) < 0.25, errors
