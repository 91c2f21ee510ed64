"""Each layout's own rung of a serving sweep's concurrency ladder (:mod:`anchorgpu.planner.sweep_ladder`): the most
sequences it runs at once, as ``plan --concurrency N`` sizes them. The ladder's powers of two price a layout whose
capacity falls between two rungs at the rung below it: three vLLM engines of 1,024 sequences each (TP 8 x DP 3)
run 3,072 at once, and the ladder had 2,048 and 4,096. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.media import MediaLoad
from anchorgpu.planner.sweep_serving_memory import CrossRequest, KvFactors, Memory, kv_factors, memory_terms

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_grid import Layouts
    from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec

__all__ = ["saturation_rungs"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


def saturation_rungs(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                     weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                     media: MediaLoad | None = None, cross: CrossRequest | None = None) -> IntArray:
    """``(W x K, L)``: for each weight format and KV dtype (weights first), each layout's DP times the sequences a
    replica holds, each of ``context_tokens``, within its engine's budget after its weights, activation peak and
    non-torch memory (the most for which the sweep's memory, which is plan's, fits), at most its engine's sequence
    cap (vLLM's max_num_seqs, SGLang's max_running_requests, TensorRT-LLM's max_batch_size); at least 2, the
    fewest sequences ``plan`` sizes at the request rather than at the model's window (a layout that holds fewer
    then does not fit at its rung, as at any other)."""
    one = np.ones((1, len(lay)), dtype=np.int64)
    kv = kv_factors(model, spec, lay, kvs, (context_tokens,), prompt, output, media, cross, shapes)
    mem = memory_terms(model, shapes, spec, lay, weights, kv, one)
    # what one sequence adds, unrounded (the cache of n sequences is each term rounded up once: at most n times this)
    per_sequence = _cache_bytes(kv, lay, 1.0, rounded=False)
    if kv.media is not None and kv.media.cross_tokens:
        per_sequence = per_sequence + mem.kv_cache - _cache_bytes(kv, lay, 1.0, rounded=True)
    free = mem.budget - mem.weights - mem.activations - mem.other  # (W, 1, 1, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        held = np.floor(np.maximum(free, 0.0) / per_sequence)  # (W, K, 1, L)
    held = np.where(np.isfinite(held), held, 0.0)
    # the rounding up may take the last one past the budget: one fewer there (the sweep's own sum, in its order)
    held -= _total(mem, _cache_bytes(kv, lay, held, rounded=True), held, per_sequence, kv, lay) > mem.budget
    caps = np.array([engine_limits(spec.workload, large_gpu=large_engine_defaults(sh.gpu))[1] for sh in shapes],
                    dtype=np.float64)[lay.shape]
    rungs = lay.dp * np.clip(held, 0.0, caps)
    out: IntArray = np.maximum(rungs, 2.0).astype(np.int64).reshape(len(weights) * len(kvs), len(lay))
    return out


def _cache_bytes(kv: KvFactors, lay: Layouts, sequences: FloatArray | float, *, rounded: bool) -> FloatArray:
    """The KV cache and recurrent state of ``sequences`` a replica, as the sweep sizes them
    (``sweep_serving_memory._kv_cache``), each term rounded up (``rounded``) or not; without cross-attention K/V."""
    cache = kv.slot_bytes * sequences * kv.stage_layers / kv.n_layers
    state = kv.state_per_sequence * sequences * kv.stage_layers / (lay.tp * kv.n_layers) if kv.state_per_sequence else 0.0
    if rounded:
        cache, state = np.ceil(cache), np.ceil(state)
    return np.asarray(cache + state, dtype=np.float64)


def _total(mem: Memory, cache: FloatArray, held: FloatArray, per_sequence: FloatArray, kv: KvFactors,
           lay: Layouts) -> FloatArray:
    """Bytes per GPU of ``held`` sequences a replica, summed as the sweep sums them; a cross-attention K/V at
    ``held`` times one sequence's, at least what it is (``media.cross_kv_bytes`` rounds up once)."""
    if kv.media is not None and kv.media.cross_tokens:
        cache = cache + held * (per_sequence - _cache_bytes(kv, lay, 1.0, rounded=False))
    total = mem.weights + cache
    total += mem.activations + mem.other
    return np.asarray(total, dtype=np.float64)
