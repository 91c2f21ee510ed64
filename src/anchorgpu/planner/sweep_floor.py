"""Each layout's floor rung in a serving sweep with a per-user latency limit (``recommend --min-tokens-per-s-per-user
X``, ``--max-ttft-s T``): the most sequences it runs at once while each user still decodes at least ``X`` tokens a
second and sees the first token within ``T`` seconds (:class:`UserLimits`), within its saturation
(:mod:`anchorgpu.planner.sweep_saturation`). The ladder's powers of two price a layout whose floor falls between two
rungs at the rung below it: DeepSeek-V3 as TP 8 x DP 3 on 24 H200 was shown at 64 users under 33.3 tok/s a user,
the next rung, 128, being too slow. Per-user speed falls as a replica runs more sequences, so a bisection over the
sequences a replica runs finds it, for every layout and precision at once. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from anchorgpu.units import fmt_given

__all__ = ["UserLimits", "floor_rungs", "limit_rungs", "limit_sequences", "rung_of"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class UserLimits:
    """What every user of a serving configuration must see, on the calibrated predictions at its concurrency (None:
    no such limit): at least ``min_tokens_per_s_per_user`` decode tokens a second (a TPOT of at most its inverse)
    and a first token within ``max_ttft_s`` seconds. AIConfigurator's SLA search takes the same two (TPOT, TTFT)."""

    min_tokens_per_s_per_user: float | None = None
    max_ttft_s: float | None = None

    @property
    def any(self) -> bool:
        return self.min_tokens_per_s_per_user is not None or self.max_ttft_s is not None

    def met(self, per_user: FloatArray, ttft_s: FloatArray | None) -> BoolArray:
        """Where both limits hold (NaN, a configuration without a figure, never holds one).

        >>> UserLimits(20.0, 2.0).met(np.array([25.0, 25.0, 10.0]), np.array([1.0, 3.0, 1.0])).tolist()
        [True, False, False]
        """
        ok: BoolArray = np.ones(np.shape(per_user), dtype=bool)
        if self.min_tokens_per_s_per_user is not None:
            ok &= per_user >= self.min_tokens_per_s_per_user
        if self.max_ttft_s is not None:
            assert ttft_s is not None, "a TTFT limit needs the TTFT figures"
            ok &= ttft_s <= self.max_ttft_s
        return ok

    def words(self) -> str:
        """``decode 20 tokens/s or faster and see a first token within 2 s``."""
        parts = ([f"decode {fmt_given(self.min_tokens_per_s_per_user)} tokens/s or faster"]
                 if self.min_tokens_per_s_per_user is not None else [])
        parts += [f"see a first token within {fmt_given(self.max_ttft_s)} s"] if self.max_ttft_s is not None else []
        return " and ".join(parts)

PerUser = Callable[[IntArray], FloatArray]
"""Decode tokens/s a user at each concurrency of an ``(M, R, L)`` array, as the sweep times it, each of the ``R``
rows at its own precision (in the order of the saturation rungs: weights first, then KV dtype)."""

WAYS = 4
"""The parts each bracket is cut into a round: ``WAYS - 1`` concurrencies a layout timed in one call. Measured on
``recommend llama-3.1-70b --lower-precision --min-tokens-per-s 33.3`` over the whole catalog (median CPU of the
search, 2 shared CPUs): halving (2) 12.5 ms, 4 ways 10.1 ms, 8 ways 19.4 ms; a call's fixed cost against its
width."""


def rung_of(dp: IntArray, per_replica: IntArray) -> IntArray:
    """The concurrency of ``per_replica`` sequences on each of ``dp`` replicas, at least 2 (the fewest sequences
    ``plan`` sizes at the request, as a saturation rung is; one sequence alone is the ladder's first rung).

    >>> rung_of(np.array([1, 3]), np.array([[1, 5]])).tolist()
    [[2, 15]]
    """
    rung: IntArray = np.maximum(dp * per_replica, 2)
    return rung


def floor_rungs(per_user: PerUser, dp: IntArray, saturation: IntArray, floor_tokens_per_s: float,
                ways: int = WAYS) -> IntArray:
    """:func:`limit_rungs` under a per-user speed floor alone.

    >>> speed = lambda conc: 100.0 / np.asarray(conc, dtype=np.float64)  # a user's tokens/s falls as 1 / users
    >>> floor_rungs(speed, np.array([1, 4]), np.array([[64, 64]]), 33.3).tolist()  # 100/3 >= 33.3 > 100/4
    [[3, 4]]
    """
    return limit_rungs(lambda conc, _asked: per_user(conc) >= floor_tokens_per_s, dp, saturation, ways)


Meets = Callable[[IntArray, BoolArray | None], BoolArray]
"""Where the limits hold at each concurrency of an ``(M, R, L)`` array; the second argument, where not None, an
``(R, L)`` mask of the positions asked: an answer outside it is not read (a search leaves its settled brackets out)."""


def limit_rungs(meets: Meets, dp: IntArray, saturation: IntArray, ways: int = WAYS) -> IntArray:
    """``(R, L)``: each layout's rung of :func:`limit_sequences` (its sequences a replica as a concurrency,
    :func:`rung_of`), at most its ``saturation`` rung (at least 2, as any rung)."""
    return np.minimum(rung_of(dp, limit_sequences(meets, dp, saturation, ways)), np.maximum(saturation, 2))


def limit_sequences(meets: Meets, dp: IntArray, saturation: IntArray, ways: int = WAYS) -> IntArray:
    """``(R, L)``: each layout's largest count of sequences a replica whose concurrency (:func:`rung_of`), at most its
    ``saturation`` rung, ``meets`` the limits (:class:`UserLimits` on its figures at each concurrency of an
    ``(M, R, L)`` array); where even one sequence a replica misses them, that one (the sweep marks it too slow, as
    any rung). A search between one sequence a replica (meets them) and the saturation's (does not), each bracket cut
    into ``ways`` parts a round and narrowed to the part where they are first missed: the answer meets them with one
    more sequence a replica below it, whether or not the figures move steadily. Each round asks ``meets`` only at the
    brackets still open (its mask, :data:`Meets`): a settled one keeps its ends whatever the answer there. Each
    layout's search reads only its own column (its ``saturation // dp`` and ``meets`` at its concurrencies), so two
    layouts that ``meets`` times alike, with the same ``saturation // dp``, find the same count."""
    top = np.maximum(saturation // dp, 1)  # sequences a replica at saturation
    one = np.ones_like(top)
    parts = np.arange(1, ways)[:, None, None]
    # the ends and, in the same call, the first round's cuts: a bracket open after the ends is (1, top)
    first_cuts = np.where(top - 1 > 1, _cuts(one, top, parts, ways), one)
    answers = meets(rung_of(dp, np.concatenate((one[None], top[None], first_cuts))), None)
    meets_lo, meets_top = answers[0], answers[1]
    lo = np.where(meets_top, top, 1)
    hi = np.where(meets_top | ~meets_lo, lo, top)  # a bracket (lo meets, hi does not) where hi > lo + 1
    first_round = True
    while (open_ := hi - lo > 1).any():
        cut = np.where(open_, _cuts(lo, hi, parts, ways), lo)  # (ways - 1, R, L), ascending
        slow = ~answers[2:] if first_round else ~meets(rung_of(dp, cut), open_)
        first_round = False
        first = np.argmax(slow, axis=0)  # the first cut too slow (0 where none is)
        any_slow = slow.any(axis=0)
        below = np.take_along_axis(cut, np.maximum(first - 1, 0)[None], axis=0)[0]
        at = np.take_along_axis(cut, first[None], axis=0)[0]
        new_lo = np.where(any_slow, np.where(first > 0, below, lo), cut[-1])
        new_hi = np.where(any_slow, at, hi)
        lo, hi = np.where(open_, new_lo, lo), np.where(open_, new_hi, hi)
    return lo


def _cuts(lo: IntArray, hi: IntArray, parts: IntArray, ways: int) -> IntArray:
    """The ``ways - 1`` cuts ``(ways - 1, R, L)`` that part each bracket (``lo``, ``hi``) into ``ways``, ascending,
    each strictly inside it (where it is open, ``hi > lo + 1``)."""
    cut: IntArray = np.clip(lo + -(-(hi - lo) * parts // ways), lo + 1, hi - 1)
    return cut
