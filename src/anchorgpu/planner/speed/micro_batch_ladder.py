"""The micro-batch ladder of a training search: the micro-batches it tries (:data:`MICRO_BATCHES`, or the one the
workload states), and the rungs past them (:data:`LADDER_PAST`) that a layout whose fastest micro-batch that fits is
the top one climbs while each is faster still and fits (:func:`climb_ladder`). A larger micro-batch amortises the
costs paid once a micro-batch (a mixture of experts' per-expert launches) but leaves fewer micro-batches a step, so a
pipeline's bubble grows. Both ``plan``'s chooser (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`)
and the sweep behind ``recommend`` (:mod:`~anchorgpu.planner.sweep_training`) climb it; whether another split's
climb can beat the first layout that fits is :mod:`~anchorgpu.planner.speed.chooser_margin`'s. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.inputs import Recompute, Workload
from anchorgpu.planner.speed.ranking import speed_rank
from anchorgpu.planner.speed.train_layout import TrainLayout

__all__ = ["LADDER_PAST", "MICRO_BATCHES", "climb_ladder", "micro_batches", "rung_candidates"]

T = TypeVar("T")  # what a search's fit check of a configuration returns (climb_ladder): the chooser's plan
MICRO_BATCHES: tuple[int, ...] = (1, 2, 4)
# the rungs past MICRO_BATCHES a search climbs from a layout whose fastest micro-batch that fits is the top one, while
# each is faster still (climb_ladder): 8 where 4 led. NVIDIA runs Qwen3-30B-A3B at micro-batch 8 on 8 B300 and 8 GB300
# (QWEN3_30B_A3B_PRETRAIN_CONFIG_B300_BF16_V1 and _GB300_BF16_V1; 4 on B200 and GB200:
# NVIDIA-NeMo/Megatron-Bridge@f29a269f scripts/performance/configs/qwen/qwen3_workload_base_configs.py)
LADDER_PAST: tuple[int, ...] = (8,)


def micro_batches(w: Workload) -> tuple[int, ...]:
    """The micro-batches a training search tries: the one the workload states, else :data:`MICRO_BATCHES` (a larger
    one where it fits and is faster; the sweep behind ``recommend`` tries the same), and past them the rungs of
    :data:`LADDER_PAST` that :func:`climb_ladder` climbs."""
    return (w.micro_batch,) if w.micro_batch else MICRO_BATCHES


def climb_ladder(chosen: tuple[int, Recompute, float, T], levels: tuple[Recompute, ...], runs: Callable[[int], bool],
                 speed: Callable[[int, Recompute], float], fitting: Callable[[int, Recompute], T | None],
                 ) -> tuple[int, Recompute, float, T]:
    """The micro-batch ladder climbed past :data:`MICRO_BATCHES` from one layout's fastest configuration that fits,
    ``chosen`` (micro-batch, recompute level, tokens/s, its fit): while its micro-batch is the top rung, the next
    rung of :data:`LADDER_PAST` at the level that is fastest and fits (``fitting``: the fit, or ``None``), where it
    ``runs`` (it splits the stated batch, holds no more sequences than one data-parallel rank gets, and the stack
    interleaves it) and is faster (at :func:`~.ranking.speed_rank`) than the rung below; else ``chosen`` as it is.
    A larger micro-batch amortises the costs paid once a micro-batch (a mixture of experts' per-expert launches) but
    leaves fewer micro-batches a step, so a pipeline's bubble grows: only a layout that 4 sped up, and only while each
    rung keeps improving, times the next. Both ``plan``'s chooser (from the layout it chose) and the sweep behind
    ``recommend`` (from each row's) climb it, at the chosen interleaving.

    >>> speeds = {(8, "none"): 150.0, (8, "full"): 120.0}
    >>> climb_ladder((4, "none", 100.0, "plan 4"), ("none", "full"), lambda mb: True, lambda mb, rc: speeds[mb, rc],
    ...              lambda mb, rc: f"plan {mb} {rc}" if rc == "full" else None)
    (8, 'full', 120.0, 'plan 8 full')
    """
    mb, rc, value, fit = chosen
    for below, rung in zip((MICRO_BATCHES[-1], *LADDER_PAST), LADDER_PAST, strict=False):
        if mb != below or not runs(rung):
            break
        timed: list[tuple[float, int, float]] = []
        for j, level in enumerate(levels):
            try:
                tokens_per_s = speed(rung, level)
            except InvalidWorkload:
                continue
            timed.append((-speed_rank(tokens_per_s), j, tokens_per_s))
        for neg, j, tokens_per_s in sorted(timed):  # fastest first, ties to the lesser recompute
            if -neg <= speed_rank(value):
                break  # no faster than the rung below: the climb stops there
            found = fitting(rung, levels[j])
            if found is not None:
                mb, rc, value, fit = rung, levels[j], tokens_per_s, found
                break
        if mb != rung:
            break
    return mb, rc, value, fit


def rung_candidates(pairs: list[tuple[TrainLayout, int]], runs: Callable[[TrainLayout, int], bool]) -> int:
    """How many of the candidates' layouts a search may climb to the first rung past :data:`MICRO_BATCHES`: those
    tried at the top rung whose next rung runs (``runs``; it reads only DP, PP and the interleaving, so once each)."""
    top, rung = MICRO_BATCHES[-1], LADDER_PAST[0]
    known: dict[tuple[int, int, int], bool] = {}
    count = 0
    for lay, mb in pairs:
        if mb == top:
            key = (lay.dp, lay.pp, lay.virtual_stages)
            if key not in known:
                known[key] = runs(lay, rung)
            count += known[key]
    return count
