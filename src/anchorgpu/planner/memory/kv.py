"""KV cache and recurrent state per GPU, in bytes: paged blocks, sliding-window layers, MLA latents and a
recurrent layer's fixed state, and the longest context a capacity holds (:mod:`anchorgpu.planner.memory`). Pure;
stdlib only."""

from __future__ import annotations

import math
from functools import lru_cache

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.memory.model_states import stage_layers
from anchorgpu.units import ceil_div

# --------------------------------------------------------------------------------------------------
# KV cache
# --------------------------------------------------------------------------------------------------

def kv_values_per_token_per_gpu(model: ModelSpec, *, tp: int, attention_dp: bool = False) -> float:
    """Cached values per token per layer on one TP rank.

    MHA/GQA/MQA: 2 · max(1, kv/t) · d (heads replicated when t > kv; vLLM ``kv_heads_per_rank``).
    MLA: kv_lora_rank + qk_rope_head_dim, no factor 2, and the latent is whole on every TP rank
    (vLLM replicates it). Source: formulas.md section 5 item 3.

    ``attention_dp``: the ``tp`` ranks run attention data-parallel (TensorRT-LLM's ``enable_attention_dp``), each
    holding its own sequences' cache with every KV head (``KVCacheManager`` takes ``tp_size = 1`` under attention DP:
    NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/resource_manager.py``, 001541b), so nothing is replicated and
    a GPU holds, on average over its group, 1/t of every sequence's cache: 2 · kv · d / t (the latent / t for MLA).

    >>> from anchorgpu.planner._examples import llama_3_1_70b
    >>> kv_values_per_token_per_gpu(llama_3_1_70b(), tp=8), kv_values_per_token_per_gpu(llama_3_1_70b(), tp=16)
    (256, 256)
    >>> kv_values_per_token_per_gpu(llama_3_1_70b(), tp=16, attention_dp=True)  # 8 KV heads whole, 1/16 of the sequences
    128.0
    """
    if attention_dp:
        whole = (model.mla.cache_values_per_token_per_layer if model.mla is not None
                 else 2 * model.num_kv_heads * model.head_dim)
        return whole / tp
    if model.mla is not None:
        return model.mla.cache_values_per_token_per_layer
    return 2 * max(1, model.num_kv_heads // tp) * model.head_dim


def kv_cache_bytes(
    model: ModelSpec, *, context_tokens: int, sequences: int, bytes_per_value: float, tp: int, pp: int,
    block_size: int = 16, attention_dp: bool = False,
) -> int:
    """KV cache per GPU for ``sequences`` of ``context_tokens`` each, most-loaded pipeline stage.

    Per layer: ceil(min(context, window) / block) · block tokens (paged; sliding-window layers keep only
    their window) × :func:`kv_values_per_token_per_gpu` × bytes per value; summed over layers, times
    ceil(L/p)/L for the pipeline stage. Sources: vLLM ``kv_cache_interface.py`` page size
    ``2 · block · kv_heads_per_rank · d · dtype``; formulas.md section 5. ``attention_dp``: the ranks hold their own
    sequences' caches whole, a GPU's average share (:func:`kv_values_per_token_per_gpu`).

    Llama-3.1-8B, one sequence of 8,192 tokens, bf16, TP 1: 32 · 2 · 8 · 128 · 2 · 8192 = 1 GiB.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> kv_cache_bytes(llama_3_1_8b(), context_tokens=8192, sequences=1, bytes_per_value=2, tp=1, pp=1)
    1073741824
    """
    values, groups, stage, layers = _kv_shape(model, tp, pp, attention_dp)
    token_slots = _token_slots(groups, context_tokens, block_size)
    return math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers)


def kv_cache_bytes_one_and_all(
    model: ModelSpec, *, context_tokens: int, sequences: int, bytes_per_value: float, tp: int, pp: int,
    block_size: int = 16, attention_dp: bool = False,
) -> tuple[int, int]:
    """(:func:`kv_cache_bytes` of one sequence, of ``sequences``): the same two values, the paged token slots
    counted once for both (a serving plan sizes the cache per sequence and for the sequences of a replica).

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> kv_cache_bytes_one_and_all(llama_3_1_8b(), context_tokens=8192, sequences=4, bytes_per_value=2, tp=1, pp=1)
    (1073741824, 4294967296)
    """
    token_slots, values, stage, layers = _slots_and_shape(model, context_tokens, tp, pp, block_size, attention_dp)
    one = math.ceil(token_slots * values * bytes_per_value * 1 * stage / layers)  # kv_cache_bytes at sequences=1
    return one, math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers)


def kv_cache_bytes_and_shape(model: ModelSpec, context_tokens: int, sequences: int, bytes_per_value: float, tp: int,
                             pp: int, block_size: int, attention_dp: bool) -> tuple[int, int, _KvShape]:
    """:func:`kv_cache_bytes_one_and_all`'s two values, its arguments by position (the same operations), and the
    :func:`kv_shape` they were sized with: what a serving plan sizes its cache with and hands its speed estimate
    (``planner.serving_handoff``).

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> kv_cache_bytes_and_shape(llama_3_1_8b(), 8192, 4, 2, 1, 1, 16, False)[:2]
    (1073741824, 4294967296)
    """
    hit = _KV_SHAPES.get((id(model), tp, pp, attention_dp))
    shape = hit[1] if hit is not None and hit[0] is model else _kv_shape(model, tp, pp, attention_dp)
    values, groups, stage, layers = shape
    token_slots = 0
    for window, count in groups:  # _token_slots, inline
        tokens = context_tokens if window is None else min(context_tokens, window)
        token_slots += -(-tokens // block_size) * block_size * count  # ceil_div(tokens, block_size)
    one = math.ceil(token_slots * values * bytes_per_value * 1 * stage / layers)  # kv_cache_bytes at sequences=1
    return one, math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers), shape


def kv_sequence_bytes(model: ModelSpec, context_tokens: int, bytes_per_value: float, tp: int, pp: int, block_size: int,
                      attention_dp: bool) -> int:
    """:func:`kv_cache_bytes` of one sequence, its arguments by position (the same operations): what a serving
    estimate asks a few times a plan, without the keyword matching.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> kv_sequence_bytes(llama_3_1_8b(), 8192, 2, 1, 1, 16, False)
    1073741824
    """
    token_slots, values, stage, layers = _slots_and_shape(model, context_tokens, tp, pp, block_size, attention_dp)
    return math.ceil(token_slots * values * bytes_per_value * 1 * stage / layers)  # kv_cache_bytes at sequences=1


def _slots_and_shape(model: ModelSpec, context_tokens: int, tp: int, pp: int, block_size: int,
                     attention_dp: bool) -> tuple[int, float, int, int]:
    """A sequence's token slots over the layers (:func:`_token_slots`, inline) and :func:`_kv_shape`'s values a
    token, stage layers and layers (its memo read in place): what the serving estimate's KV sizes multiply."""
    hit = _KV_SHAPES.get((id(model), tp, pp, attention_dp))
    values, groups, stage, layers = hit[1] if hit is not None and hit[0] is model else _kv_shape(model, tp, pp,
                                                                                                   attention_dp)
    token_slots = 0
    for window, count in groups:
        tokens = context_tokens if window is None else min(context_tokens, window)
        token_slots += -(-tokens // block_size) * block_size * count  # ceil_div(tokens, block_size)
    return token_slots, values, stage, layers


def _token_slots(groups: tuple[tuple[int | None, int], ...], context_tokens: int, block_size: int) -> int:
    """Token slots a sequence of ``context_tokens`` takes over the layers by attention window: each layer's tokens
    (a sliding-window layer's at most its window) in whole blocks."""
    token_slots = 0
    for window, count in groups:
        tokens = context_tokens if window is None else min(context_tokens, window)
        token_slots += -(-tokens // block_size) * block_size * count  # ceil_div(tokens, block_size)
    return token_slots


def longest_kv_context(
    model: ModelSpec, *, capacity: int, sequences: int, bytes_per_value: float, tp: int, pp: int, block_size: int,
    limit: int, attention_dp: bool = False,
) -> int:
    """Longest context, at most ``limit`` tokens, whose :func:`kv_cache_bytes` for ``sequences`` fits ``capacity``.

    The same answer as a bisection over ``kv_cache_bytes`` from 0 to ``limit`` (the cache grows with the
    context, one block at a time), found on the block count instead: below ``limit`` it is a whole number of
    blocks, each candidate costs one pass over the window groups with the same arithmetic, and the search
    starts from the count the full-attention rate gives (exact for models without sliding windows).

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> longest_kv_context(llama_3_1_8b(), capacity=2**30, sequences=1, bytes_per_value=2, tp=1, pp=1,
    ...                    block_size=16, limit=131072)
    8192
    """
    if capacity < 0:
        return 0
    values, groups, stage, layers = _kv_shape(model, tp, pp, attention_dp)

    def fits(blocks: int) -> bool:  # kv_cache_bytes at blocks · block_size tokens, the same operations in order
        token_slots = 0
        for window, count in groups:
            used = blocks if window is None else min(blocks, ceil_div(window, block_size))
            token_slots += used * block_size * count
        return math.ceil(token_slots * values * bytes_per_value * sequences * stage / layers) <= capacity

    top = -(-limit // block_size)  # ceil_div(limit, block_size)
    if fits(top):
        return limit
    lo, hi = 0, top - 1  # fits(0) holds (an empty cache); nothing above hi fits
    per_block = block_size * _attention_layers(groups) * values * bytes_per_value * sequences * stage / layers
    guess = min(hi, int(capacity // per_block)) if per_block > 0 else hi
    step = 1
    if fits(guess):
        lo = guess
        while lo + step <= hi:
            if not fits(lo + step):
                hi = lo + step - 1
                break
            lo += step
            step *= 2
    else:
        hi = guess - 1
        while hi - step + 1 > lo:
            if fits(hi - step + 1):
                lo = hi - step + 1
                break
            hi -= step
            step *= 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo * block_size


STATE_BYTES_PER_VALUE = 2
"""Recurrent (Mamba/SSM, linear-attention) state in the model's 16-bit dtype: vLLM's ``mamba_cache_dtype`` and
``mamba_ssm_cache_dtype`` default to ``auto`` (the model dtype), whatever the KV-cache dtype; a model that pins
its SSM state to float32 (Nemotron-H's ``mamba_ssm_cache_dtype``) keeps 4 bytes there (``RecurrentSpec``).
Source: vLLM ``model_executor/layers/mamba/mamba_utils.py`` (``MambaStateDtypeCalculator``: ``auto`` resolves to
the model dtype), docs.vllm.ai v0.10.2."""


def recurrent_state_bytes(
    model: ModelSpec, *, sequences: int, tp: int, pp: int, bytes_per_value: float = STATE_BYTES_PER_VALUE,
) -> int:
    """Recurrent state per GPU for ``sequences`` sequences, most-loaded pipeline stage; independent of length.

    Per sequence: Σ over recurrent layers of the convolution state and the SSM state
    (:meth:`ModelSpec.state_bytes_per_sequence`), split over the TP ranks (vLLM shards the mixer heads and
    channels) and by ceil(L/p)/L for the stage. A transformer has none.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> recurrent_state_bytes(llama_3_1_8b(), sequences=8, tp=1, pp=1)
    0
    """
    per_sequence = model.state_bytes_per_sequence(bytes_per_value)
    if per_sequence == 0:
        return 0
    stage = stage_layers(model.num_layers, pp)
    return math.ceil(per_sequence * sequences * stage / (tp * max(1, model.num_layers)))


_KvShape = tuple[float, tuple[tuple[int | None, int], ...], int, int]
_KV_SHAPES: dict[tuple[int, int, int, bool], tuple[ModelSpec, _KvShape]] = {}


def _kv_shape(model: ModelSpec, tp: int, pp: int, attention_dp: bool = False) -> _KvShape:
    """(values per token per layer on one GPU, layers by attention window, layers of the most-loaded stage,
    max(1, layers)): the part of a KV-cache size that depends on the model and the split only, memoised per
    (frozen) model object and split; a plan asks for it several times, and every plan of that split reuses it."""
    key = (id(model), tp, pp, attention_dp)
    hit = _KV_SHAPES.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    shape = (kv_values_per_token_per_gpu(model, tp=tp, attention_dp=attention_dp), _window_groups(model.attention_windows),
             stage_layers(model.num_layers, pp), max(1, model.num_layers))
    if len(_KV_SHAPES) >= 1024:
        _KV_SHAPES.clear()
    _KV_SHAPES[key] = (model, shape)
    return shape


@lru_cache(maxsize=256)
def _attention_layers(groups: tuple[tuple[int | None, int], ...]) -> int:
    """The layers in the window groups (the KV-caching layers)."""
    return sum(count for _, count in groups)


@lru_cache(maxsize=256)
def _window_groups(windows: tuple[int | None, ...]) -> tuple[tuple[int | None, int], ...]:
    """Layers grouped by attention window: ((window, layer count), …) in first-seen order."""
    counts: dict[int | None, int] = {}
    for window in windows:
        counts[window] = counts.get(window, 0) + 1
    return tuple(counts.items())
