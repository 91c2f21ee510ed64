"""The sweep's search of one layout: the fastest of its interleavings, micro-batches and recompute levels that fits,
with as few steps timed and memory plans made as that needs. Pure.

``plan``'s chooser (:func:`anchorgpu.planner.speed.layouts.choose_training_layout`) meets its candidates fastest
first and takes the first that fits; a sweep row is one layout, so it wants only that first one. Each pair
(interleaving and micro-batch) has a cheap bound on its speed (:func:`~anchorgpu.planner.speed.training.tokens_per_s_bound`),
and the recompute levels, least first, only add work, so a level's time bounds the levels after it. A pair is timed
at its first level that fits when its bound reaches the front; the level after a timed one is timed when that time
reaches the front, and asked whether it fits only if it then comes first. As in the chooser, a recompute level may
beat the one before it by a hair (its extra compute hides a little more of the gradient sync): the next level is
timed before a level is taken, so such a level is still found.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from typing import TypeVar

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.speed.flops import Recompute
from anchorgpu.planner.speed.ranking import speed_rank

__all__ = ["fastest_fitting"]

P = TypeVar("P")  # a pair: an interleaving and a micro-batch (the caller's own type)
_PAIR, _NEXT, _FITS, _UNSURE, _LATER = range(5)  # what a search entry is (fastest_fitting), in the order they sort


def fastest_fitting(pairs: Sequence[P], levels: tuple[Recompute, ...], speed: Callable[[P, Recompute], float],
                    bound: Callable[[P], float], wanted: Callable[[P, Recompute], bool], hair: bool = True,
                    ) -> tuple[float, P, Recompute] | None:
    """The fastest candidate (each pair at each level) that is ``wanted`` (it fits, and no faster candidate that
    fits outruns it for certain), its speed in tokens/s, ties to the earlier candidate (pairs in order, each at its
    levels least first); ``None`` when none is. ``bound(pair)`` is at least the pair's speed at every level; ``speed``
    may refuse a pair (``InvalidWorkload``): then it is not a candidate. ``hair=False`` where no level can beat the one
    before it: the next level is then not timed before one is taken. Speeds are compared at
    :func:`~anchorgpu.planner.speed.ranking.speed_rank` (as ``plan``'s chooser compares them); the speed returned is
    the candidate's own.

    >>> times = {("a", "none"): 90.0, ("a", "full"): 70.0, ("b", "none"): 95.0, ("b", "full"): 80.0}
    >>> fastest_fitting(["a", "b"], ("none", "full"), lambda p, rc: times[p, rc], lambda p: 100.0,
    ...                 lambda p, rc: rc == "full" or p == "a")
    (90.0, 'a', 'none')
    """
    n = len(levels)
    # an entry: (minus a speed or a bound, candidate index, kind, pair, level); the kinds, in the order they sort on a
    # tie: a pair's bound (its first level that fits is timed when it reaches the front), the bound a level's time
    # puts on the levels after it (the next is timed then, fitting or not: most are slower and need no plan), a
    # candidate known to fit, one whose fit is asked only if it reaches the front, and that bound again where no level
    # can beat the one before it (after the level it follows: it is taken first)
    after = _NEXT if hair else _LATER
    heap = [(-speed_rank(bound(p)), g * n, _PAIR, g, 0, 0.0) for g, p in enumerate(pairs)]
    heapq.heapify(heap)
    while heap:
        _, i, kind, g, j, timed = heapq.heappop(heap)
        if kind == _FITS or (kind == _UNSURE and wanted(pairs[g], levels[j])):
            return timed, pairs[g], levels[j]
        if kind == _UNSURE:
            continue
        if kind == _PAIR:
            j = next((k for k in range(n) if wanted(pairs[g], levels[k])), n)
            if j == n:
                continue
        try:
            value = speed(pairs[g], levels[j])
        except InvalidWorkload:
            continue  # a pair refused at one level is refused at all (the checks do not read the recompute)
        rank = -speed_rank(value)
        heapq.heappush(heap, (rank, g * n + j, _FITS if kind == _PAIR else _UNSURE, g, j, value))
        if j + 1 < n:  # the levels after it: no faster than it (a hair at most), the next timed when that is the front
            heapq.heappush(heap, (rank, g * n + j, after, g, j + 1, value))
    return None
