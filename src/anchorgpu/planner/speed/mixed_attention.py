"""vLLM's FlashAttention 2 reads a decoding sequence's KV cache once per query head in a step that also holds a prompt
chunk. Pure.

vLLM's FlashAttention backend runs a step's attention, every request's, as one ``flash_attn_varlen_func`` call
(vllm-project/vllm ``vllm/v1/attention/backends/flash_attn.py``, ``FlashAttentionImpl.forward``). On a GPU of compute
capability 8.x that call is FlashAttention 2 (``get_flash_attn_version`` in ``vllm/v1/attention/backends/fa_utils.py``
takes FlashAttention 3 only where the major version is 9). FlashAttention 2's ``mha_varlen_fwd`` packs the query heads
that share a KV head into one tile (``seqlenq_ngroups_swapped``, and its split-KV decoding) only when
``max_seqlen_q == 1``, a step of decodes alone (vllm-project/flash-attention ``csrc/flash_attn/flash_api.cpp``
@04325b67; vLLM's own ``use_cascade_attention`` reads FlashDecoding as used only when ``np.all(query_lens == 1)``).
In a step with a prompt chunk each query head of a decoding sequence is a tile of its own (``grid(num_m_block, b, h)``,
128 query rows of which one is real) that reads its KV head's cache: the cache is read once per query head, where a
decode-only step reads it once per KV head. The padded tile's arithmetic, 4 x 128 x head_dim FLOPs for each cached
token's 4 x head_dim bytes (128 FLOP a byte), stays under an A100's ridge (312 TFLOPS over 2.0 TB/s, 156 FLOP a byte),
so the read sets the cost.

FlashAttention 3 (Hopper) packs the query heads of a varlen call always (``should_pack_gqa``: ``if (varlen_q) return
true``, ``hopper/heuristics.h``), and gpt-oss's attention sinks send vLLM on SM 8.x to its Triton backend
(``vllm/platforms/cuda.py`` ``get_attn_backend_cls``), whose tiles hold a KV head's query heads together; neither
rereads. TensorRT-LLM and SGLang run other kernels. vLLM on ROCm runs its unified Triton attention (the ``ROCM_ATTN``
and ``TRITON_ATTN`` backends' ``unified_attention``, vllm-project/vllm ``vllm/attention/ops/triton_unified_attention.py``:
``grid = (num_kv_heads, total_num_q_blocks)``, ``BLOCK_M = BLOCK_Q * num_queries_per_kv`` rows, a KV head's query
heads in every tile whatever the step holds) or AITER's, which splits a step into its decodes and its prompts
(``rocm_aiter_fa.py``); an AMD GPU has no CUDA compute capability here, so none rereads.

The reread is the GPU memory's only where the GPU's L2 does not keep the cache between a group's query heads. The grid
is ``(num_m_block, b, h)`` with the query head slowest (``flash_fwd_launch_template.h``, ``run_flash_fwd`` and
``run_flash_splitkv_fwd`` with one split, which a step that is not decodes alone has: ``set_params_splitkv`` runs only
when ``seqlenq_ngroups_swapped``), and a KV head's query heads are consecutive (``bidh / h_h_k_ratio``), so between
two reads of one KV head's cache the kernel reads that KV head's cache of every sequence in the step, one layer's: the
decodes' K and V of one KV head and layer. Where that slice is no larger than the L2 (``data/l2_cache.json``) the next
query head finds it there; where it is larger, a scan that cycles through more than the cache holds finds nothing
(least-recently-used), and the reread comes from memory. GPUStack's A100 pages agree with that bound: their slices are
3-4 times the 40 MB L2 (Qwen3-14B at 4K, ~59 sequences: 124 MB; GLM-4.5-Air at 2K, ~150: 161 MB) and the measured
excess of their prompt steps is at least the whole reread (benchmarks/hardening/stop60_vgm2.md, stop60_mixattn.md).
:func:`mixed_step_l2_kv_bytes` gives the bound as the decodes' KV bytes a GPU holds for a stage.

Charged where a step holds a prompt chunk beside decoding sequences: the serving model's steps that carry a chunk
(``serving._tick``/``dense_step._dense_step``, the sweep's ``Ticks.tick``) read their decodes' caches this many times, and a
burst's waves the steps they share with the next wave's prompts (``burst._shared_steps_reread_s``). Not charged for a
model whose per-sequence read holds more than attention's cache (a recurrent layer's state, an encoder's or images'
cross-attention K/V, read by other kernels and summed into the same figure here), an under-charge stated as such.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec

if TYPE_CHECKING:
    from anchorgpu.planner.speed.step_constants import ServingSetup

__all__ = ["FA2_CAPABILITY", "mixed_attention_assumption", "mixed_attention_line", "mixed_attention_sweep_line",
           "mixed_step_kv_read_factor", "mixed_step_l2_kv_bytes"]

FA2_CAPABILITY = "8."  # vLLM's get_flash_attn_version: FlashAttention 3 on major 9, FlashAttention 2 on Ampere and Ada


def mixed_step_kv_read_factor(model: ModelSpec, gpu: GpuSpec, *, engine: str, tp: int,
                              attention_dp: bool = False, kv_fp8: bool = False) -> float:
    """How many times the planned KV read (a GPU's KV heads, once each) a decoding sequence's attention reads in a
    step that also holds a prompt chunk: the query heads a GPU holds over the KV heads it holds, where vLLM runs
    FlashAttention 2 (:mod:`this module <anchorgpu.planner.speed.mixed_attention>`); 1.0 elsewhere.

    The KV heads a GPU holds are ``max(1, kv_heads / tp)`` (vLLM replicates them past the KV head count, as
    ``memory.kv`` sizes them); under attention data parallelism every GPU holds all of them and all query heads.
    An FP8 KV cache (``kv_fp8``) is not FlashAttention 2's: vLLM's ``flash_attn_supports_fp8`` wants FlashAttention
    3 on major 9 (``fa_utils.py``), so on SM 8.x vLLM picks another backend (FlashInfer or its Triton kernel, both
    with a KV head's query heads in one tile), 1.0.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> qwen = load_model("qwen3-14b")  # 40 query heads over 8 KV heads
    >>> mixed_step_kv_read_factor(qwen, get_gpu("a100-80gb-sxm"), engine="vllm", tp=1)
    5.0
    >>> mixed_step_kv_read_factor(qwen, get_gpu("h100-sxm"), engine="vllm", tp=1)  # FlashAttention 3 packs them
    1.0
    >>> mixed_step_kv_read_factor(qwen, get_gpu("a100-80gb-sxm"), engine="trtllm", tp=1)
    1.0
    """
    capability = gpu.compute_capability  # first: the cheapest test, and the one most GPUs fail
    if capability is None or not capability.startswith(FA2_CAPABILITY):
        return 1.0
    if engine != "vllm" or kv_fp8 or model.mla is not None or model.model_type == "gpt_oss":
        return 1.0
    if model.recurrent is not None or model.encoder is not None or (model.image is not None
                                                                   and not model.image.in_context):
        return 1.0  # the per-sequence read holds a state or cross-attention K/V too (module docstring)
    split = 1 if attention_dp else tp
    query_heads = model.num_attention_heads / split
    kv_heads = max(1.0, model.num_kv_heads / split)
    return query_heads / kv_heads if query_heads > kv_heads else 1.0


def mixed_step_l2_kv_bytes(model: ModelSpec, gpu: GpuSpec, *, tp: int, pp: int, attention_dp: bool = False) -> float:
    """The decoding sequences' KV bytes on one GPU of a pipeline stage (what a step reads once) up to which the
    :func:`mixed_step_kv_read_factor` reread comes from the L2, not the GPU's memory: the L2's bytes
    (``data/l2_cache.json``) times the slices the step's attention reads in turn, the stage's layers (``layers /
    pp``) times the KV heads a GPU holds (``max(1, kv_heads / tp)``, all of them under attention data parallelism).
    0.0 for a GPU without a figure (no L2 credit).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> qwen = load_model("qwen3-14b")  # 40 layers, 8 KV heads: 320 slices of the A100's 40 MiB
    >>> mixed_step_l2_kv_bytes(qwen, get_gpu("a100-80gb-sxm"), tp=1, pp=1) / 2**30
    12.5
    """
    l2_bytes = _l2_bytes().get(gpu.name, 0.0)
    kv_heads = float(model.num_kv_heads) if attention_dp else max(1.0, model.num_kv_heads / tp)
    return l2_bytes * kv_heads * model.num_layers / pp


@lru_cache(maxsize=1)
def _l2_bytes() -> dict[str, float]:
    text = resources.files("anchorgpu.planner.speed").joinpath("data", "l2_cache.json").read_text("utf-8")
    return {name: float(entry["l2_bytes"]) for name, entry in json.loads(text)["gpus"].items()}


def mixed_attention_line(factor: float, l2_kv_bytes: float, kv_bytes_per_sequence: float, sequences: float,
                         pp: int) -> str:
    """The assumption a vLLM serving estimate on FlashAttention 2 adds where :func:`mixed_step_kv_read_factor` is
    above 1: when the decodes' KV cache is read ``factor`` times, and whether this plan's ``sequences`` a replica
    (``pp`` micro-batches of them a step) outgrow the L2's bound (:func:`mixed_step_l2_kv_bytes`).

    >>> mixed_attention_line(5.0, 12.5 * 2**30, 655e6, 64, 1)[:60]
    'vLLM runs attention with FlashAttention 2 on this GPU, which'
    >>> "charged at this plan's 64 running sequences" in mixed_attention_line(5.0, 12.5 * 2**30, 655e6, 64, 1)
    True
    """
    held = int(l2_kv_bytes // kv_bytes_per_sequence) if kv_bytes_per_sequence > 0 else 0
    per_step = sequences / min(float(pp), max(1.0, sequences)) if pp > 1 else sequences
    charged = per_step * kv_bytes_per_sequence > l2_kv_bytes
    return ("vLLM runs attention with FlashAttention 2 on this GPU, which reads a KV head's cache once for all its "
            "query heads only in a step of decodes alone (flash-attention mha_varlen_fwd, max_seqlen_q == 1): a step "
            f"that also carries a prompt chunk reads each decoding sequence's cache {factor:g}x (once per query head), "
            f"charged where the step's decodes hold more than {held:,} sequences' caches at the average length "
            "(beyond that the one KV head's cache of every sequence, which the kernel reads between two heads of a "
            f"group, outgrows the GPU's L2); {'charged' if charged else 'not charged'} at this plan's "
            f"{sequences:,.0f} running sequences a replica{f' ({per_step:,.0f} a micro-batch)' if pp > 1 else ''}; "
            "steps of decodes alone read it once")


def mixed_attention_assumption(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, sequences: float) -> str | None:
    """:func:`mixed_attention_line` of a serving plan's ``setup`` at its ``sequences`` a replica, or None where its
    steps read the decodes' caches once whatever they carry (:func:`mixed_step_kv_read_factor` is 1)."""
    factor = mixed_step_kv_read_factor(model, gpu, engine=setup.engine, tp=setup.tp, attention_dp=setup.attention_dp,
                                       kv_fp8=setup.kv_fp8)
    if factor <= 1.0:
        return None
    l2_kv_bytes = mixed_step_l2_kv_bytes(model, gpu, tp=setup.tp, pp=setup.pp, attention_dp=setup.attention_dp)
    return mixed_attention_line(factor, l2_kv_bytes, setup.kv_bytes_per_sequence_per_gpu, sequences, setup.pp)


def mixed_attention_sweep_line(model: ModelSpec, gpus: Iterable[GpuSpec], engine: str) -> str | None:
    """What a serving sweep charges for :func:`mixed_step_kv_read_factor` on the ``gpus`` where it is above 1 (its
    factor at TP 1 said; a layout's own TP sets its own), or None where no GPU's vLLM runs FlashAttention 2."""
    factors = {gpu.name: mixed_step_kv_read_factor(model, gpu, engine=engine, tp=1) for gpu in gpus}
    names = sorted(name for name, factor in factors.items() if factor > 1.0)
    if not names:
        return None
    return (f"On {', '.join(names)} vLLM runs attention with FlashAttention 2, which reads a KV head's cache once for "
            "all its query heads only in a step of decodes alone: a step that also carries a prompt chunk is timed "
            f"reading each decoding sequence's cache once per query head a GPU holds ({factors[names[0]]:g}x at TP 1), "
            "where the step's decodes' caches outgrow what the GPU's L2 keeps between a group's heads (the L2 x the "
            "stage's layers x the KV heads a GPU holds); an FP8 KV cache (another backend) and steps of decodes alone "
            "read it once.")
