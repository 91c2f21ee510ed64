"""How the layout searches compare two speeds: at nine significant digits, so that candidates the model times alike
tie, and a tie goes to the earlier candidate (less recompute, smaller micro-batch, the candidates' order).

Where the data-parallel link binds a step (FSDP's gathers longer than the computation beside them), recompute's
extra compute hides as much more of the traffic as it adds, so a layout runs at the same speed at every recompute
level; the two searches (``plan``'s chooser, :func:`~anchorgpu.planner.speed.layouts.choose_training_layout`, and the
sweep's, :func:`~anchorgpu.planner.sweep_search.fastest_fitting`) add the step's terms in different orders, and a
last-bit difference then picked full recompute in one and none in the other. Pure.
"""

from __future__ import annotations

import math

__all__ = ["RANK_DIGITS", "speed_rank"]

RANK_DIGITS = 9
"""Significant digits two speeds are compared at (a part in 10^8 to 10^9: far below any calibrated figure's band)."""


def speed_rank(tokens_per_s: float) -> float:
    """``tokens_per_s`` rounded to :data:`RANK_DIGITS` significant digits, for ordering only (monotone: a bound at least
    a speed ranks at least as high); infinities, NaN and zero as they are.

    >>> speed_rank(12675.042286314607) == speed_rank(12675.042286314603)
    True
    >>> speed_rank(12675.0423) > speed_rank(12675.0421)
    True
    """
    if tokens_per_s == 0.0 or not math.isfinite(tokens_per_s):
        return tokens_per_s
    return round(tokens_per_s, RANK_DIGITS - 1 - math.floor(math.log10(abs(tokens_per_s))))
