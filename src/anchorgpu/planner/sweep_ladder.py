"""The concurrency ladder a serving sweep tries when the workload names no concurrency
(:mod:`anchorgpu.planner.sweep`): 1, 2, 4, ..., 512, then on by doubling while some layout swept could still run that
many users at once. A layout runs at most its engine's sequence cap a replica (vLLM's ``max_num_seqs``, 1,024 by
default on large GPUs; ``trtllm-serve``'s 2,048; SGLang's request pool: :func:`~anchorgpu.planner.engine_limits.engine_limits`)
and each data-parallel replica is an engine of its own, so a fixed top of 512 bound the large offerings (eight H200s
as eight attention replicas run up to 8,192). Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner.engine_limits import block_size_of, engine_limits, large_engine_defaults
from anchorgpu.planner.inputs import KV_CACHE_DTYPES, Workload
from anchorgpu.planner.media import MediaLoad, cross_kv_bytes
from anchorgpu.planner.sweep_attention_dp import attention_dp_rows
from anchorgpu.planner.sweep_serving_memory import weight_parts

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_grid import Layouts
    from anchorgpu.planner.sweep_types import HardwareShape

__all__ = ["BATCH_LADDER", "concurrency_ladder", "most_sequences"]

BATCH_LADDER: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
"""Concurrencies always tried when the workload names none; :func:`concurrency_ladder` doubles on past them."""


def most_sequences(model: ModelSpec, shapes: Sequence[HardwareShape], w: Workload, lay: Layouts,
                   weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int,
                   media: MediaLoad | None = None) -> int:
    """An upper bound on the users any serving layout swept runs at once: over the layouts ``lay`` and the
    one-server attention-DP layouts the sweep adds (:func:`~anchorgpu.planner.sweep_attention_dp.attention_dp_rows`), the most of
    DP x the sequences a replica runs, each the smaller of its engine's cap and what a GPU's whole memory holds after
    its lightest weights (the smallest of ``weights``), a sequence of ``context_tokens`` at the smallest of ``kvs``
    per value on the most-loaded pipeline stage, as the sweep sizes it, with the cross-attention K/V a sequence of an
    encoder-decoder or mllama keeps (``media``: Whisper's 1,500 frames are 245,760,000 B a sequence, far more than
    its 448 decoder tokens) (no activations, no runtime overhead, no memory-utilization margin: a bound no
    configuration that fits can pass)."""
    # (one server's: over the ladder a layout of several runs that many times each rung, sweep_attention_dp)
    one_server = attention_dp_rows(model, shapes, w.engine, several_servers=False)
    adp = np.array([(s, tp, pp, dp, ep) for s, _, _, tp, pp, dp, _, ep, _ in one_server],
                   dtype=np.int64).reshape(-1, 5)
    plain = np.stack((lay.shape, lay.tp, lay.pp, lay.dp, lay.ep), axis=1).astype(np.int64)
    shape, tp, pp, dp, ep = np.concatenate((plain, adp)).T
    cap_s = np.array([engine_limits(w, large_gpu=large_engine_defaults(sh.gpu))[1] for sh in shapes], dtype=np.float64)
    memory_s = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)
    block = block_size_of(w)
    value_bytes = min(KV_CACHE_DTYPES[k] for k in kvs)
    parts = [weight_parts(model, name) for name in weights]

    def per_split(key: int) -> tuple[float, float]:  # (weight bytes a GPU, bytes of a sequence a GPU) of a TP, PP, EP
        t, p, e = key // 2**24, key // 2**12 % 2**12, key % 2**12
        # one sequence's KV cache, recurrent state and cross K/V as plan() and the sweep charge them (memory.kv_cache_bytes,
        # memory.recurrent_state_bytes, media.cross_kv_bytes), each a byte under its rounded-up figure: n sequences are
        # charged at least n times that, so no configuration that fits holds more than the bound
        charged = (mm.kv_cache_bytes(model, context_tokens=context_tokens, sequences=1, bytes_per_value=value_bytes,
                                     tp=t, pp=p, block_size=block),
                   mm.recurrent_state_bytes(model, sequences=1, tp=t, pp=p),
                   cross_kv_bytes(model, media, sequences=1, bytes_per_value=value_bytes, tp=t, pp=p)
                   if media is not None and media.cross_tokens else 0)
        return (min(mm.shard_share(part, tp=t, pp=p, ep=e) for part in parts),
                float(sum(max(0, b - 1) for b in charged)))

    keys, inverse = np.unique((tp * 2**12 + pp) * 2**12 + ep, return_inverse=True)
    weights_u, sequence_u = np.array([per_split(int(k)) for k in keys.tolist()], dtype=np.float64).reshape(-1, 2).T
    free, per_sequence = memory_s[shape] - weights_u[inverse], sequence_u[inverse]
    with np.errstate(divide="ignore", invalid="ignore"):  # no cache a sequence (none in the registry): the cap alone
        held = np.fmin(cap_s[shape], np.floor(free / per_sequence))
    return int(np.max(dp * np.maximum(held, 0), initial=0))


def concurrency_ladder(model: ModelSpec, shapes: Sequence[HardwareShape], w: Workload, lay: Layouts,
                       weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int,
                       media: MediaLoad | None = None) -> tuple[int, ...]:
    """:data:`BATCH_LADDER`, then 1,024, 2,048, ... while at most :func:`most_sequences`: a power of two past it no
    layout swept can run, one at or below it some layout might, each rung twice the last as below 512 (so an offering
    is shown within a factor of two of the most users it runs, as it always was below 512).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.catalog import load_catalog
    >>> from anchorgpu.planner.sweep_grid import layout_grid
    >>> from anchorgpu.recommend import shapes_from_catalog
    >>> model = load_model("deepseek-v3")
    >>> shapes = [s for s in shapes_from_catalog(load_catalog().offerings) if s.id == "h200-8x-bm"]
    >>> lay = layout_grid(model, shapes, training=False, max_pp=8, zero_stages=(0,))
    >>> concurrency_ladder(model, shapes, Workload(task="inference"), lay, ("fp8-block128x128",), ("bf16",), 1280)[-4:]
    (512, 1024, 2048, 4096)
    """
    most = most_sequences(model, shapes, w, lay, weights, kvs, context_tokens, media)
    rungs = list(BATCH_LADDER)
    while rungs[-1] * 2 <= most:
        rungs.append(rungs[-1] * 2)
    return tuple(rungs)
