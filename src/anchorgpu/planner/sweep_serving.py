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
grid. The columns returned are views in the sweep's order (layout, weights, kv, concurrency).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.media import MediaLoad
from anchorgpu.planner.sglang import sglang_gpu_memory_bytes
from anchorgpu.planner.sweep_grid import Layouts, TickPairs, tick_groups, tick_pairs
from anchorgpu.planner.sweep_serving_memory import CrossRequest, KvFactors, kv_factors, memory_terms, weights_per_gpu
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
                   made: tuple[TickPairs, Ticks] | None = None) -> FloatArray:
    """Output tokens/s over the replicas, written into ``total_tps`` (which holds the busiest replica's step, in the
    sweep's order), as :func:`~anchorgpu.planner.speed.batching.serving_estimate` adds them: ``busy`` replicas run
    ``per_replica`` sequences at the busiest step, the rest one fewer at their own (shorter) step, each replica on
    its own (this sweep's layouts keep their experts within the TP group; attention DP is planned by ``plan``).
    Where the users split evenly (or a replica would run none), every user runs at the busiest step. ``made``: the
    busiest replicas' pairs and their ticks before they were put on pairs (:func:`_group_ticks`), whose rows the
    lighter replicas' ticks are taken from where their pairs come from the same layouts (no tick formed again)."""
    busy = conc - lay.dp * (per_replica - 1)  # (C, L)
    lighter = (busy < lay.dp) & (per_replica > 1)
    # in place: each element divides the busiest step it replaces (no grid-sized temporary, no copy back)
    rate = np.divide(_grid_order((busy * per_replica).astype(np.float64)), total_tps, out=total_tps)
    if lighter.any():
        fewer = np.where(lighter, per_replica - 1, 1)
        pairs = tick_pairs(lay, conc, fewer)
        budget_tokens = _budget_tokens(shapes, spec.workload, lay, pairs)
        step = np.empty((*total_tps.shape[1:3], 1, pairs.batch.size))
        # the busiest replicas' ticks where they were formed from the same layouts (a Ticks reads its layouts
        # together: formed from others, a term could take another branch), else formed here
        ticks = (_on_pairs(made[1], pairs.group) if made is not None and np.array_equal(made[0].groups, pairs.groups)
                 else _ticks(model, shapes, spec, lay, weights, kv, weights_bytes, pairs, prompt, output))
        _steady_step(ticks, pairs.batch.astype(np.float64)[None, :], prompt, output, budget_tokens, step)
        del ticks
        own = _on_grid(step, pairs.inverse, np.empty_like(total_tps))
        light = np.where(lighter, (lay.dp - busy) * (per_replica - 1), 0).astype(np.float64)
        rate += np.divide(_grid_order(light), own, out=own)
    return rate


def _on_grid(values: FloatArray, inverse: IntArray, column: FloatArray) -> FloatArray:
    """Figures of the pairs ``(W, K, 1, P)`` written into ``column``, in the sweep's order (layout, weights, kv,
    concurrency): each configuration's, its pair's (``inverse`` ``(C, L)``), one (weights, kv) at a time (no index
    over the grid)."""
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
    at = inverse.T[:, None, :] + np.arange(0, rows * pairs, pairs)[None, :, None]
    np.take(by_pair.reshape(-1), at, out=column.reshape(column.shape[0], rows, -1), mode="clip")  # every index valid
    return column


def _in_grid_order(shape: tuple[int, int, int, int], dtype: type = np.float64) -> tuple[Array, Array]:
    """A new column in the sweep's order (layout, weights, kv, concurrency), and the same memory as a view on the
    axes computed here (weights, kv, concurrency, layout): results written into the view need no reordering."""
    column: Array = np.empty(shape, dtype=dtype)
    return column, column.transpose(1, 2, 3, 0)


def serving_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                    weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...],
                    contexts: tuple[int, ...], prompt: int, output: int, progress: Progress | None,
                    media: MediaLoad | None = None, cross: CrossRequest | None = None,
                    saturation: bool = False, limits: UserLimits | None = None) -> dict[str, Array]:
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
    (:func:`~anchorgpu.planner.sweep_floor.limit_rungs`), sized as the saturation rungs are."""
    w: Workload = spec.workload
    if cross is not None:
        prompt, output = cross.prompt_tokens, cross.output_tokens
    conc = np.array(concs, dtype=np.int64)[:, None]  # (C, 1); with each layout's saturation, (C + W x K, L)
    made: list[MadeTicks] = []  # the limit search's ticks of each (shape, TP, PP, EP), where it ran
    if saturation:
        from anchorgpu.planner.sweep_saturation import saturation_rungs

        rungs = saturation_rungs(model, shapes, spec, lay, weights, kvs, contexts[-1], prompt, output, media, cross)
        if limits is not None and limits.any:
            rungs = np.concatenate((rungs, _limit_rungs(model, shapes, spec, lay, weights, kvs, contexts[-1], prompt,
                                                         output, media, cross, limits, rungs, made=made)))
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
    budget_tokens = _budget_tokens(shapes, w, lay, pairs)
    batch = pairs.batch.astype(np.float64)[None, :]
    # what outlives the ticks made before them, so that the ticks' memory, freed, is left in one piece
    step, user_step, ttft = np.empty((3, *grid[1:3], 1, batch.size))
    base = _made_alike(made, pairs.groups, kv, mem.weights)
    if base is None:
        base = _group_ticks(model, shapes, spec, lay, weights, kv, mem.weights, pairs.groups, prompt, output)
    ticks = _on_pairs(base, pairs.group)
    # and a user's step between its tokens: the other users' prompts only (speed.batching.others_output_tokens)
    _steady_steps(ticks, batch, prompt, ((output, step),
                                         (_user_output_tokens(batch, prompt, output, budget_tokens), user_step)),
                  budget_tokens)
    _time_to_first_token(ticks, budget_tokens, batch, prompt, ttft)
    _little_ttft(ttft, batch, output, step, user_step)  # a request takes O mean steps (Little's law)
    _request_step(step, ttft, user_step, output)  # and at least its first token and O - 1 gaps (the rate's step)
    if output == 1:  # one token a request: a user's step is the request's (speed.batching.others_output_tokens)
        np.copyto(user_step, step)
    del ticks  # its terms per pair, before the grid's columns are formed
    # the four columns that vary along every axis, in the sweep's order, in one block: one allocation, not four
    total_b, ttft_column, total_tps, per_user = np.empty((4, *grid))
    total_view = total_b.transpose(1, 2, 3, 0)
    np.add(mem.weights, mem.kv_cache, out=total_view)
    total_view += mem.activations + mem.other
    fits, fits_view = _in_grid_order(grid, bool)
    np.less_equal(total_view, mem.budget, out=fits_view)
    if mem.reserve is not None:  # SGLang: a prefill peak above its reserve would run out of memory (plan refuses it)
        fits_view &= mem.activations <= mem.reserve
    if progress:
        progress(math.prod(grid) // 2, math.prod(grid))
    ttft = _on_grid(ttft, pairs.inverse, ttft_column)
    _on_grid(step, pairs.inverse, total_tps)
    _on_grid(np.divide(1.0, user_step, out=user_step), pairs.inverse, per_user)  # 1 / step of each pair, as of each
    _replicas_rate(model, shapes, spec, lay, weights, kv, mem.weights, conc, per_replica, prompt, output, total_tps,
                   (pairs, base))
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


def _limit_rungs(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                 weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                 media: MediaLoad | None, cross: CrossRequest | None, limits: UserLimits, saturation: IntArray,
                 *, made: list[MadeTicks] | None = None) -> IntArray:
    """:func:`~anchorgpu.planner.sweep_floor.limit_rungs` of every layout, searched once a set of layouts it finds
    alike (:func:`_alike_searches`): the same count of sequences a replica, each layout's rung formed from it.
    ``made``: where given, receives the ticks the search formed (:func:`_user_figures`)."""
    from anchorgpu.planner.sweep_floor import limit_sequences, rung_of

    groups = _tick_groups(lay)
    firsts, inverse = _alike_searches(lay.dp, groups[1], saturation)
    figures = _user_figures(model, shapes, spec, lay, weights, kvs, context_tokens, prompt, output, media, cross,
                            ttft=limits.max_ttft_s is not None, layouts=firsts, tick_groups=groups, made=made)
    seqs = limit_sequences(lambda c, asked: limits.gauge(*figures(c, asked)), lay.dp[firsts], saturation[:, firsts])
    return np.minimum(rung_of(lay.dp, seqs[:, inverse]), np.maximum(saturation, 2))


def _tick_groups(lay: Layouts) -> tuple[IntArray, IntArray]:
    """The first layout of each (shape, TP, PP, EP), ``(G,)``, and each layout's, ``(L,)``: all a pair's ticks read,
    the sweep's own groups (:func:`~anchorgpu.planner.sweep_grid.tick_groups`; keyed without EP, a TensorRT-LLM
    mixture of experts' EP = TP layouts were searched with their EP 1 twin's ticks: stop59_epgroup.md)."""
    return tick_groups(lay)


def _alike_searches(dp: IntArray, group: IntArray, saturation: IntArray) -> tuple[IntArray, IntArray]:
    """The layouts whose limit search runs alike (:func:`~anchorgpu.planner.sweep_floor.limit_sequences`), a first one
    of each set ``(U,)`` and each layout's set ``(L,)``: a layout's figures at ``x`` sequences a replica read its
    (shape, TP, PP, EP) ``group``, its precision and the sequences a replica of the concurrency ``max(dp x, 2)`` (``x``,
    or 2 where ``dp`` and ``x`` are 1), and its search its ``saturation // dp`` ``(R, L)``: layouts alike in these
    search alike, whatever their DP."""
    return _unique_columns(np.vstack((group, dp == 1, np.maximum(saturation // dp, 1))))


def _unique_columns(keys: IntArray) -> tuple[IntArray, IntArray]:
    """``np.unique(keys, axis=1, return_index=True, return_inverse=True)``'s first column of each distinct one, in
    ascending (lexicographic) order, and each column's (flat), by a stable ``lexsort`` (np.unique sorts the columns as
    records, compared field by field: several times the instructions on a sweep's few hundred layouts)."""
    order = np.lexsort(keys[::-1])
    ordered = keys[:, order]
    first = np.empty(order.size, dtype=bool)
    first[:1] = True
    np.any(ordered[:, 1:] != ordered[:, :-1], axis=0, out=first[1:])
    inverse = np.empty(order.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return order[first], inverse


def _budget_tokens(shapes: Sequence[HardwareShape], w: Workload, lay: Layouts, pairs: TickPairs) -> Array:
    """The engine's token budget a step of each pair ``(P,)``, by its GPU (as plan resolves the engine's defaults)."""
    rows = pairs.groups
    budget: Array = np.array([engine_limits(w, large_gpu=large_engine_defaults(sh.gpu),
                                            gpu_memory_bytes=sglang_gpu_memory_bytes(sh.gpu))[0]
                              for sh in shapes])[lay.shape[rows][pairs.group]]
    return budget


def _ticks(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
           weights: tuple[str, ...], kv: KvFactors, weights_bytes: FloatArray, pairs: TickPairs, prompt: int,
           output: int) -> Ticks:
    """The ticks of each pair of ``pairs`` (a representative layout a (shape, TP, PP, EP), then one entry a pair)."""
    return _on_pairs(_group_ticks(model, shapes, spec, lay, weights, kv, weights_bytes, pairs.groups, prompt, output),
                     pairs.group)


def _group_ticks(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                 weights: tuple[str, ...], kv: KvFactors, weights_bytes: FloatArray, rows: IntArray, prompt: int,
                 output: int) -> Ticks:
    """The ticks of the layouts ``rows`` (one a (shape, TP, PP, EP)), one entry each, before they are put on pairs."""
    kv_rows = replace(kv, slot_bytes=kv.slot_bytes[..., rows], read_bytes=kv.read_bytes[..., rows],
                      stage_layers=kv.stage_layers[rows],
                      cross_read=None if kv.cross_read is None else kv.cross_read[..., rows])
    return Ticks(model, shapes, spec, lay.take(rows), weights, kv_rows, weights_bytes[..., rows], prompt, output)


@dataclass(frozen=True, slots=True)
class MadeTicks:
    """Ticks of the layouts ``rows`` (:func:`_group_ticks`) and the KV factors and weight bytes they were formed from."""

    rows: IntArray
    kv: KvFactors
    weights_bytes: FloatArray
    ticks: Ticks


def _made_alike(made: Sequence[MadeTicks], rows: IntArray, kv: KvFactors, weights_bytes: FloatArray
                ) -> Ticks | None:
    """Ticks already formed (``made``) that :func:`_group_ticks` would form again from ``rows``, ``kv`` and
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


def _on_pairs(base: Ticks, group: IntArray) -> Ticks:
    """``base`` (:func:`_group_ticks`) with each pair's entry at its ``group`` (``base`` itself where that is one a
    row, in order; else a copy, ``base`` left as it was for other pairs)."""
    if group.size != base.knee.shape[-1] or (group != np.arange(group.size)).any():  # else: a pair a layout
        return base.taken(group)
    return base


def _per_user_speed(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                    weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                    media: MediaLoad | None, cross: CrossRequest | None) -> Callable[[IntArray], FloatArray]:
    """A function of concurrencies ``(M, W x K, L)`` to each one's decode tokens/s a user (:func:`_user_figures`)."""
    figures = _user_figures(model, shapes, spec, lay, weights, kvs, context_tokens, prompt, output, media, cross)
    return lambda conc: figures(conc, None)[0]


def _user_figures(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                  weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                  media: MediaLoad | None, cross: CrossRequest | None, *, ttft: bool = False,
                  layouts: IntArray | None = None, tick_groups: tuple[IntArray, IntArray] | None = None,
                  made: list[MadeTicks] | None = None) -> Callable[[IntArray, BoolArray | None], tuple[FloatArray, FloatArray | None]]:
    """A function of concurrencies ``(M, W x K, L)``, one row a (weights, KV dtype) (weights first), to each one's
    decode tokens/s a user at its own precision and (``ttft``, else None) its seconds to the first token: the steady
    step and first chunk :func:`serving_columns` times, the same figures (a pair's ticks read only its own (shape, TP,
    PP), precision and sequences a replica; a sequence's length sizes the memory, not the step). The ticks' terms are
    formed once a (shape, TP, PP, EP), each precision's put on the pair axis (:func:`_precisions_on_pairs`), and taken at
    each call's (precision, shape, TP, PP, sequences a replica). Given an ``(R, L)`` mask too, only the positions in
    it are timed (the others NaN): a search's settled brackets are not timed again. ``layouts``: the layouts of the
    last axis ``L`` (default every one); ``tick_groups``: :func:`_tick_groups` of ``lay``, where the caller has it;
    ``made``: where given, receives the ticks of each (shape, TP, PP, EP) before the precisions are put on pairs, with
    what they were formed from (:func:`_made_alike`)."""
    kv = kv_factors(model, spec, lay, kvs, (context_tokens,), prompt, output, media, cross, shapes)
    weights_bytes = weights_per_gpu(model, lay, weights)  # memory_terms' weights, the one term the ticks read
    firsts, group_l = _tick_groups(lay) if tick_groups is None else tick_groups
    dp = lay.dp
    if layouts is not None:
        dp, group_l = dp[layouts], group_l[layouts]
    groups, rows = firsts.size, len(weights) * len(kvs)
    one_each = TickPairs(groups=firsts, group=np.arange(groups), batch=np.ones(groups, dtype=np.int64),
                         inverse=np.zeros((1, 1), dtype=np.int64))
    group_ticks = _ticks(model, shapes, spec, lay, weights, kv, weights_bytes, one_each, prompt, output)
    if made is not None:
        made.append(MadeTicks(firsts, kv, weights_bytes, group_ticks))
    base = _precisions_on_pairs(group_ticks, len(weights), len(kvs))
    budget = np.tile(_budget_tokens(shapes, spec.workload, lay, one_each), rows)
    row_of = np.arange(rows)[:, None]

    def figures(conc: IntArray, asked: BoolArray | None = None) -> tuple[FloatArray, FloatArray | None]:
        if asked is None:
            return _figures_at(conc, row_of, dp, group_l)
        row, layout = np.nonzero(asked)  # the positions asked, (N,) each: the others are NaN
        speed, first = np.full((2, *conc.shape), np.nan)
        part_speed, part_first = _figures_at(conc[:, row, layout], row, dp[layout], group_l[layout])
        speed[:, row, layout] = part_speed
        if part_first is None:
            return speed, None
        first[:, row, layout] = part_first
        return speed, first

    def _figures_at(conc: IntArray, row: IntArray, dp: IntArray, group: IntArray
                    ) -> tuple[FloatArray, FloatArray | None]:
        # sequences a replica, then precision, then (shape, TP, PP, EP): ascending, in order of the first
        key = (-(-conc // dp) * rows + row) * groups + group
        pair, inverse = np.unique(key, return_inverse=True)
        sequences, at = np.divmod(pair, rows * groups)  # precision r's (shape, TP, PP, EP) g at r x G + g
        batch = sequences.astype(np.float64)[None, :]
        step, first = np.empty((2, 1, 1, 1, batch.size))
        ticks = base.taken(at)
        budget_at = budget.take(at)
        user = (_user_output_tokens(batch, prompt, output, budget_at), step)
        # a request takes O mean steps (one output: all of its step): with a TTFT, the full steady step too
        full = np.empty_like(step) if ttft and (batch > 1.0).any() else None
        _steady_steps(ticks, batch, prompt, (user,) if full is None else (user, (output, full)), budget_at)
        where = inverse.reshape(conc.shape)
        speed: FloatArray = np.divide(1.0, step[0, 0, 0]).take(where)  # each pair's once, then at its positions
        if not ttft:
            return speed, None
        _time_to_first_token(ticks, budget_at, batch, prompt, first)
        if full is not None:
            _little_ttft(first, batch, output, full, step)
        return speed, first[0, 0, 0].take(where)

    return figures


def _precisions_on_pairs(ticks: Ticks, weights: int, kvs: int) -> Ticks:
    """A copy of ``ticks`` (one pair a (shape, TP, PP, EP), ``G``) with the W x K precisions on the pair axis:
    precision ``r``'s terms of pair ``g`` at ``r x G + g``. A term on the axes (weights, KV dtype, 1, pair), right
    aligned as numpy broadcasts it, is spread over both and flattened; one with neither axis repeated W x K times.
    Each figure is the one it was (the same elementwise operations), with no precision timed but the pair's own."""
    out = copy.copy(ticks)
    for name, value in vars(ticks).items():
        if not isinstance(value, np.ndarray):
            continue
        if value.ndim <= 2:  # (G,) or (1, G): the same for every precision
            setattr(out, name, np.tile(value, weights * kvs))
        else:  # (K, 1, G) or (W, K, 1, G), either of W and K possibly 1
            aligned = value.reshape((1,) * (4 - value.ndim) + value.shape)
            setattr(out, name, np.broadcast_to(aligned, (weights, kvs, *aligned.shape[2:])).reshape(1, 1, 1, -1))
    return out


def _grid_order(values: Array) -> Array:
    """A term on the axes (weights, kv, concurrency, layout) as a view on the sweep's (layout, weights, kv,
    concurrency), length 1 along the axes it does not vary on."""
    return values.reshape((1,) * (4 - values.ndim) + values.shape).transpose(3, 0, 1, 2)
