"""Under attention DP a mixture of experts' dense layers are whole on every GPU: no all-reduce, whole weights read.

TensorRT-LLM's MoE rows (perf-overview.md, commit 00f3768) ran ``enable_attention_dp``. Their attention is built with
``tp_size = 1`` (tensorrt_llm/_torch/modules/attention.py, commit c6d3bb2) and Llama 4's dense MLP layers with
``overridden_tp_size=1`` (tensorrt_llm/_torch/models/modeling_llama.py, commit 3a5901c): a dense layer exchanges
nothing between the GPUs. The MoE layers keep the calibration's TP reading (their routed experts still gather and
scatter every token over the group). Of the flagged rows' models only Llama 4 Maverick has dense layers (every other
layer, ``interleave_moe_layer_step`` 2), so only its rows move (benchmarks/moe_small_batch_findings.md, Stop 55).
"""

from __future__ import annotations

import dataclasses

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.experts import dense_layers, whole_dense_layers_extra_bytes
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict
from anchorgpu.planner.speed.serving import decode_step
from anchorgpu.planner.speed.serving_setup import serving_setup
from anchorgpu.planner.speed.step_constants import ServingSetup


def _model(name: str) -> ModelSpec:
    model = load_model(name)
    assert isinstance(model, ModelSpec)
    return model


MAVERICK = _model("llama-4-maverick-17b-128e-fp8")
SCOUT = _model("llama-4-scout-17b-16e")
GPU = get_gpu("h200")
ROWS = {run.id: run for run in load_runs()}


def test_dense_layers_of_the_flagged_models() -> None:
    assert dense_layers(MAVERICK) == 24
    assert dense_layers(SCOUT) == 0
    assert dense_layers(_model("qwen3-235b-a22b")) == 0
    assert dense_layers(_model("llama-3.1-8b")) == 0  # a dense model has no MoE layers to tell them from


def test_the_extra_read_is_the_dense_layers_beyond_the_tp_share() -> None:
    fmt = format_for_model(MAVERICK, "fp8")
    # 24 dense MLPs (3 x 5,120 x 16,384) and half the attention (48 layers of 2 x 5,120^2 + 2 x 5,120 x 1,024), FP8
    whole = 24 * 3 * 5120 * 16384 + 24 * (2 * 5120 * 5120 + 2 * 5120 * 1024)
    assert whole_dense_layers_extra_bytes(MAVERICK, fmt, tp=8, pp=1) == pytest.approx(whole * 7 / 8)
    assert whole_dense_layers_extra_bytes(MAVERICK, fmt, tp=4, pp=2) == pytest.approx(whole * 3 / 4 / 2)
    assert whole_dense_layers_extra_bytes(MAVERICK, fmt, tp=1, pp=1) == 0.0
    assert whole_dense_layers_extra_bytes(SCOUT, format_for_model(SCOUT, "fp8"), tp=4, pp=1) == 0.0


def _setup(model: ModelSpec, *, attention_dp: bool, gpus: int) -> ServingSetup:
    p = plan(model, Workload(prompt_tokens=1000, output_tokens=1000, attention_dp_kv=attention_dp, engine="trtllm"),
             precision=PrecisionPlan(weights="fp8", kv_cache="fp8"), layout=Layout(gpus=gpus, tp=gpus),
             gpu=GPU, suggest=False, choose_layout=False)
    return serving_setup(p, prompt_tokens=1000, output_tokens=1000)


def test_only_a_plan_marked_attention_dp_sets_it() -> None:
    marked = _setup(MAVERICK, attention_dp=True, gpus=8)
    user = _setup(MAVERICK, attention_dp=False, gpus=8)
    assert marked.attention_dp and marked.whole_dense_extra_bytes > 6e9
    assert not user.attention_dp and user.whole_dense_extra_bytes == 0.0


def test_dense_layers_send_no_all_reduce_and_the_memo_tells_the_setups_apart() -> None:
    marked = _setup(MAVERICK, attention_dp=True, gpus=8)
    plain = dataclasses.replace(marked, attention_dp=False, whole_dense_extra_bytes=0.0)
    cal = calibration()
    step_constants._STEP_MEMO.clear()
    with_dense, _ = step_constants._pair(MAVERICK, GPU, marked, cal)
    as_tp, _ = step_constants._pair(MAVERICK, GPU, plain, cal)
    assert with_dense.allreduce_per_stage == 2 * 24 and as_tp.allreduce_per_stage == 2 * 48


def test_a_model_without_dense_layers_is_timed_as_before() -> None:
    """Scout has no dense layers: marked attention DP, it exchanges and reads what TP does; only the two norms a layer
    that TensorRT-LLM fuses into its TP all-reduces without attention DP run apart under it, as launches
    (launches.fuses_norms_into_allreduce; modeling_llama.py's fusion is off with enable_attention_dp)."""
    marked = _setup(SCOUT, attention_dp=True, gpus=4)
    plain = dataclasses.replace(marked, attention_dp=False)
    one, two = (decode_step(SCOUT, GPU, s, batch=256, prefill_tokens=2048, prompt_tokens=1000,
                            cached_tokens=1500) for s in (marked, plain))
    assert (one.communication_s, one.weights_s) == (two.communication_s, two.weights_s)
    assert one.fixed_s > two.fixed_s


def test_a_maverick_decode_step_exchanges_less_and_reads_more() -> None:
    marked = _setup(MAVERICK, attention_dp=True, gpus=8)
    plain = dataclasses.replace(marked, attention_dp=False, whole_dense_extra_bytes=0.0)
    adp, tp = (decode_step(MAVERICK, GPU, s, batch=512, cached_tokens=1500)
               for s in (marked, plain))
    assert adp.communication_s == pytest.approx(tp.communication_s / 2)
    assert adp.weights_s > tp.weights_s


@pytest.mark.parametrize("row_id", ["PL4M-H200-2048/128", "PL4M-B200-2048/128", "PL4M-H200-5000/500"])
def test_maverick_prompt_heavy_rows_come_within_25_percent(row_id: str) -> None:
    """perf-overview.md (00f3768): Maverick's prompt-heavy rows were 22-31% slow when each of its 48 layers was charged
    two TP all-reduces of the step's ~30,000 tokens; its 24 dense layers exchange nothing under attention DP."""
    run = ROWS[row_id]
    assert _serve_plan(row_id).workload.attention_dp_kv
    assert predict(run) == pytest.approx(run.value, rel=0.25)
