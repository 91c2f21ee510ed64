"""What a TensorRT-LLM decode step reads of Llama 4's chunked-attention layers where its fast decode kernel refuses them.

Llama 4's RoPE layers attend within chunks of ``attention_chunk_size`` tokens (8,192; its NoPE layers, every fourth,
attend to every token). The planner counts a chunked layer as a window of the chunk (``ModelSpec.layer_windows``).
On TensorRT-LLM the decode kernel that reads them depends on the GPU:

* ``Llama4Attention`` (NVIDIA/TensorRT-LLM@3a5901cd ``tensorrt_llm/_torch/models/modeling_llama.py``) passes the
  chunk to the attention op unless the engine's ``max_seq_len`` is below it ("Disable chunked attention when
  max_seq_len is smaller than attention_chunk_size"); trtllm-bench sets ``max_seq_len`` to the requests' prompt plus
  output, so only sequences longer than a chunk run chunked layers.
* The op's generation phase sets ``xqaParams.chunked_attention_size`` to the chunk (``attentionOp.cpp``, stored id
  190937516). ``XqaDispatcher`` runs the trtllm-gen kernels, which take ``mChunkedAttentionSize``, only on the SM100
  family (``mUseTllmGen(isSM100Family())``, ``xqaDispatcher.cpp``, stored id 191524715); on every other GPU it runs
  the JIT XQA kernels, whose ``supportConfigCommon`` returns false for any ``chunked_attention_size != INT_MAX``
  ("TODO: chunked attention is not supported yet", ``decoderXQAImplJIT/kernelUtils.cpp``, stored id 57002994317).
* The op then falls back to the masked multi-head attention kernel (MMHA), which launches one block per query head
  and sequence, each reading its KV head's cache: a grouped-query layer's cache is read once per query head of the
  group (``num_attention_heads / num_kv_heads``, 5 for Llama 4), where XQA reads it once for the group.

So on Hopper (and Ampere, Ada, SM12x) a sequence longer than a chunk reads each chunked layer's cache ``group``
times a step; on B200/GB200 once. The planner reads the chunked layers at :func:`chunked_read_factor` times their
window. Only the step's read changes: the cache the engine holds is as before.
"""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec


def chunked_read_factor(model: ModelSpec, gpu: GpuSpec | None, engine: str, sequence_tokens: int) -> int:
    """How many times a decode step reads a chunked-attention layer's cache: the query heads a KV head serves where
    TensorRT-LLM's decode falls back to MMHA (a Llama 4 model, TensorRT-LLM, a GPU outside the SM100 family, sequences
    of prompt plus output longer than the chunk), else 1.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> scout = load_model("llama-4-scout-17b-16e")
    >>> chunked_read_factor(scout, get_gpu("h200"), "trtllm", 22_000), chunked_read_factor(scout, get_gpu("b200"), "trtllm", 22_000)
    (5, 1)
    >>> chunked_read_factor(scout, get_gpu("h200"), "trtllm", 5_500), chunked_read_factor(scout, get_gpu("h200"), "vllm", 22_000)
    (1, 1)
    """
    # chunked windows come only from Llama 4's reader (architectures.families.moe: attention_chunk_size)
    if (engine != "trtllm" or gpu is None or gpu.compute_capability is None  # no CUDA kernels named: nothing said
            or not model.model_type.startswith("llama4") or model.num_kv_heads <= 0):
        return 1
    chunk = min((w for w in model.layer_windows if w is not None), default=None)
    if chunk is None or sequence_tokens <= chunk:
        return 1
    if gpu.compute_capability.rstrip("?").split(".")[0] == "10":  # SM100 family (10.0, 10.3): trtllm-gen takes the chunk
        return 1
    return max(1, model.num_attention_heads // model.num_kv_heads)


def chunked_read_scale(model: ModelSpec, cached_tokens: int, factor: int) -> float:
    """The step's KV read of one sequence of ``cached_tokens`` with its windowed layers read ``factor`` times, over
    the same read once (the token slots of :meth:`ModelSpec.kv_values_for_context`, per layer alike).

    >>> from anchorgpu.architectures import load_model
    >>> scout = load_model("llama-4-scout-17b-16e")   # 12 full layers, 36 chunked at 8,192
    >>> round(chunked_read_scale(scout, 21_000, 5), 3)   # (12 x 21,000 + 5 x 36 x 8,192) / (12 x 21,000 + 36 x 8,192)
    3.157
    """
    if factor == 1:
        return 1.0
    plain = scaled = 0
    for window in model.attention_windows:
        held = cached_tokens if window is None else min(cached_tokens, window)
        plain += held
        scaled += held if window is None else factor * held
    return scaled / plain if plain else 1.0
