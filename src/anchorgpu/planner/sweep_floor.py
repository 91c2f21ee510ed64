"""Each layout's floor rung in a serving sweep with a per-user speed floor (``recommend --min-tokens-per-s X``): the
most sequences it runs at once while each user still decodes at least ``X`` tokens a second, within its saturation
(:mod:`anchorgpu.planner.sweep_saturation`). The ladder's powers of two price a layout whose floor falls between two
rungs at the rung below it: DeepSeek-V3 as TP 8 x DP 3 on 24 H200 was shown at 64 users under 33.3 tok/s a user,
the next rung, 128, being too slow. Per-user speed falls as a replica runs more sequences, so a bisection over the
sequences a replica runs finds it, for every layout and precision at once. Pure."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = ["floor_rungs", "rung_of"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

PerUser = Callable[[IntArray], FloatArray]
"""Decode tokens/s a user at each concurrency of a ``(R, L)`` array, as the sweep times it, each row at its own
precision (rows in the order of the saturation rungs: weights first, then KV dtype)."""


def rung_of(dp: IntArray, per_replica: IntArray) -> IntArray:
    """The concurrency of ``per_replica`` sequences on each of ``dp`` replicas, at least 2 (the fewest sequences
    ``plan`` sizes at the request, as a saturation rung is; one sequence alone is the ladder's first rung).

    >>> rung_of(np.array([1, 3]), np.array([[1, 5]])).tolist()
    [[2, 15]]
    """
    rung: IntArray = np.maximum(dp * per_replica, 2)
    return rung


def floor_rungs(per_user: PerUser, dp: IntArray, saturation: IntArray, floor_tokens_per_s: float) -> IntArray:
    """``(R, L)``: each layout's largest concurrency, in whole sequences a replica (:func:`rung_of`), at most its
    ``saturation`` rung, whose per-user speed is at least ``floor_tokens_per_s``; where even one sequence a replica
    is slower, that one (never meeting the floor: the sweep marks it too slow, as any rung). Bisection between one
    sequence a replica (meets the floor) and the saturation's (does not), which keeps the answer a rung that meets
    the floor with one more sequence a replica below it.

    >>> speed = lambda conc: 100.0 / np.asarray(conc, dtype=np.float64)  # a user's tokens/s falls as 1 / users
    >>> floor_rungs(speed, np.array([1, 4]), np.array([[64, 64]]), 33.3).tolist()  # 100/3 >= 33.3 > 100/4
    [[3, 4]]
    """
    top = np.maximum(saturation // dp, 1)  # sequences a replica at saturation
    lo = np.ones_like(top)
    meets_lo = per_user(rung_of(dp, lo)) >= floor_tokens_per_s
    meets_top = per_user(rung_of(dp, top)) >= floor_tokens_per_s
    lo = np.where(meets_top, top, lo)
    hi = np.where(meets_top | ~meets_lo, lo, top)  # a bracket (lo meets, hi does not) where hi > lo + 1
    while (open_ := hi - lo > 1).any():
        mid = np.where(open_, (lo + hi) // 2, lo)
        meets = per_user(rung_of(dp, mid)) >= floor_tokens_per_s
        lo = np.where(open_ & meets, mid, lo)
        hi = np.where(open_ & ~meets, mid, hi)
    return np.minimum(rung_of(dp, lo), np.maximum(saturation, 2))
