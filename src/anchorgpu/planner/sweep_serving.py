"""The serving part of the catalog sweep (:mod:`anchorgpu.planner.sweep`): memory and speed of every layout x
weight format x KV-cache dtype x concurrency, in numpy.

Memory follows :func:`anchorgpu.planner.plan` (per-model constants from the scalar functions of
:mod:`anchorgpu.planner.memory`, once per distinct value), speed :mod:`anchorgpu.planner.speed.serving` in
array form (its tick and step over the grid: :mod:`anchorgpu.planner.sweep_serving_ticks`); ``tests/recommend``
holds both to the scalar functions.

Inside, the grid's axes run (weights, kv, concurrency, layout): the layouts, by far the longest axis, last, so
numpy's inner loops run along them. Each term lives on the axes it depends on (per layout ``(L,)``, per
concurrency and layout ``(C, L)``, per KV dtype ``(K, 1, L)``, per weight format ``(W, 1, 1, L)``) and numpy
broadcasts the rest: the same operations per element as on the full grid, on fewer elements. The speed is formed
once per distinct (shape, TP, PP, EP, sequences a replica) (:func:`~anchorgpu.planner.sweep_grid.tick_pairs`), those
pairs standing on the last axis ``(1, P)`` in the place of the (concurrency, layout) ``(C, L)``, and taken onto the
grid. The columns returned are views in the sweep's order (layout, weights, kv, concurrency). The ticks of each (shape,
TP, PP, EP) and their reuse: :mod:`anchorgpu.planner.sweep_serving_pairs`; each layout's rung under a per-user limit
(its search's figures): :mod:`anchorgpu.planner.sweep_serving_limits`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.media import MediaLoad
from anchorgpu.planner.sweep_grid import Layouts, TickPairs, tick_pairs
from anchorgpu.planner.sweep_serving_limits import layout_limit_rungs
from anchorgpu.planner.sweep_serving_memory import CrossRequest, KvFactors, kv_factors, memory_terms
from anchorgpu.planner.sweep_serving_pairs import (
    MadeTicks,
    group_ticks,
    made_alike,
    on_pairs,
    pair_budget_tokens,
    pair_ticks,
)
from anchorgpu.planner.sweep_serving_steps import little_ttft as _little_ttft
from anchorgpu.planner.sweep_serving_steps import request_step as _request_step
from anchorgpu.planner.sweep_serving_steps import steady_step as _steady_step
from anchorgpu.planner.sweep_serving_steps import steady_steps as _steady_steps
from anchorgpu.planner.sweep_serving_steps import time_to_first_token as _time_to_first_token
from anchorgpu.planner.sweep_serving_steps import user_output_tokens as _user_output_tokens
from anchorgpu.planner.sweep_serving_ticks import Ticks

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape, SweepSpec
    from anchorgpu.planner.sweep_floor import UserLimits

__all__ = ["serving_columns"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Array = npt.NDArray[Any]
Progress = Callable[[int, int], None]

def _replicas_rate(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                   weights: tuple[str, ...], kv: KvFactors, weights_bytes: FloatArray, conc: IntArray,
                   per_replica: IntArray, prompt: int, output: int, total_tps: FloatArray,
                   made: tuple[TickPairs, Ticks, FloatArray] | None = None,
                   any_fit: BoolArray | None = None) -> FloatArray:
    """Output tokens/s over the replicas, written into ``total_tps`` (which holds the busiest replica's step, in the
    sweep's order), as :func:`~anchorgpu.planner.speed.batching.serving_estimate` adds them: ``busy`` replicas run
    ``per_replica`` sequences at the busiest step, the rest one fewer at their own (shorter) step, each replica on
    its own (this sweep's layouts keep their experts within the TP group; attention DP is planned by ``plan``).
    Where the users split evenly (or a replica would run none), every user runs at the busiest step. ``made``: the
    busiest replicas' pairs, their ticks before they were put on pairs (:func:`group_ticks`) and their steady steps
    ``(W, K, 1, P)``: where the lighter replicas' pairs come from the same layouts, a pair among the busiest's (the same
    (shape, TP, PP, EP) and sequences a replica, so the same figures) takes its step from there, and the others' ticks
    are taken from those rows (no tick formed again). ``any_fit`` ``(C, L)``: where given, only the configurations
    that fit at some precision add their lighter replicas' rate (the others' total is not read)."""
    busy = conc - lay.dp * (per_replica - 1)  # (C, L)
    lighter = (busy < lay.dp) & (per_replica > 1)
    if any_fit is not None:
        lighter &= any_fit
    # in place: each element divides the busiest step it replaces (no grid-sized temporary, no copy back)
    rate = np.divide(_grid_order((busy * per_replica).astype(np.float64)), total_tps, out=total_tps)
    if lighter.any():
        # the pairs of the lighter replicas alone (sequences a replica one fewer), in order: each lighter entry's
        every = tick_pairs(lay, conc, np.where(lighter, per_replica - 1, 1))
        c_at, l_at = np.nonzero(lighter)
        at = every.inverse[c_at, l_at]
        needed = np.zeros(every.batch.size, dtype=bool)
        needed[at] = True
        used = np.flatnonzero(needed)
        at = (np.cumsum(needed) - 1)[at]
        pairs = TickPairs(groups=every.groups, group=every.group[used], batch=every.batch[used], inverse=every.inverse)
        budget_tokens = pair_budget_tokens(shapes, spec.workload, lay, pairs)
        step = np.empty((*total_tps.shape[1:3], 1, pairs.batch.size))
        # the busiest replicas' ticks and steps where they were formed from the same layouts (a Ticks reads its layouts
        # together: formed from others, a term could take another branch), else formed here
        if made is not None and np.array_equal(made[0].groups, pairs.groups):
            _known_steps(made, pairs, prompt, output, budget_tokens, step)
        else:
            ticks = pair_ticks(model, shapes, spec, lay, weights, kv, weights_bytes, pairs, prompt, output)
            _steady_step(ticks, pairs.batch.astype(np.float64)[None, :], prompt, output, budget_tokens, step)
            del ticks
        # added at the lighter entries only (elsewhere it adds 0 / the step: nothing)
        light = ((lay.dp - busy) * (per_replica - 1))[c_at, l_at].astype(np.float64)
        rate[l_at, :, :, c_at] += np.divide(light, step[:, :, 0, at]).transpose(2, 0, 1)
    return rate


def _known_steps(made: tuple[TickPairs, Ticks, FloatArray], pairs: TickPairs, prompt: int, output: int,
                 budget_tokens: Array, out: FloatArray) -> FloatArray:
    """The steady step of each of ``pairs`` (of the busiest replicas' groups, ``made``), written into ``out``
    ``(W, K, 1, P)``: a pair among the busiest replicas' (its group and sequences a replica) takes that pair's step
    (a step of a pair reads only its own ticks and budget, both its group's: the same figures), the rest formed on
    the ticks of their groups (``made``'s rows)."""
    busiest, base, steady = made
    groups = pairs.groups.size
    known = busiest.batch * groups + busiest.group
    order = np.argsort(known, kind="stable")
    ordered = known[order]
    want = pairs.batch * groups + pairs.group
    at = np.minimum(np.searchsorted(ordered, want), ordered.size - 1)
    found = ordered[at] == want
    np.take(steady, order[at], axis=-1, out=out)  # a pair not found is formed below
    missing = np.flatnonzero(~found)
    if missing.size:
        formed = np.empty((*out.shape[:3], missing.size))
        _steady_step(base.taken(pairs.group[missing]), pairs.batch[missing].astype(np.float64)[None, :], prompt,
                     output, budget_tokens[missing], formed)
        out[..., missing] = formed
    return out


def _on_grid(values: FloatArray, inverse: IntArray, column: FloatArray,
             index: dict[tuple[int, int], IntArray] | None = None) -> FloatArray:
    """Figures of the pairs ``(W, K, 1, P)`` written into ``column``, in the sweep's order (layout, weights, kv,
    concurrency): each configuration's, its pair's (``inverse`` ``(C, L)``), one (weights, kv) at a time (no index
    over the grid). ``index``: the gather's index over the grid, kept there for the next column of the same
    ``inverse`` (formed once for the sweep's columns)."""
    by_pair = values.reshape(*column.shape[1:3], -1)
    if by_pair.shape[-1] == inverse.size and (inverse.ravel() == np.arange(inverse.size)).all():  # in grid order
        np.copyto(column, by_pair.reshape(*column.shape[1:3], *inverse.shape).transpose(3, 0, 1, 2))
        return column
    if not column.flags.c_contiguous:  # (every column the sweep forms is)
        at_l = inverse.T
        for w in range(column.shape[1]):
            for k in range(column.shape[2]):
                column[:, w, k, :] = by_pair[w, k][at_l]
        return column
    # one gather straight into the column: each element's flat place among the pairs of its (weights, kv),
    # (L, W x K, C); copied a (weights, kv) at a time, each row of C elements was a copy call of its own
    rows, pairs = column.shape[1] * column.shape[2], by_pair.shape[-1]
    at = None if index is None else index.get((rows, pairs))
    if at is None:
        at = inverse.T[:, None, :] + np.arange(0, rows * pairs, pairs)[None, :, None]
        if index is not None:
            index[rows, pairs] = at
    np.take(by_pair.reshape(-1), at, out=column.reshape(column.shape[0], rows, -1), mode="clip")  # every index valid
    return column


def _fitting_pairs(pairs: TickPairs, any_fit: BoolArray | None) -> IntArray | None:
    """The pairs (in order) that some configuration that fits reads (``any_fit`` ``(C, L)``: where one fits at some
    precision), or None where that is every pair (or ``any_fit`` is None: every pair timed)."""
    if any_fit is None:
        return None
    needed = np.zeros(pairs.batch.size, dtype=bool)
    needed[pairs.inverse[any_fit]] = True
    return None if bool(needed.all()) else np.flatnonzero(needed)


def _with_untimed(values: tuple[FloatArray, FloatArray, FloatArray], timed: IntArray, pairs: int, inverse: IntArray
                  ) -> tuple[FloatArray, FloatArray, FloatArray, IntArray]:
    """Each of ``values`` ``(W, K, 1, P')`` of the pairs ``timed`` (of ``pairs``) with a NaN after them, and
    ``inverse`` ``(C, L)`` onto them: a pair timed at its place among them, the others at the NaN."""
    at = np.full(pairs, timed.size, dtype=np.int64)
    at[timed] = np.arange(timed.size)
    nan = np.full((*values[0].shape[:-1], 1), np.nan)
    step, user_step, ttft = (np.concatenate((v, nan), axis=-1) for v in values)
    return step, user_step, ttft, at[inverse]


def _in_grid_order(shape: tuple[int, int, int, int], dtype: type = np.float64) -> tuple[Array, Array]:
    """A new column in the sweep's order (layout, weights, kv, concurrency), and the same memory as a view on the
    axes computed here (weights, kv, concurrency, layout): results written into the view need no reordering."""
    column: Array = np.empty(shape, dtype=dtype)
    return column, column.transpose(1, 2, 3, 0)


def serving_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                    weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...],
                    contexts: tuple[int, ...], prompt: int, output: int, progress: Progress | None,
                    media: MediaLoad | None = None, cross: CrossRequest | None = None,
                    saturation: bool = False, limits: UserLimits | None = None,
                    fitting_only: bool = False) -> dict[str, Array]:
    """Every serving result column of the sweep on the axes (layout, weights, kv, concurrency): those that vary
    along every axis as whole arrays in that order, the others of length 1 along the axes they do not vary on.
    ``contexts``: the tokens a sequence is sized at, one per concurrency of ``concs`` (as plan sizes it at that
    concurrency). ``prompt`` and ``output``: the request timed, as plan times it (the sweep resolves it); ``cross``: the request an
    encoder-decoder or cross-attention model is timed with, as plan times it (its speed prompt, with the encoder's
    prefill work, and its output; every decode step reads the cross-attention K/V); None for any other model.
    ``saturation``: after ``concs``, one concurrency more per (weights, KV dtype), each layout's own: the most
    sequences it runs at once at that precision (:func:`~anchorgpu.planner.sweep_saturation.saturation_rungs`),
    sized at the last of ``contexts``; each is evaluated at every precision, as any concurrency is. With ``limits``
    too (a per-user speed floor, a TTFT limit), after those one more per (weights, KV dtype): the most sequences each
    layout runs at that precision, within its saturation, while every user sees them met
    (:func:`~anchorgpu.planner.sweep_floor.limit_rungs`), sized as the saturation rungs are. ``fitting_only``: the
    speed figures of a configuration that does not fit are left NaN where no configuration of its pair fits at any
    precision (those pairs are not timed), and its total rate where it is its replicas' uneven split that no
    configuration of the lighter replicas' pair that fits needs (a caller that reads no figure of a configuration that
    does not fit: ``recommend``); every other figure is the one formed without it."""
    w: Workload = spec.workload
    if cross is not None:
        prompt, output = cross.prompt_tokens, cross.output_tokens
    conc = np.array(concs, dtype=np.int64)[:, None]  # (C, 1); with each layout's saturation, (C + W x K, L)
    made: list[MadeTicks] = []  # the limit search's ticks of each (shape, TP, PP, EP), where it ran
    if saturation:
        from anchorgpu.planner.sweep_saturation import saturation_rungs

        rungs = saturation_rungs(model, shapes, spec, lay, weights, kvs, contexts[-1], prompt, output, media, cross)
        if limits is not None and limits.any:
            limit = layout_limit_rungs(model, shapes, spec, lay, weights, kvs, contexts[-1], prompt, output, media, cross,
                                       limits, rungs, made=made)
            rungs = np.concatenate((rungs, limit))
        conc = np.concatenate((np.broadcast_to(conc, (len(concs), len(lay))), rungs))
        contexts = (*contexts, *(contexts[-1],) * len(rungs))
    grid = (len(lay), len(weights), len(kvs), conc.shape[0])
    if progress:
        progress(math.prod(grid) // 4, math.prod(grid))
    per_replica = -(-conc // lay.dp)  # (C, L)
    kv = kv_factors(model, spec, lay, kvs, contexts, prompt, output, media, cross, shapes)
    mem = memory_terms(model, shapes, spec, lay, weights, kv, per_replica)
    # the ticks once per distinct (shape, TP, PP, EP, sequences a replica), on one axis of those pairs ``(1, P)``, then
    # taken onto the grid: the same operations per element, on fewer elements
    pairs = tick_pairs(lay, conc, per_replica)
    # the four columns that vary along every axis, in the sweep's order, in one block: one allocation, not four
    total_b, ttft_column, total_tps, per_user = np.empty((4, *grid))
    total_view = total_b.transpose(1, 2, 3, 0)
    np.add(mem.weights, mem.kv_cache, out=total_view)
    total_view += mem.activations + mem.other
    fits, fits_view = _in_grid_order(grid, bool)
    np.less_equal(total_view, mem.budget, out=fits_view)
    if mem.reserve is not None:  # SGLang: a prefill peak above its reserve would run out of memory (plan refuses it)
        fits_view &= mem.activations <= mem.reserve
    # (C, L): where one fits at some precision (reduced over the column's own memory order)
    any_fit: BoolArray | None = (np.logical_or.reduce(fits.reshape(grid[0], -1, grid[3]), axis=1).T
                                 if fitting_only else None)
    timed = _fitting_pairs(pairs, any_fit)  # the pairs timed, in order (None: every one)
    if timed is not None:
        pairs_all = pairs
        pairs = TickPairs(groups=pairs.groups, group=pairs.group[timed], batch=pairs.batch[timed],
                          inverse=pairs.inverse)
    budget_tokens = pair_budget_tokens(shapes, w, lay, pairs)
    batch = pairs.batch.astype(np.float64)[None, :]
    # what outlives the ticks made before them, so that the ticks' memory, freed, is left in one piece
    step, user_step, ttft = np.empty((3, *grid[1:3], 1, batch.size))
    base = made_alike(made, pairs.groups, kv, mem.weights)
    if base is None:
        base = group_ticks(model, shapes, spec, lay, weights, kv, mem.weights, pairs.groups, prompt, output)
    ticks = on_pairs(base, pairs.group)
    # and a user's step between its tokens: the other users' prompts only (speed.batching.others_output_tokens)
    _steady_steps(ticks, batch, prompt, ((output, step),
                                         (_user_output_tokens(batch, prompt, output, budget_tokens), user_step)),
                  budget_tokens)
    _time_to_first_token(ticks, budget_tokens, batch, prompt, ttft)
    _little_ttft(ttft, batch, output, step, user_step)  # a request takes O mean steps (Little's law)
    steady = step.copy()  # the steady step of each pair, which the lighter replicas' pairs read (_replicas_rate)
    _request_step(step, ttft, user_step, output)  # and at least its first token and O - 1 gaps (the rate's step)
    if output == 1:  # one token a request: a user's step is the request's (speed.batching.others_output_tokens)
        np.copyto(user_step, step)
    del ticks  # its terms per pair, before the grid's columns are formed
    if progress:
        progress(math.prod(grid) // 2, math.prod(grid))
    np.divide(1.0, user_step, out=user_step)  # 1 / step of each pair, as of each
    inverse = pairs.inverse
    if timed is not None:  # each entry of a pair not timed at a NaN put after the pairs timed
        step, user_step, ttft, inverse = _with_untimed((step, user_step, ttft), timed, pairs_all.batch.size, inverse)
    index: dict[tuple[int, int], IntArray] = {}  # the gather's index, formed once for the three columns
    ttft = _on_grid(ttft, inverse, ttft_column, index)
    _on_grid(step, inverse, total_tps, index)
    _on_grid(user_step, inverse, per_user, index)
    del index
    _replicas_rate(model, shapes, spec, lay, weights, kv, mem.weights, conc, per_replica, prompt, output, total_tps,
                   (pairs, base, steady), any_fit)
    del base
    nan = np.full(1, np.nan)
    return {
        "weights_bytes": _grid_order(mem.weights), "kv_cache_bytes": _grid_order(mem.kv_cache),
        "activations_bytes": _grid_order(mem.activations), "other_bytes": _grid_order(mem.other),
        "per_gpu_total_bytes": total_b, "budget_bytes": _grid_order(mem.budget), "fits": fits,
        "engine_reserve_bytes": _grid_order(mem.reserve if mem.reserve is not None else np.full(1, np.nan)),
        "concurrency": _grid_order(conc), "prefill_s": ttft, "decode_tokens_per_s_per_user": per_user,
        "decode_tokens_per_s_total": total_tps, "train_tokens_per_s": _grid_order(nan),
        "train_time_s": _grid_order(nan),
    }



def _grid_order(values: Array) -> Array:
    """A term on the axes (weights, kv, concurrency, layout) as a view on the sweep's (layout, weights, kv,
    concurrency), length 1 along the axes it does not vary on."""
    return values.reshape((1,) * (4 - values.ndim) + values.shape).transpose(3, 0, 1, 2)
