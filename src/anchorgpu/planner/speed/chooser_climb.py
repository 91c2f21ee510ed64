"""Past the first training layout that fits: the other splits whose climb past micro-batch 4 could replace it
(:mod:`~anchorgpu.planner.speed.chooser_margin`'s rule), every one of them, met fastest climb first. Pure.

The first layout that fits is the fastest before the climb (:func:`~.chooser_order.fastest_first` at micro-batches 1, 2
and 4), so another split can beat it only by its climb: its own first configuration that fits (its *row*, as
``recommend``'s sweep and ``plan`` given that split find it) sits at micro-batch 4 and a rung past the ladder runs
faster still and fits. Whatever it climbs to is that rung's speed at one recompute level (with more rungs, at most
:data:`~.chooser_margin.LADDER_GAIN` times it a rung beyond). So the search reads the rung's configurations, fastest
first, by the same stream (a layout timed only once its bound there reaches the front), and stops at the first too slow
to beat the first layout; each one fast enough that fits (one memory plan) is its split's only chance, and the split's
row is then found and climbed as ``plan`` given it would. The climbs found are those of every split that could beat
the first, whatever their order before the climb (Qwen3-235B-A22B on 32 B200: the FSDP split's micro-batch 8, whose
micro-batch 4 fits only with full recompute, far down that order).

A rung whose micro-batch 4 at the same layout and level was planned and did not fit is passed over unplanned: at one
recompute level the memory never shrinks with a larger micro-batch (the premise the sweep's ``_Memories.fits`` reads,
tests/recommend/test_sweep_micro_batch.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import TypeVar

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.speed.chooser_margin import LADDER_GAIN, in_reach, needed, split_of
from anchorgpu.planner.speed.chooser_order import fastest_first
from anchorgpu.planner.speed.micro_batch_ladder import LADDER_PAST, MICRO_BATCHES
from anchorgpu.planner.speed.ranking import speed_rank
from anchorgpu.planner.speed.train_layout import TrainLayout

__all__ = ["climbers"]

F = TypeVar("F")  # a split found, climbed (the chooser's layout_reason.Found)
Stream = Iterator[tuple[float, int, TrainLayout, int, Recompute]]


def climbers(
    pairs: list[tuple[TrainLayout, int]],
    levels: tuple[Recompute, ...],
    first: TrainLayout,
    first_tokens_per_s: float,
    margin: float,
    held: bool,
    *,
    speed: Callable[[TrainLayout, int, Recompute], float],
    bound: Callable[[TrainLayout, int], float],
    rung_bound: Callable[[TrainLayout, int, int], float],
    over: Callable[[TrainLayout, int], float | None],
    runs: Callable[[TrainLayout, int], bool],
    fits: Callable[[TrainLayout, int, Recompute], bool],
    unfit: Callable[[TrainLayout, int, Recompute], bool],
    row: Callable[[Stream, list[int]], F | None],
    outgrown: set[int],
    settled: set[tuple[int, ...]],
) -> list[F]:
    """The rows of the splits past ``first`` (the first that fits, climbed to ``first_tokens_per_s``) whose climb
    could beat it by :func:`~.chooser_margin.needed`, each climbed, in ``pairs``' order; ``settled`` (the splits whose
    row is known, the first's) grows by each.

    ``rung_bound``: at least ``bound`` at a rung, read off the parts at a micro-batch below it
    (:func:`~.rung_bound.rung_tokens_per_s_bound`), filters before the bounds are timed; ``over``: ``bound``'s own
    bound, for :func:`~.chooser_order.fastest_first`; ``fits``: whether a configuration fits (its plan, memoised by the caller, which adds a layout whose model states
    alone outgrow the GPU to ``outgrown``); ``unfit``: whether one was planned already and did not fit; ``row``: a
    split's row from the stream of its configurations and the indices of its pairs in ``pairs`` (the chooser's first
    that fits, climbed, or ``None``)."""
    low, top, rung = MICRO_BATCHES[0], MICRO_BATCHES[-1], LADDER_PAST[0]
    gain = LADDER_GAIN ** len(LADDER_PAST)  # the most a climb multiplies a layout's speed at the top rung
    beyond = LADDER_GAIN ** (len(LADDER_PAST) - 1)  # ... and at the first rung past it
    least = speed_rank(first_tokens_per_s)  # what a simpler split needs; any other, more
    needs: dict[tuple[bool, ...], float] = {}  # by the parallel dimensions a layout runs (chooser_margin.features)
    checked: dict[tuple[int, ...], bool] = {}  # by DP, PP, interleave, TP, CP: its rung runs, and in reach
    of_split: dict[tuple[int, ...], list[int]] = {}
    found: list[F] = []
    for lay, mb in pairs:  # each layout tried at the top rung, once (the pairs share a layout)
        if mb != top or id(lay) in outgrown:
            continue
        if _ranked(beyond, rung_bound, lay, rung, low) < least:  # its bound at the rung, off the lowest's parts
            continue
        try:  # its bound at the top rung (at least its speed there at every level), doubled each rung
            most = speed_rank(gain * bound(lay, top))
        except InvalidWorkload:
            continue
        if most < least:
            continue
        dims = (lay.tp > 1, lay.cp > 1, lay.ep > 1, lay.pp > 1, lay.virtual_stages > 1)
        need = needs.get(dims)
        if need is None:
            need = needs[dims] = speed_rank(needed(lay, first, first_tokens_per_s, margin))
        key = split_of(lay)
        if most < need or key in settled:
            continue
        shape = (lay.dp, lay.pp, lay.virtual_stages, lay.tp, lay.cp)
        ok = checked.get(shape)
        if ok is None:
            ok = checked[shape] = runs(lay, rung) and in_reach(lay, first, held)
        if not ok or _ranked(beyond, rung_bound, lay, rung, top) < need or _ranked(beyond, bound, lay, rung) < need:
            continue
        for rc in levels:
            if unfit(lay, top, rc):
                continue  # its micro-batch 4 does not fit at this level, so the rung cannot
            if _ranked(beyond, speed, lay, rung, rc) < need:
                if rc == "none":  # no level is faster: a recompute only adds work, and where the gradient sync
                    break  # binds hides as much of it as it adds, the same speed at speed_rank (ranking.py)
                continue
            if fits(lay, rung, rc):  # the split's climb can end here: its row, climbed as plan given it would
                settled.add(key)
                if not of_split:
                    for g, (other, _) in enumerate(pairs):
                        of_split.setdefault(split_of(other), []).append(g)
                members = of_split[key]
                f = row(fastest_first([pairs[g] for g in members], levels, speed, bound, None, outgrown, over), members)
                if f is not None:
                    found.append(f)
                break
    return found


def _ranked(factor: float, timed: Callable[..., float], *args: object) -> float:
    """``factor`` times what ``timed(*args)`` gives, at :func:`~.ranking.speed_rank`: minus infinity where refused."""
    try:
        return speed_rank(factor * timed(*args))
    except InvalidWorkload:
        return -math.inf
