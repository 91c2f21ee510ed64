"""The order a training layout search meets its candidates in (:func:`fastest_first`): fastest first, timing only
what that order needs, with a ZeRO-2 layout's ZeRO-1 twin standing in for its time on Megatron's stack
(:func:`zero1_twins`). The candidates themselves and the chooser are :mod:`~anchorgpu.planner.speed.layouts`'s. Pure.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterator

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.speed.ranking import speed_rank
from anchorgpu.planner.speed.train_layout import TrainLayout

__all__ = ["add_zero2_block", "fastest_first", "zero1_twins"]


def fastest_first(pairs: list[tuple[TrainLayout, int]], levels: tuple[Recompute, ...],
                  speed: Callable[[TrainLayout, int, Recompute], float],
                  bound: Callable[[TrainLayout, int], float] | None = None,
                  twins: Callable[[int], int | None] | None = None, skipped: set[int] | None = None,
                  over: Callable[[TrainLayout, int], float | None] | None = None,
                  ) -> Iterator[tuple[float, int, TrainLayout, int, Recompute]]:
    """The candidates (each pair at each level, :func:`~.layouts._candidates`) that can be timed, fastest first (ties
    in candidate order; speeds compared at :func:`~anchorgpu.planner.speed.ranking.speed_rank`, as the sweep's search
    compares them), timing as few as that order needs.

    A layout and micro-batch run fastest without recompute (each level only adds work), so that time bounds all of
    its levels: every layout is timed at its first level first, and its other levels only when that bound reaches
    the front - the order of timing them all and sorting, for a fraction of the timing (a search keeps to the few
    fastest layouts, and plans them in this order until one fits). The one exception: a recompute's extra compute
    also hides a little more of the gradient sync, so a level can beat its own bound by that little; it is still
    found, and only loses a tie closer than that to another layout.

    ``bound`` (a layout and micro-batch's speed without recompute or more, cheaper to find: ``tokens_per_s_bound``)
    puts off even that first timing until the bound reaches the front: what comes out, and in what order, is the
    same, since a bound never sorts after its layout's time (a bound that ties its time sorts first).

    ``over`` (a layout and micro-batch's bound on ``bound``, cheaper still, or ``None`` where there is none:
    :func:`~.rung_bound.rung_tokens_per_s_bound` read off the layout's smallest micro-batch) puts off ``bound`` in
    turn, the same way: most layouts never reach the front, and their bound is never timed.

    ``twins`` (pair ``g`` -> an earlier pair at least as fast at every level, :func:`zero1_twins`) stands the twin's
    time in for ``g``'s in the same way: ``g``'s layout time waits behind its twin's, and each of its levels behind
    the twin's same level. The twin's candidate comes first in a tie, so it is yielded (and planned) before ``g`` is
    timed there, and a search that stops at the twin never times ``g`` at that level. The order is the same again:
    each stand-in sorts before the time it stands for. A stand-in whose layout (by id) the caller has put in
    ``skipped`` meanwhile (no level of it can be chosen) is dropped untimed: the others come out as before.
    """
    n = len(levels)
    twin_of = twins or (lambda g: None)
    skipped = skipped if skipped is not None else set()

    def ranked(lay: TrainLayout, mb: int, rc: Recompute) -> float:  # compared at speed_rank, as the sweep compares them
        return speed_rank(speed(lay, mb, rc))

    # an entry: (minus a speed, candidate index, its kind, pair); a kind sorts its stand-ins before its times
    heap: list[tuple[float, int, int, int]] = []
    layout_speed: dict[int, float] = {}  # pair -> its time without recompute, once timed (a twin's stand-in)
    level_speed: dict[int, float] = {}  # candidate -> its time, once timed
    for g, (lay, mb) in enumerate(pairs):
        try:
            if levels[0] != "none":
                heap.append((-math.inf, g * n, _LAYOUT, g))
            elif bound is not None:
                above = None
                if over is not None:
                    try:
                        above = over(lay, mb)
                    except InvalidWorkload:  # bound says whether it refuses the layout too
                        pass
                heap.append((-speed_rank(bound(lay, mb)), g * n, _BOUND, g) if above is None
                            else (-speed_rank(above), g * n, _OVER, g))
            else:
                heap.append((-ranked(lay, mb, "none"), g * n, _LAYOUT, g))
        except InvalidWorkload:
            continue  # a layout refused at one level is refused at all (the checks do not read the recompute)
    heapq.heapify(heap)
    while heap:
        neg, i, kind, g = heapq.heappop(heap)
        lay, mb = pairs[g]
        if kind == _LEVEL:
            yield -neg, i, lay, mb, levels[i - g * n]
            continue
        if kind == _OVER and bound is not None:  # the bound's own bound reached the front: time the bound
            try:
                heapq.heappush(heap, (-speed_rank(bound(lay, mb)), i, _BOUND, g))
            except InvalidWorkload:
                pass
            continue
        if kind == _BOUND and (t := twin_of(g)) is not None and t in layout_speed:  # wait behind the twin's time
            heapq.heappush(heap, (-layout_speed[t], i, _TWIN_LAYOUT, g))
            continue
        if kind in (_BOUND, _TWIN_LAYOUT):  # a stand-in reached the front: time the layout
            try:
                layout_speed[g] = value = ranked(lay, mb, "none")
            except InvalidWorkload:
                continue
            heapq.heappush(heap, (-value, i, _LAYOUT, g))
            continue
        if kind == _TWIN_LEVEL:  # the twin's level went by unfitted: time this one
            if id(lay) in skipped:
                continue
            try:
                level_speed[i] = value = ranked(lay, mb, levels[i - g * n])
            except InvalidWorkload:
                continue
            heapq.heappush(heap, (-value, i, _LEVEL, g))
            continue
        twin = twin_of(g)
        for j, rc in enumerate(levels):  # the layout's time reached the front: time (or stand in for) every level
            if twin is not None and twin * n + j in level_speed and not (rc == "none" and not math.isinf(neg)):
                heapq.heappush(heap, (-level_speed[twin * n + j], g * n + j, _TWIN_LEVEL, g))
                continue
            try:
                value = -neg if rc == "none" and not math.isinf(neg) else ranked(lay, mb, rc)
            except InvalidWorkload:
                continue
            level_speed[g * n + j] = value
            heapq.heappush(heap, (-value, g * n + j, _LEVEL, g))


# the kinds of a heap entry of fastest_first, stand-ins first where the speed and candidate tie
_OVER, _TWIN_LEVEL, _TWIN_LAYOUT, _BOUND, _LAYOUT, _LEVEL = -4, -3, -2, -1, 0, 1



def add_zero2_block(blocks: list[tuple[int, int, int]], zero1_start: int, zero2_start: int, zero2_end: int) -> None:
    """Record the ZeRO-2 run ``zero2_start:zero2_end`` when the ZeRO-1 run before it holds the same pairs."""
    if zero2_end > zero2_start and zero2_start - zero1_start == zero2_end - zero2_start:
        blocks.append((zero2_start, zero2_end, zero2_start - zero1_start))


def zero1_twins(blocks: list[tuple[int, int, int]]) -> Callable[[int], int | None]:
    """Each ZeRO-2 pair's ZeRO-1 twin (the same layout and micro-batch), by index into the candidates, from
    :func:`~.layouts._candidates`' ``zero2_blocks``: on Megatron's stack a twin is at least as fast at every recompute
    level (ZeRO-2 adds a gradient reduce each micro-batch and the last bucket,
    :func:`~anchorgpu.planner.speed.zero2.zero2_sync_terms`; tests/speed/test_chooser_zero2_twins.py checks it over a
    sample), and comes first in the candidates' order. Not on the PyTorch-native stack: DeepSpeed's larger buckets pay
    fewer latencies than ZeRO-1's, so there ZeRO-2 can be a little faster. Looked up only for the few pairs a search
    reaches, so nothing is built per candidate."""
    starts = [start for start, _, _ in blocks]

    def twin_of(g: int) -> int | None:
        k = bisect.bisect_right(starts, g) - 1
        if k < 0 or g >= blocks[k][1]:
            return None
        return g - blocks[k][2]

    return twin_of
