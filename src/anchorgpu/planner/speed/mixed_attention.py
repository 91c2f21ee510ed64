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
rereads. TensorRT-LLM and SGLang run other kernels.
"""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec

__all__ = ["mixed_step_kv_read_factor"]

_FA2_SM_MAJOR = 8  # vLLM's get_flash_attn_version: FlashAttention 3 on major 9, FlashAttention 2 on Ampere and Ada


def mixed_step_kv_read_factor(model: ModelSpec, gpu: GpuSpec, *, engine: str, tp: int,
                              attention_dp: bool = False) -> float:
    """How many times the planned KV read (a GPU's KV heads, once each) a decoding sequence's attention reads in a
    step that also holds a prompt chunk: the query heads a GPU holds over the KV heads it holds, where vLLM runs
    FlashAttention 2 (:mod:`this module <anchorgpu.planner.speed.mixed_attention>`); 1.0 elsewhere.

    The KV heads a GPU holds are ``max(1, kv_heads / tp)`` (vLLM replicates them past the KV head count, as
    ``memory.kv`` sizes them); under attention data parallelism every GPU holds all of them and all query heads.

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
    if engine != "vllm" or model.mla is not None or model.model_type == "gpt_oss":
        return 1.0
    capability = gpu.compute_capability
    if capability is None or int(capability.split(".")[0]) != _FA2_SM_MAJOR:
        return 1.0
    split = 1 if attention_dp else tp
    query_heads = model.num_attention_heads / split
    kv_heads = max(1.0, model.num_kv_heads / split)
    return query_heads / kv_heads if query_heads > kv_heads else 1.0
