"""TensorRT-LLM runs a step's prompt (context) attention and its decodes' (generation) attention as two kernels, one
after the other, so a step that carries a prompt chunk pays the chunk's attention on top of the decodes' KV read.

Source: NVIDIA/TensorRT-LLM@00dbe288 ``cpp/tensorrt_llm/thop/attentionOp.cpp``, ``attention_inplace``: ``runner->run``
with ``is_context=true`` over the ``num_contexts`` requests, then with ``is_context=false`` over the
``num_generations``, on the same stream. vLLM and SGLang keep the larger of the KV read and all the arithmetic.
``step_constants.prompt_attention_apart``; benchmarks/moe_small_batch_findings.md, "Stop 54 (branch longctx)".

The rows it moves most: TensorRT-LLM's perf-overview (docs/source/performance/perf-overview.md @00f3768), Qwen3-235B-A22B
20000/2000 on 8 B200 (FP4), 4,453 output tokens/s measured, predicted +34.6% before (the fit row beyond 25%), and on
8 H200 (FP8), 1,876 measured, +41.9% before: their 20,000-token prompts' attention was hidden under the decodes' KV read.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import serving as sv
from anchorgpu.planner.speed import step_constants
from anchorgpu.planner.speed.attention_rate import timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import decode_attention_flops_per_token
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.step_constants import prompt_attention_apart


def _setup(engine: str) -> sv.ServingSetup:
    return sv.ServingSetup(weights_bytes_per_gpu=20e9, kv_bytes_per_sequence_per_gpu=3e8, precision="fp8", tp=2,
                           max_num_batched_tokens=8192, gpus_per_server=8, engine=engine)


@pytest.mark.parametrize(("engine", "apart"), [("trtllm", True), ("vllm", False), ("sglang", False)])
def test_only_tensorrt_llm_runs_the_prompt_attention_apart(engine: str, apart: bool) -> None:
    assert prompt_attention_apart(engine) is apart
    model, gpu, cal = load_model("llama-3.1-70b"), get_gpu("h200"), calibration()
    assert step_constants._constants(model, gpu, _setup(engine), cal, False).prompt_attention_apart is apart
    assert step_constants._constants(model, gpu, _setup(engine), cal, True).prompt_attention_apart is apart


def test_a_prompt_chunk_adds_its_attention_to_the_kv_read_on_tensorrt_llm() -> None:
    """vLLM: the larger of the KV read and all the attention arithmetic; TensorRT-LLM: the larger of the KV read and
    the decodes' arithmetic, plus the chunk's. The products are the same, and so is a step without a prompt."""
    model, gpu, cal = load_model("llama-3.1-70b"), get_gpu("h200"), calibration()
    kw = dict(batch=128, prefill_tokens=2048, prompt_tokens=20000, cached_tokens=21000, cal=cal)
    trt = sv.decode_step(model, gpu, _setup("trtllm"), **kw)  # type: ignore[arg-type]
    vllm = sv.decode_step(model, gpu, _setup("vllm"), **kw)  # type: ignore[arg-type]
    c = step_constants._constants(model, gpu, _setup("vllm"), cal, False)
    kv_s = 128 * 3e8 / c.kv_rate
    decode_s = 128 * decode_attention_flops_per_token(model, 21000) / 2 / c.attention_rate
    prompt_s = (2048 * timed_prefill_attention_flops_per_token(model, 20000, c.window_extra_tokens) / 2
                / c.attention_rate)
    assert kv_s > decode_s  # the decodes' arithmetic hides under their KV read either way
    assert vllm.attention_s == pytest.approx(max(kv_s, decode_s + prompt_s), rel=1e-12)
    assert trt.attention_s == pytest.approx(kv_s + prompt_s, rel=1e-12)
    assert trt.attention_s > vllm.attention_s
    assert trt.weights_s == vllm.weights_s
    decode_only = dict(kw, prefill_tokens=0.0)
    assert (sv.decode_step(model, gpu, _setup("trtllm"), **decode_only).attention_s  # type: ignore[arg-type]
            == sv.decode_step(model, gpu, _setup("vllm"), **decode_only).attention_s)  # type: ignore[arg-type]


def test_the_ceiling_adds_it_too_and_stays_faster() -> None:
    model, gpu, cal = load_model("qwen3-30b-a3b"), get_gpu("b200"), calibration()
    for engine in ("trtllm", "vllm"):
        setup = _setup(engine)
        kw = dict(batch=64, prefill_tokens=2048, prompt_tokens=20000, cached_tokens=21000, cal=cal)
        step = sv.decode_step(model, gpu, setup, **kw)  # type: ignore[arg-type]
        top = sv.decode_step(model, gpu, setup, ideal=True, **kw)  # type: ignore[arg-type]
        assert top.step_s < step.step_s


@pytest.mark.parametrize(("run_id", "measured"), [("PQ235-B200-20000/2000", 4453), ("PQ235-H200-20000/2000", 1876)])
def test_the_long_prompt_rows_are_slower_than_with_the_attention_hidden(run_id: str, measured: float,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """perf-overview @00f3768, Qwen3-235B-A22B 20000/2000: the prediction drops by more than a tenth once the
    prompt's attention is charged (B200 +34.6% -> about +12%, H200 +41.9% -> about +24% on the shipped constants)."""
    run = next(r for r in load_runs() if r.id == run_id)
    assert run.value == measured
    apart = predict(run)
    step_constants._STEP_MEMO.clear()
    monkeypatch.setattr(step_constants, "prompt_attention_apart", lambda engine: False)
    try:
        hidden = predict(run)
    finally:
        step_constants._STEP_MEMO.clear()
    assert apart < 0.9 * hidden
    assert hidden > 1.25 * measured  # beyond 25% with the attention hidden
    if run.role == "fit":
        assert abs(apart / measured - 1.0) < 0.25
