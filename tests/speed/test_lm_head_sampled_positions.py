"""Serving engines run the LM head only at the positions they sample: a prompt's last token, and each decoded token.

vLLM's model runner gathers ``sample_hidden_states = hidden_states[logits_indices]`` before ``compute_logits``, with
``logits_indices = query_start_loc[1:] - 1``, one position per scheduled request (vllm-project/vllm
``vllm/v1/worker/gpu_model_runner.py``); SGLang's ``LogitsProcessor`` keeps ``hidden_states[last_index]``,
``last_index = cumsum(extend_seq_lens) - 1``, for a prefill without input logprobs (sgl-project/sglang
``python/sglang/srt/layers/logits_processor.py``); TensorRT-LLM's ``LogitsProcessor`` keeps the last token of each
sequence unless ``return_context_logits`` (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/modules/logits_processor.py``).
The timings below are roofline ceilings (``ideal``: datasheet peaks, a sharp roofline), so a compute-bound step's
products take exactly their FLOPs over the peak."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.flops import (
    attention_flops_per_token,
    forward_matmul_params,
    lm_head_params,
    prefill_flops,
)
from anchorgpu.planner.speed.links import peak_for
from anchorgpu.planner.speed.serving import ServingSetup, decode_step

H100 = get_gpu("h100")
BF16 = peak_for(H100, "bf16").flops_per_s
PROMPT = 8192


def _setup(**kw: float) -> ServingSetup:
    return ServingSetup(weights_bytes_per_gpu=2.5e9, kv_bytes_per_sequence_per_gpu=1e6, **kw)  # type: ignore[arg-type]


def test_a_prompt_multiplies_the_lm_head_at_its_last_token_only() -> None:
    """Llama 3.2 1B ties a 128,256 x 2,048 head to its embeddings: 21% of the products a token passes. An 8,192-token
    prompt's products on one H100 take 79% of what 8,192 tokens through every product would: the head once, not 8,192
    times (before: 100%)."""
    model = load_model("llama-3.2-1b")
    p, head = forward_matmul_params(model), lm_head_params(model)
    assert head / p == pytest.approx(0.2125, abs=1e-4)
    step = decode_step(model, H100, _setup(), batch=0, prefill_tokens=PROMPT, prompt_tokens=PROMPT, ideal=True)
    assert step.bound == "compute"
    every_token_s = 2.0 * PROMPT * p / BF16
    assert step.weights_s / every_token_s == pytest.approx(1 - (PROMPT - 1) / PROMPT * head / p, rel=1e-12)
    assert step.weights_s / every_token_s == pytest.approx(0.787, abs=1e-3)
    # the FLOPs count says the same
    attention = PROMPT * attention_flops_per_token(model, PROMPT, causal=True)
    assert prefill_flops(model, PROMPT) == pytest.approx(2.0 * (PROMPT * p - (PROMPT - 1) * head) + attention,
                                                         rel=1e-12)


def test_decoded_tokens_each_pass_the_lm_head() -> None:
    """A step of 8,192 decoding sequences samples all of them: every row multiplies the whole head."""
    model = load_model("llama-3.2-1b")
    step = decode_step(model, H100, _setup(), batch=PROMPT, cached_tokens=1, ideal=True)
    assert step.weights_s == pytest.approx(2.0 * PROMPT * forward_matmul_params(model) / BF16, rel=1e-12)


def test_the_head_a_prompt_skips_runs_at_bf16_beside_fp8_blocks() -> None:
    """FP8 checkpoints keep the head 16-bit (product_shares): the skipped head is taken off at BF16's rate, the rest
    of the products at their mixed rate."""
    from anchorgpu.planner.formats import format_for_model
    from anchorgpu.planner.speed.product_shares import head_quantized_share, mixed_rate, quantized_product_shares

    model = load_model("llama-3.1-8b")
    fmt = format_for_model(model, "fp8")
    share, _ = quantized_product_shares(model, fmt)
    assert share < 1.0 and head_quantized_share(model, fmt) == 0.0
    setup = _setup(precision="fp8", quantized_share=share, head_quantized_share=0.0)  # type: ignore[arg-type]
    step = decode_step(model, H100, setup, batch=0, prefill_tokens=PROMPT, prompt_tokens=PROMPT, ideal=True)
    fp8 = peak_for(H100, "fp8").flops_per_s
    p, head = forward_matmul_params(model), lm_head_params(model)
    expected = 2.0 * PROMPT * p / mixed_rate(fp8, BF16, share) - 2.0 * (PROMPT - 1) * head / BF16
    assert step.weights_s == pytest.approx(expected, rel=1e-12)
    # nearly all of the head-less products run at FP8's rate: within 0.01% of that alone and the head once at BF16's
    assert step.weights_s == pytest.approx(2.0 * PROMPT * (p - head) / fp8 + 2.0 * head / BF16, rel=1e-4)
