"""The serving sweep's ticks (:class:`~anchorgpu.planner.sweep_serving_ticks.Ticks`) of each (shape, TP, PP, EP), put on
the pairs that read them (:func:`~anchorgpu.planner.sweep_grid.tick_pairs`), and reused where the per-user limit search
formed them already (:class:`MadeTicks`); the engine's token budget a step of each pair. Shared by the grid
(:mod:`anchorgpu.planner.sweep_serving`) and the limit search (:mod:`anchorgpu.planner.sweep_serving_limits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.sglang import sglang_gpu_memory_bytes
from anchorgpu.planner.sweep_grid import Layouts, TickPairs
from anchorgpu.planner.sweep_serving_memory import KvFactors
from anchorgpu.planner.sweep_serving_ticks import Ticks

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape, SweepSpec

__all__ = ["MadeTicks", "group_ticks", "made_alike", "on_pairs", "pair_budget_tokens", "pair_ticks"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Array = npt.NDArray[Any]


def pair_budget_tokens(shapes: Sequence[HardwareShape], w: Workload, lay: Layouts, pairs: TickPairs) -> Array:
    """The engine's token budget a step of each pair ``(P,)``, by its GPU (as plan resolves the engine's defaults)."""
    rows = pairs.groups
    budget: Array = np.array([engine_limits(w, large_gpu=large_engine_defaults(sh.gpu),
                                            gpu_memory_bytes=sglang_gpu_memory_bytes(sh.gpu))[0]
                              for sh in shapes])[lay.shape[rows][pairs.group]]
    return budget


def pair_ticks(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
               weights: tuple[str, ...], kv: KvFactors, weights_bytes: FloatArray, pairs: TickPairs, prompt: int,
               output: int) -> Ticks:
    """The ticks of each pair of ``pairs`` (a representative layout a (shape, TP, PP, EP), then one entry a pair)."""
    return on_pairs(group_ticks(model, shapes, spec, lay, weights, kv, weights_bytes, pairs.groups, prompt, output),
                                pairs.group)


def group_ticks(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                weights: tuple[str, ...], kv: KvFactors, weights_bytes: FloatArray, rows: IntArray, prompt: int,
                output: int) -> Ticks:
    """The ticks of the layouts ``rows`` (one a (shape, TP, PP, EP)), one entry each, before they are put on pairs."""
    kv_rows = replace(kv, slot_bytes=kv.slot_bytes[..., rows], read_bytes=kv.read_bytes[..., rows],
                      stage_layers=kv.stage_layers[rows],
                      cross_read=None if kv.cross_read is None else kv.cross_read[..., rows])
    return Ticks(model, shapes, spec, lay.take(rows), weights, kv_rows, weights_bytes[..., rows], prompt, output)


@dataclass(frozen=True, slots=True)
class MadeTicks:
    """Ticks of the layouts ``rows`` (:func:`group_ticks`) and the KV factors and weight bytes they were formed from."""

    rows: IntArray
    kv: KvFactors
    weights_bytes: FloatArray
    ticks: Ticks


def made_alike(made: Sequence[MadeTicks], rows: IntArray, kv: KvFactors, weights_bytes: FloatArray
               ) -> Ticks | None:
    """Ticks already formed (``made``) that :func:`group_ticks` would form again from ``rows``, ``kv`` and
    ``weights_bytes``, else None: the same layouts, and equal every term a Ticks reads of the KV factors (a
    sequence's length sizes the memory, not the step: the limit search's factors at one context serve the grid's)
    and of the weights, so the same construction (a Ticks reads its layouts together: only the same set is reused)."""
    for m in made:
        if (np.array_equal(m.rows, rows) and np.array_equal(m.weights_bytes, weights_bytes)
                and np.array_equal(m.kv.read_bytes, kv.read_bytes) and np.array_equal(m.kv.stage_layers, kv.stage_layers)
                and m.kv.n_layers == kv.n_layers and m.kv.state_per_sequence == kv.state_per_sequence
                and m.kv.kv_caches == kv.kv_caches
                and _both_none_or_equal(m.kv.cross_read, kv.cross_read)):
            return m.ticks
    return None


def _both_none_or_equal(a: FloatArray | None, b: FloatArray | None) -> bool:
    return b is None if a is None else b is not None and np.array_equal(a, b)


def on_pairs(base: Ticks, group: IntArray) -> Ticks:
    """``base`` (:func:`group_ticks`) with each pair's entry at its ``group`` (``base`` itself where that is one a
    row, in order; else a copy, ``base`` left as it was for other pairs)."""
    if group.size != base.knee.shape[-1] or (group != np.arange(group.size)).any():  # else: a pair a layout
        return base.taken(group)
    return base
