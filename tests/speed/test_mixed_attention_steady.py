"""The serving model's steady state charges vLLM's FlashAttention 2 reread (``speed.mixed_attention``) in the steps
that carry a prompt chunk, and only where the decodes' caches outgrow what the GPU's L2 keeps between a group's query
heads: FlashAttention 2's grid is ``(num_m_block, b, h)``, the query head slowest (vllm-project/flash-attention
``csrc/flash_attn/src/flash_fwd_launch_template.h``, ``run_flash_splitkv_fwd`` with one split, as a step that is not
decodes alone runs: ``csrc/flash_attn/flash_api.cpp`` @04325b67 calls ``set_params_splitkv`` only when
``seqlenq_ngroups_swapped``). SGLang on the same GPU is the control: the same step constants but for the reread."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.batching import serving_estimate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.mixed_attention import (
    mixed_attention_assumption,
    mixed_step_kv_read_factor,
    mixed_step_l2_kv_bytes,
)
from anchorgpu.planner.speed.serving import ServingSetup, decode_step
from anchorgpu.planner.speed.step_constants import _pair

A100, L40S = get_gpu("a100-80gb-sxm"), get_gpu("l40s")
QWEN = load_model("qwen3-14b")  # 40 layers, 40 query heads over 8 KV heads of 128: 160 KiB a token in BF16
KIB = 1024
VLLM = ServingSetup(weights_bytes_per_gpu=29.5e9, kv_bytes_per_sequence_per_gpu=4096 * 160 * KIB,
                    max_num_batched_tokens=2048, engine="vllm")
SGLANG = replace(VLLM, engine="sglang")


def test_the_l2_bound_is_the_l2_times_the_slices_a_step_reads_in_turn() -> None:
    """A100: 40 MiB of L2 (NVIDIA's A100 whitepaper, 40,960 KB) x 40 layers x 8 KV heads; 96 MiB on the L40S."""
    assert mixed_step_l2_kv_bytes(QWEN, A100, tp=1, pp=1) == 40 * 2**20 * 40 * 8
    assert mixed_step_l2_kv_bytes(QWEN, L40S, tp=1, pp=1) == 96 * 2**20 * 40 * 8
    assert mixed_step_l2_kv_bytes(QWEN, A100, tp=2, pp=2) == 40 * 2**20 * 20 * 4  # a stage's layers, a GPU's heads
    assert mixed_step_l2_kv_bytes(QWEN, get_gpu("h100-sxm"), tp=1, pp=1) == 0.0  # no figure: no credit


def test_a_step_with_a_chunk_reads_the_decodes_caches_once_per_query_head_past_the_l2() -> None:
    """64 sequences at 4,096 tokens (40 GiB, past the A100's 12.5 GiB bound) beside a 512-token chunk: the KV read,
    which sets the attention's time here, is five times SGLang's; the same step without the chunk is SGLang's."""
    c, _ = _pair(QWEN, A100, VLLM, calibration())
    assert (c.mixed_kv_factor, c.mixed_kv_l2_bytes) == (5.0, mixed_step_l2_kv_bytes(QWEN, A100, tp=1, pp=1))
    kwargs = {"batch": 64, "prompt_tokens": 4000, "cached_tokens": 4096}
    vllm, sglang = (decode_step(QWEN, A100, s, prefill_tokens=512, **kwargs) for s in (VLLM, SGLANG))
    kv_s = 64 * VLLM.kv_bytes_per_sequence_per_gpu / c.kv_rate
    assert sglang.attention_s == pytest.approx(kv_s, rel=1e-12)  # the KV read binds, not the arithmetic
    assert vllm.attention_s == pytest.approx(5 * kv_s, rel=1e-12)
    assert vllm.step_s - sglang.step_s == pytest.approx(4 * kv_s, rel=1e-9)
    alone = [decode_step(QWEN, A100, s, **kwargs).step_s for s in (VLLM, SGLANG)]
    assert alone[0] == alone[1]  # decodes alone: FlashAttention 2 packs the group (seqlenq_ngroups_swapped)


def test_decodes_whose_caches_the_l2_keeps_pay_nothing_more() -> None:
    """8 sequences at 4,096 tokens (5 GiB, under the bound): the chunk's step is SGLang's to the last bit; the same
    sequences on an FP8 cache are not FlashAttention 2's (vLLM's flash_attn_supports_fp8 wants FlashAttention 3)."""
    kwargs = {"batch": 8, "prompt_tokens": 4000, "cached_tokens": 4096, "prefill_tokens": 512}
    assert decode_step(QWEN, A100, VLLM, **kwargs).step_s == decode_step(QWEN, A100, SGLANG, **kwargs).step_s
    assert mixed_step_kv_read_factor(QWEN, A100, engine="vllm", tp=1, kv_fp8=True) == 1.0


def test_a_lone_users_decode_speed_pays_nothing_and_a_busy_engines_steps_with_chunks_do() -> None:
    """At one user the steps between its tokens carry no prompt (speed.batching: the others' prompts only), so its
    decode speed is SGLang's; at 64 users with 4,000-token prompts the steps that carry the others' chunks reread."""
    def estimate(setup: ServingSetup, users: int):  # type: ignore[no-untyped-def]
        return serving_estimate(QWEN, A100, setup, prompt_tokens=4000, output_tokens=200, concurrency=users,
                                saturation_concurrency=64)
    assert estimate(VLLM, 1).tpot_s == estimate(SGLANG, 1).tpot_s
    assert estimate(VLLM, 64).tpot_s > 1.05 * estimate(SGLANG, 64).tpot_s


def test_the_assumption_says_when_the_reread_is_charged() -> None:
    busy = mixed_attention_assumption(QWEN, A100, VLLM, 64)
    quiet = mixed_attention_assumption(QWEN, A100, VLLM, 8)
    assert busy is not None and quiet is not None
    assert "5x (once per query head)" in busy and "more than 20 sequences'" in busy  # 12.5 GiB / 640 MiB
    assert "; charged at this plan's 64 running sequences" in busy
    assert "not charged at this plan's 8 running sequences" in quiet
    assert mixed_attention_assumption(QWEN, get_gpu("h100-sxm"), VLLM, 64) is None  # FlashAttention 3 packs them
