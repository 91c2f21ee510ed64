"""TensorRT-LLM runs a step's prompt (context) attention and its decodes' (generation) attention as two kernels, one
after the other, so a step that carries a prompt chunk pays the chunk's attention on top of the decodes' KV read.

Source: NVIDIA/TensorRT-LLM@00dbe288 ``cpp/tensorrt_llm/thop/attentionOp.cpp``, ``attention_inplace``: ``runner->run``
with ``is_context=true`` over the ``num_contexts`` requests, then with ``is_context=false`` over the
``num_generations``, on the same stream. vLLM and SGLang keep the larger of the KV read and all the arithmetic.
``engine_terms.prompt_attention_apart``; benchmarks/moe_small_batch_findings.md, "Stop 54 (branch longctx)".

The rows it moves most: TensorRT-LLM's perf-overview (docs/source/performance/perf-overview.md @00f3768), Qwen3-235B-A22B
20000/2000 on 8 B200 (FP4), 4,453 output tokens/s measured, predicted +34.6% before (the fit row beyond 25%), and on
8 H200 (FP8), 1,876 measured, +41.9% before: their 20,000-token prompts' attention was hidden under the decodes' KV read.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import handed_memos, step_constants
from anchorgpu.planner.speed import serving as sv
from anchorgpu.planner.speed.attention_rate import (
    timed_prefill_attention_flops_per_token,
    trtllm_context_attention,
    trtllm_prompt_attention_peak_share,
)
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.engine_terms import prompt_attention_apart
from anchorgpu.planner.speed.flops import decode_attention_flops_per_token
from anchorgpu.planner.speed.runs import load_runs, predict


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


# TensorRT-LLM's context attention rate (speed.attention_rate.trtllm_context_attention), from AIConfigurator 0.12.0's
# silicon-measured tables: systems/data/h200_sxm/attention/trtllm/1.3.0rc20/context_attention_perf.parquet, attn_dtype
# fp8, kv_cache_dtype fp8, head dim 128, no window, <= 8 KV heads, batch x isl >= 16,384: causal FLOPs over the latency
# over the BF16 peak, median by isl (benchmarks/mbubound_context_rate.py table, branch mbubound): 1,024 tokens 0.311,
# 2,048 0.448, 16,384 0.732.
AIC_H200_FP8_MEDIANS = {1024: 0.311, 2048: 0.448, 16384: 0.732}


def _p8_h200_row():  # type: ignore[no-untyped-def]
    """P8-H200-20000/2000 (measured_runs.json; NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f3768,
    Llama 3.1 8B H200 TP1 FP8, 20000/2000: 1,804 output tokens/s), the fit row the rate moves most."""
    run = next(r for r in load_runs() if r.id == "P8-H200-20000/2000")
    assert (run.row["gpu"], run.row["kv_cache"], run.row["prompt_tokens"], run.value) == ("h200", "fp8", 20000, 1804)
    return run


def test_the_prompt_attention_rate_of_the_calibration_row_is_aics_measured_one() -> None:
    """The row's FP8 KV cache: TensorRT-LLM's FP8 context kernel on Hopper, R 0.806 of the BF16 peak on the causal
    pairs plus 820 key pairs a query: 0.31 of the peak at 1,000 tokens, 0.45 at 2,048, 0.75 at 20,000, where the flat
    attention_efficiency (0.5) was charged before."""
    _p8_h200_row()
    gpu, cal = get_gpu("h200"), calibration()
    context = trtllm_context_attention(gpu, cal, apart=prompt_attention_apart("trtllm"), kv_fp8=True)
    assert context == (0.806, 820.0)
    rates = {n: trtllm_prompt_attention_peak_share(*context, n) for n in (1000, 2048, 20000)}
    assert rates == pytest.approx({1000: 0.305, 2048: 0.448, 20000: 0.745}, abs=0.001)
    for isl, median in AIC_H200_FP8_MEDIANS.items():  # the two-term form against AIC's medians
        assert trtllm_prompt_attention_peak_share(*context, isl) == pytest.approx(median, rel=0.03)
    # a 16-bit cache, another engine, a GPU family without a measured table keep the flat rate
    assert trtllm_context_attention(gpu, cal, apart=True, kv_fp8=False) is None
    assert trtllm_context_attention(gpu, cal, apart=prompt_attention_apart("vllm"), kv_fp8=True) is None
    assert trtllm_context_attention(get_gpu("b300"), cal, apart=True, kv_fp8=True) is None
    assert trtllm_context_attention(get_gpu("b200"), cal, apart=True, kv_fp8=True) == (0.73, 1280.0)


def test_a_prompt_chunk_is_timed_at_the_measured_rate_on_an_fp8_cache() -> None:
    """decode_step of a P8-H200-20000/2000-like step (92 decodes, a 1,956-token chunk of a 20,000-token prompt): the
    chunk's attention takes its FLOPs at R x head-size ratio of the BF16 peak times (1 + 2 E / I); the ceiling keeps the
    datasheet peak and no extra pairs; a BF16 cache keeps attention_efficiency."""
    model, gpu, cal = load_model("llama-3.1-8b"), get_gpu("h200"), calibration()
    kw = dict(batch=92, prefill_tokens=1956, prompt_tokens=20000, cached_tokens=21000, cal=cal)
    fp8 = sv.ServingSetup(weights_bytes_per_gpu=9e9, kv_bytes_per_sequence_per_gpu=1.4e9, precision="fp8",
                          engine="trtllm", kv_fp8=True)
    bf16 = replace(fp8, kv_fp8=False)
    c = step_constants._constants(model, gpu, fp8, cal, False)
    assert c.prompt_attention_rate == pytest.approx(c.attention_rate * 0.806 / cal.stack(gpu).attention_efficiency)
    assert c.prompt_extra_pairs == 820.0
    ideal = step_constants._constants(model, gpu, fp8, cal, True)
    assert (ideal.prompt_attention_rate, ideal.prompt_extra_pairs) == (ideal.attention_rate, 0.0)
    flops = timed_prefill_attention_flops_per_token(model, 20000, c.window_extra_tokens)
    kv_s = 92 * 1.4e9 / c.kv_rate
    prompt_s = 1956 * flops * (1 + 2 * 820 / 20000) / c.prompt_attention_rate
    assert sv.decode_step(model, gpu, fp8, **kw).attention_s == pytest.approx(kv_s + prompt_s, rel=1e-12)  # type: ignore[arg-type]
    flat = step_constants._constants(model, gpu, bf16, cal, False)
    assert (flat.prompt_attention_rate, flat.prompt_extra_pairs) == (flat.attention_rate, 0.0)
    assert sv.decode_step(model, gpu, bf16, **kw).attention_s == pytest.approx(  # type: ignore[arg-type]
        92 * 1.4e9 / flat.kv_rate + 1956 * flops / flat.attention_rate, rel=1e-12)


def test_the_calibration_row_is_faster_than_at_the_flat_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """P8-H200-20000/2000 at the shipped constants: 20,000-token prompts run at 0.75 of the peak, not 0.5, so the
    prediction rises (1,645 -> 1,745 tokens/s on the constants of 2026-12-06; measured 1,804)."""
    run = _p8_h200_row()
    measured = predict(run)
    step_constants._STEP_MEMO.clear()
    handed_memos.clear_memos()  # the serving hand-over's memo of the same constants (speed.handed_memos)
    monkeypatch.setattr(step_constants, "trtllm_context_attention", lambda gpu, cal, *, apart, kv_fp8: None)
    try:
        flat = predict(run)
    finally:
        step_constants._STEP_MEMO.clear()
        handed_memos.clear_memos()
    assert measured > 1.04 * flat
