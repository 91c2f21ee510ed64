"""Each layout's rung under a per-user limit in the serving sweep (``recommend --min-tokens-per-s-per-user``,
``--max-ttft-s``): the figures the search reads (:func:`user_figures`: a user's decode speed and first token at any
sequences a replica, the steady step and first chunk :func:`~anchorgpu.planner.sweep_serving.serving_columns` times),
the layouts searched alike (:func:`alike_searches`), and the search over them
(:func:`~anchorgpu.planner.sweep_floor.limit_sequences`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.media import MediaLoad
from anchorgpu.planner.sweep_grid import Layouts, TickPairs, tick_groups
from anchorgpu.planner.sweep_serving_memory import CrossRequest, kv_factors, weights_per_gpu
from anchorgpu.planner.sweep_serving_pairs import MadeTicks, pair_budget_tokens, pair_ticks
from anchorgpu.planner.sweep_serving_steps import little_ttft as _little_ttft
from anchorgpu.planner.sweep_serving_steps import steady_steps as _steady_steps
from anchorgpu.planner.sweep_serving_steps import time_to_first_token as _time_to_first_token
from anchorgpu.planner.sweep_serving_steps import user_output_tokens as _user_output_tokens
from anchorgpu.planner.sweep_serving_ticks import Ticks

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape, SweepSpec
    from anchorgpu.planner.sweep_floor import UserLimits

__all__ = ["alike_searches", "layout_limit_rungs", "per_user_speed", "user_figures"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def layout_limit_rungs(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                       weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                       media: MediaLoad | None, cross: CrossRequest | None, limits: UserLimits, saturation: IntArray,
                       *, made: list[MadeTicks] | None = None) -> IntArray:
    """:func:`~anchorgpu.planner.sweep_floor.limit_rungs` of every layout, searched once a set of layouts it finds
    alike (:func:`alike_searches`): the same count of sequences a replica, each layout's rung formed from it.
    ``made``: where given, receives the ticks the search formed (:func:`user_figures`)."""
    from anchorgpu.planner.sweep_floor import limit_sequences, rung_of

    groups = _tick_groups(lay)
    firsts, inverse = alike_searches(lay.dp, groups[1], saturation)
    figures = user_figures(model, shapes, spec, lay, weights, kvs, context_tokens, prompt, output, media, cross,
                           ttft=limits.max_ttft_s is not None, layouts=firsts, tick_groups=groups, made=made)
    seqs = limit_sequences(lambda c, asked: limits.gauge(*figures(c, asked)), lay.dp[firsts], saturation[:, firsts])
    return np.minimum(rung_of(lay.dp, seqs[:, inverse]), np.maximum(saturation, 2))


def _tick_groups(lay: Layouts) -> tuple[IntArray, IntArray]:
    """The first layout of each (shape, TP, PP, EP), ``(G,)``, and each layout's, ``(L,)``: all a pair's ticks read,
    the sweep's own groups (:func:`~anchorgpu.planner.sweep_grid.tick_groups`; keyed without EP, a TensorRT-LLM
    mixture of experts' EP = TP layouts were searched with their EP 1 twin's ticks: stop59_epgroup.md)."""
    return tick_groups(lay)


def alike_searches(dp: IntArray, group: IntArray, saturation: IntArray) -> tuple[IntArray, IntArray]:
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


def per_user_speed(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                   weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                   media: MediaLoad | None, cross: CrossRequest | None) -> Callable[[IntArray], FloatArray]:
    """A function of concurrencies ``(M, W x K, L)`` to each one's decode tokens/s a user (:func:`user_figures`)."""
    figures = user_figures(model, shapes, spec, lay, weights, kvs, context_tokens, prompt, output, media, cross)
    return lambda conc: figures(conc, None)[0]


def user_figures(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                 weights: tuple[str, ...], kvs: tuple[str, ...], context_tokens: int, prompt: int, output: int,
                 media: MediaLoad | None, cross: CrossRequest | None, *, ttft: bool = False,
                 layouts: IntArray | None = None, tick_groups: tuple[IntArray, IntArray] | None = None,
                 made: list[MadeTicks] | None = None) -> Callable[[IntArray, BoolArray | None], tuple[FloatArray, FloatArray | None]]:
    """A function of concurrencies ``(M, W x K, L)``, one row a (weights, KV dtype) (weights first), to each one's
    decode tokens/s a user at its own precision and (``ttft``, else None) its seconds to the first token: the steady
    step and first chunk :func:`~anchorgpu.planner.sweep_serving.serving_columns` times, the same figures (a pair's
    ticks read only its own (shape, TP, PP), precision and sequences a replica; a sequence's length sizes the memory,
    not the step). The ticks' terms are formed once a (shape, TP, PP, EP), each precision's put on the pair axis
    (:func:`_precisions_on_pairs`), and taken at each call's (precision, shape, TP, PP, sequences a replica). Given an
    ``(R, L)`` mask too, only the positions in it are timed (the others NaN): a search's settled brackets are not timed
    again. ``layouts``: the layouts of the last axis ``L`` (default every one); ``tick_groups``: :func:`_tick_groups`
    of ``lay``, where the caller has it; ``made``: where given, receives the ticks of each (shape, TP, PP, EP) before
    the precisions are put on pairs, with what they were formed from
    (:func:`~anchorgpu.planner.sweep_serving_pairs.made_alike`)."""
    kv = kv_factors(model, spec, lay, kvs, (context_tokens,), prompt, output, media, cross, shapes)
    weights_bytes = weights_per_gpu(model, lay, weights)  # memory_terms' weights, the one term the ticks read
    firsts, group_l = _tick_groups(lay) if tick_groups is None else tick_groups
    dp = lay.dp
    if layouts is not None:
        dp, group_l = dp[layouts], group_l[layouts]
    groups, rows = firsts.size, len(weights) * len(kvs)
    one_each = TickPairs(groups=firsts, group=np.arange(groups), batch=np.ones(groups, dtype=np.int64),
                         inverse=np.zeros((1, 1), dtype=np.int64))
    formed = pair_ticks(model, shapes, spec, lay, weights, kv, weights_bytes, one_each, prompt, output)
    if made is not None:
        made.append(MadeTicks(firsts, kv, weights_bytes, formed))
    base = _precisions_on_pairs(formed, len(weights), len(kvs))
    budget = np.tile(pair_budget_tokens(shapes, spec.workload, lay, one_each), rows)
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
