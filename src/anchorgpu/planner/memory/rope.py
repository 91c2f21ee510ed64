"""The rotary-embedding (RoPE) cos/sin table an inference engine keeps on every GPU. Pure; stdlib only."""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec

__all__ = ["rope_table_bytes", "rotary_dims"]


def rotary_dims(model: ModelSpec) -> int:
    """Values a position's rotary angles take in the table (cos and sin of ``rotary_dims / 2`` frequencies): MLA's
    ``qk_rope_head_dim`` (DeepSeek-V3: 64), else the head dimension (the config's partial rotary factor is not kept
    on the spec, so a model that rotates part of a head is counted at the whole head); 0 for a model without
    attention layers.

    >>> from anchorgpu.architectures import load_model
    >>> rotary_dims(load_model("deepseek-r1")), rotary_dims(load_model("llama-4-scout-17b-16e"))
    (64, 128)
    """
    if model.attention_layers == 0:
        return 0
    return model.mla.qk_rope_head_dim if model.mla is not None else model.head_dim


def rope_table_bytes(model: ModelSpec, *, bytes_per_value: int) -> int:
    """The table an engine builds at load for every position up to the config's ``max_position_embeddings``
    (``max_context_tokens``) and shares across layers: positions x :func:`rotary_dims` x ``bytes_per_value``
    (``planner/data/rope_tables.json``: TensorRT-LLM float32, vLLM the model's 16-bit dtype).
    Llama 4 Scout's config gives 10,485,760 positions, so TensorRT-LLM holds 5 GiB of it on every GPU; Maverick's
    1,048,576 give 0.5 GiB.

    >>> from anchorgpu.architectures import load_model
    >>> rope_table_bytes(load_model("llama-4-scout-17b-16e"), bytes_per_value=4) / 2**30
    5.0
    >>> rope_table_bytes(load_model("llama-4-maverick-17b-128e-fp8"), bytes_per_value=4) / 2**30
    0.5
    """
    return model.max_context_tokens * rotary_dims(model) * bytes_per_value
