"""The memory part of the serving sweep (:mod:`anchorgpu.planner.sweep_serving`): weights, KV cache, the engine's
activation peak and budget of every layout x weight format x KV-cache dtype x concurrency, in numpy, as
:func:`anchorgpu.planner.plan` sizes them (``tests/recommend`` holds them to it). Terms live on the axes they depend
on: per layout ``(L,)``, per concurrency and layout ``(C, L)``, per KV dtype ``(K, 1, L)``, per weight format
``(W, 1, 1, L)``."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner.engine_limits import block_size_of, engine_limits, large_engine_defaults
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.inputs import DEFAULT_GPU_MEMORY_UTILIZATION, KV_CACHE_DTYPES
from anchorgpu.planner.media import MediaLoad, cross_kv_bytes
from anchorgpu.planner.serving_engine import engine_rope_table_bytes
from anchorgpu.planner.sglang import sglang_gpu_memory_bytes
from anchorgpu.planner.speed.chunked_attention import chunked_read_factor, chunked_read_scale
from anchorgpu.planner.speed.lookup_tables import named_lookup_edges
from anchorgpu.planner.sweep_sglang import settings_by_layout
from anchorgpu.planner.terms import context_bytes
from anchorgpu.planner.weight_parts import ModelParts, model_weight_parts

if TYPE_CHECKING:
    from anchorgpu.planner.inputs import Workload
    from anchorgpu.planner.sweep_grid import Layouts
    from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec

__all__ = ["CrossRequest", "KvFactors", "Memory", "kv_factors", "memory_terms", "per_format", "per_value", "sequence_caps"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Array = npt.NDArray[Any]


def token_slots(model: ModelSpec, context_tokens: int, block_size: int) -> int:
    """KV token slots summed over the attention layers, paged and window-capped: the inner sum of
    :func:`anchorgpu.planner.memory.kv_cache_bytes` (layers grouped by their window)."""
    windows = model.attention_windows
    return sum(count * math.ceil((context_tokens if w is None else min(context_tokens, w)) / block_size) * block_size
               for w, count in Counter(windows).items())


@lru_cache(maxsize=128)
def weight_parts(model: ModelSpec, weights_format: str) -> ModelParts:
    """:func:`anchorgpu.planner.weight_parts.model_weight_parts`, once per (model, format): models are frozen."""
    return model_weight_parts(model, format_for_model(model, weights_format))


def per_value(keys: IntArray, fn: Callable[[int], float]) -> IntArray:
    """``fn`` applied once per distinct key, mapped back onto ``keys``."""
    unique, inverse = np.unique(keys, return_inverse=True)
    return np.array([fn(int(k)) for k in unique.tolist()], dtype=np.int64)[inverse]


def per_format(values_lw: FloatArray) -> FloatArray:
    """A (layout, format) table as ``(W, 1, 1, L)``, in that memory order (so results computed from it keep the
    layouts innermost: numpy gives a result the memory order of its inputs)."""
    return np.ascontiguousarray(values_lw.T)[:, None, None, :]


def weights_per_gpu(model: ModelSpec, lay: Layouts, weights: tuple[str, ...]) -> FloatArray:
    """Weight bytes per GPU, ``(W, 1, 1, L)``: the scalar :func:`memory.shard_share` once per (format, TP, PP)."""
    try:
        parts = [weight_parts(model, name) for name in weights]
    except TypeError:  # a model record that cannot be hashed: compute without the cache
        parts = [model_weight_parts(model, format_for_model(model, name)) for name in weights]
    tp_pp, tp_pp_row = np.unique(lay.tp * 4096 + lay.pp, return_inverse=True)
    weights_uw = np.array([[mm.shard_share(part, tp=key // 4096, pp=key % 4096, ep=1) for part in parts]
                           for key in tp_pp.tolist()], dtype=np.float64)
    return per_format(weights_uw[tp_pp_row])


def streamed_weights(model: ModelSpec, lay: Layouts, weights: tuple[str, ...], weights_wl: FloatArray) -> FloatArray:
    """The weight bytes a serving step streams, ``(W, 1, 1, L)``: those held (``weights_wl``, :func:`weights_per_gpu`'s)
    less the tables the step only gathers rows from (an untied token embedding), as the scalar setup takes them off
    (:func:`~anchorgpu.planner.speed.lookup_tables.lookup_table_bytes_per_gpu`, the same operations);
    ``weights_wl`` itself where the model has none."""
    edges = np.array([named_lookup_edges(model, name) for name in weights])
    if not edges.any():
        return weights_wl
    return weights_wl - per_format(np.where((lay.pp > 1)[:, None], edges[:, 1], edges[:, 0]) / lay.tp[:, None])


@dataclass(frozen=True, slots=True)
class Memory:
    """Memory per GPU of every configuration (bytes), on the axes each part depends on."""

    weights: FloatArray  # (W, 1, 1, L)
    kv_cache: FloatArray  # (K, C, L)
    activations: FloatArray  # (L,)
    other: Array  # (L,) non-torch (as the overheads give it)
    budget: FloatArray  # (L,); TensorRT-LLM's and SGLang's, which follow the weights: (W, 1, 1, L)
    reserve: FloatArray | None = None  # (L,) SGLang's: the memory free at start outside mem_fraction_static; else None


def memory_terms(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
            weights: tuple[str, ...], kv: KvFactors, per_replica: IntArray) -> Memory:
    """Weights, KV cache, activations (the engine's profile run), non-torch and the budget, as plan() sizes them: the
    KV cache and state of the ``per_replica`` sequences, at most those a replica's engine runs at once
    (:func:`sequence_caps`; the rest wait in its queue holding none, :mod:`~anchorgpu.planner.serving_queue`)."""
    w, ov = spec.workload, spec.overheads
    per_replica = np.minimum(per_replica, sequence_caps(shapes, w, lay))
    trtllm = w.engine == "trtllm"
    if w.engine == "sglang":
        return _sglang_terms(model, shapes, spec, lay, weights, kv, per_replica)
    large = np.array([large_engine_defaults(sh.gpu) for sh in shapes], dtype=np.int64)[lay.shape]

    def activation(key: int) -> int:  # the engine's defaults (vLLM's by GPU size), as plan() resolves them
        tp, big = key // 2, bool(key % 2)
        tokens, seqs = engine_limits(w, large_gpu=big)
        sampler = 0 if trtllm else mm.sampler_activation_bytes(sequences=min(tokens, seqs), vocab=model.vocab_size)
        return mm.prefill_activation_bytes(model, tokens=tokens, tp=tp) + sampler

    act_l = per_value(lay.tp * 2 + large, activation).astype(np.float64)
    # non-torch memory and the engine's RoPE table, as plan() counts them (serving_engine._engine_footprint)
    non_torch_l = np.where(lay.tp * lay.pp == 1, ov.serving_non_torch_tp1_bytes,
                           ov.serving_non_torch_multi_bytes) + engine_rope_table_bytes(model, w.engine)
    mem_s = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)
    weights_w11l = weights_per_gpu(model, lay, weights)
    if trtllm:  # the KV cache is a share of what the profiling pass (the CUDA context counted) leaves free
        used = weights_w11l + act_l + non_torch_l
        context_l = np.array([context_bytes(sh.gpu, ov) for sh in shapes], dtype=np.float64)[lay.shape]
        free = np.trunc((w.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION)
                        * (mem_s[lay.shape] - used - context_l))
        budget = np.minimum(used + free, mem_s[lay.shape] - context_l)  # as plan(): never past the memory free
    else:
        budget = np.ceil(mem_s[lay.shape] * (w.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION))
    return Memory(weights=weights_w11l, kv_cache=_kv_cache(model, lay, kv, per_replica), activations=act_l,
                  other=non_torch_l, budget=budget)


def _sglang_terms(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                  weights: tuple[str, ...], kv: KvFactors, per_replica: IntArray) -> Memory:
    """:func:`memory_terms` under SGLang: the prefill chunk and ``mem_fraction_static`` per (GPU, TP, PP) as
    :func:`anchorgpu.planner.sglang.sglang_settings` derives them (no attention DP here: the sweep plans those
    layouts one by one), the KV pool that fraction of the memory free at start less the weights, as plan() sizes it."""
    w, ov = spec.workload, spec.overheads
    settings, inverse = settings_by_layout(shapes, lay.shape, lay.tp, lay.pp, w, model.mla is not None)
    act_l = np.array([mm.prefill_activation_bytes(model, tokens=s.chunked_prefill_size, tp=tp) for tp, s in settings],
                     dtype=np.float64)[inverse]
    fraction_l = np.array([s.mem_fraction_static for _, s in settings], dtype=np.float64)[inverse]
    non_torch_l = np.where(lay.tp * lay.pp == 1, ov.serving_non_torch_tp1_bytes, ov.serving_non_torch_multi_bytes)
    mem_l = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)[lay.shape]
    context_l = np.array([context_bytes(sh.gpu, ov) for sh in shapes], dtype=np.float64)[lay.shape]
    weights_w11l = weights_per_gpu(model, lay, weights)
    start_free = mem_l - context_l - non_torch_l
    share = np.trunc(fraction_l * start_free)
    free = share - weights_w11l
    budget = weights_w11l + act_l + non_torch_l + free  # as plan(): never clamped, short by the weights' excess too
    # what mem_fraction_static leaves for the activations: a layout whose prefill peak exceeds it plan() refuses
    # (engine_startup.sglang_reserve_refusal); the sweep marks it as not fitting (sweep_serving.serving_columns)
    return Memory(weights=weights_w11l, kv_cache=_kv_cache(model, lay, kv, per_replica), activations=act_l,
                  other=non_torch_l, budget=budget, reserve=start_free - share)


def _kv_cache(model: ModelSpec, lay: Layouts, kv: KvFactors, per_replica: IntArray) -> FloatArray:
    """The KV cache and recurrent state of ``per_replica`` sequences, ``(K, C, L)``."""
    # the exact form of memory.kv_cache_bytes, then the recurrent state (memory.recurrent_state_bytes)
    kv_kcl = np.ceil(kv.slot_bytes * per_replica * kv.stage_layers / kv.n_layers)
    if kv.state_per_sequence:
        kv_kcl = kv_kcl + np.ceil(kv.state_per_sequence * per_replica * kv.stage_layers / (lay.tp * kv.n_layers))
    if kv.media is not None and kv.media.cross_tokens:  # an encoder's or the images' cross-attention K/V
        kv_kcl = kv_kcl + _cross_kv(model, kv.media, lay, kv.kv_caches, per_replica)
    return kv_kcl


@dataclass(frozen=True, slots=True)
class KvFactors:
    """Per (KV dtype, layout): bytes per sequence of the whole context and of the cached tokens a decode reads."""

    # float: nvfp4's 0.5625 bytes a value; whole numbers (exact in float64) for the others, as before
    slot_bytes: FloatArray  # (K, 1, L), (K, C, L) where the concurrencies' contexts differ: context slots x values
    # per token per GPU x bytes per value
    read_bytes: FloatArray  # (K, 1, L): the same for the tokens a decode step reads
    stage_layers: IntArray  # (L,)
    n_layers: int
    state_per_sequence: int | float  # recurrent state (bytes, all layers), 0 without one
    kv_caches: tuple[str, ...] = ()  # the KV dtypes of the K axis
    media: MediaLoad | None = None  # the request's encoder input or images: their cross-attention K/V per sequence
    cross_read: FloatArray | None = None  # (K, 1, L): the cross-attention K/V a decode step reads a sequence; None: none


@dataclass(frozen=True, slots=True)
class CrossRequest:
    """The request ``plan`` times for an encoder-decoder (Whisper, T5) or a model that reads its images through
    cross-attention (mllama), as its probe plan resolved it: ``prompt_tokens`` the speed prompt (the decoder's own
    prompt plus ``equivalent_tokens``, the encoder's or vision tower's prefill work as tokens of the same cost, which
    keep no decoder K/V), ``output_tokens`` the output it decodes (``speed.serving_setup.serving_setup``)."""

    prompt_tokens: int
    output_tokens: int
    equivalent_tokens: int


def kv_factors(model: ModelSpec, spec: SweepSpec, lay: Layouts, kvs: tuple[str, ...], contexts: tuple[int, ...],
               prompt: int, output: int, media: MediaLoad | None = None, cross: CrossRequest | None = None,
               shapes: Sequence[HardwareShape] = ()) -> KvFactors:
    """Per (KV dtype, layout) bytes of a sequence's cache, ``contexts`` tokens (one per concurrency: per (KV dtype,
    concurrency, layout) where they differ), and of what a decode step reads of it: the K/V at the
    request's ``prompt`` plus half its ``output`` (as plan times the request). With ``cross``
    (an encoder-decoder, or images read through cross-attention) a decode step reads, as plan times it, the decoder's
    own K/V at the request's decoder prompt plus half its output, and the cross-attention K/V over the encoder's
    output or the images (:func:`~anchorgpu.planner.media.cross_kv_bytes` of one sequence)."""
    values_l = per_value(lay.tp, lambda tp: mm.kv_values_per_token_per_gpu(model, tp=tp))
    bpv_k = np.array([KV_CACHE_DTYPES[k] for k in kvs], dtype=np.float64)[:, None, None]
    block = block_size_of(spec.workload)
    slots: int | IntArray = token_slots(model, contexts[0], block)
    if len(set(contexts)) > 1:  # one sequence at the window, more at the request (no length given): per concurrency
        by_tokens = {tokens: token_slots(model, tokens, block) for tokens in set(contexts)}
        slots = np.array([by_tokens[tokens] for tokens in contexts], dtype=np.int64)[:, None]
    cross_read = None
    cached = (prompt + output // 2 if cross is None else
              cross.prompt_tokens - cross.equivalent_tokens + cross.output_tokens // 2)
    read_slots: int | FloatArray = token_slots(model, cached, 1)
    if cross is not None and media is not None and media.cross_tokens:
        cross_read = _cross_kv(model, media, lay, kvs, np.ones((1, len(lay)), dtype=np.int64))
    # Llama 4's chunked layers read once a query head where TensorRT-LLM's decode falls back to MMHA, per GPU
    # (speed.chunked_attention, as plan's serving_setup reads them)
    factors = [chunked_read_factor(model, sh.gpu, spec.workload.engine, prompt + output) for sh in shapes]
    if any(f != 1 for f in factors):
        read_slots = read_slots * np.array([chunked_read_scale(model, cached, f) for f in factors])[lay.shape]
    return KvFactors(slot_bytes=(slots * values_l) * bpv_k, read_bytes=(read_slots * values_l) * bpv_k,
                      stage_layers=per_value(lay.pp, lambda pp: mm.stage_layers(model.num_layers, pp)),
                      n_layers=max(1, model.num_layers),
                      state_per_sequence=model.state_bytes_per_sequence(mm.STATE_BYTES_PER_VALUE),
                      kv_caches=kvs, media=media, cross_read=cross_read)


def _cross_kv(model: ModelSpec, media: MediaLoad, lay: Layouts, kvs: tuple[str, ...], per_replica: IntArray
              ) -> FloatArray:
    """Cross-attention K/V per GPU, ``(K, C, L)``: :func:`~anchorgpu.planner.media.cross_kv_bytes` itself, once per
    distinct (KV dtype, TP, PP, sequences a replica) of the grid."""
    tp_cl = np.broadcast_to(lay.tp, per_replica.shape)
    pp_cl = np.broadcast_to(lay.pp, per_replica.shape)
    keys = np.stack((tp_cl, pp_cl, per_replica), axis=-1).reshape(-1, 3)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    out = np.empty((len(kvs), *per_replica.shape))
    for k, name in enumerate(kvs):
        values = np.array([cross_kv_bytes(model, media, sequences=int(n), bytes_per_value=KV_CACHE_DTYPES[name],
                                          tp=int(tp), pp=int(pp)) for tp, pp, n in unique.tolist()], dtype=np.float64)
        out[k] = values[inverse.reshape(-1)].reshape(per_replica.shape)
    return out


def sequence_caps(shapes: Sequence[HardwareShape], w: Workload, lay: Layouts) -> IntArray:
    """The engine's sequence cap a replica of each layout ``(L,)``, by its GPU: the most sequences whose KV cache a
    replica holds (the rest wait: :mod:`~anchorgpu.planner.serving_queue`), as plan sizes it and recommend holds the
    rows to it (``recommend.eligibility.engine_cap``): the cap given, else the engine's default (SGLang's request
    pool's most, 4,096, below which its pool-derived ``max_running_requests`` binds only where the pool cannot hold
    that many sequences anyway: ``planner.sglang.max_running_requests``)."""
    return np.array([engine_limits(w, large_gpu=large_engine_defaults(sh.gpu),
                                   gpu_memory_bytes=sglang_gpu_memory_bytes(sh.gpu))[1]
                     for sh in shapes], dtype=np.int64)[lay.shape]
