"""Each layout's floor rung in a serving sweep with a per-user latency limit (``recommend --min-tokens-per-s-per-user
X``, ``--max-ttft-s T``): the most sequences it runs at once while each user still decodes at least ``X`` tokens a
second and sees the first token within ``T`` seconds (:class:`UserLimits`), within its saturation
(:mod:`anchorgpu.planner.sweep_saturation`). The ladder's powers of two price a layout whose floor falls between two
rungs at the rung below it: DeepSeek-V3 as TP 8 x DP 3 on 24 H200 was shown at 64 users under 33.3 tok/s a user,
the next rung, 128, being too slow. Per-user speed falls as a replica runs more sequences (and the first token comes
later), about linearly within a regime, so a search that interpolates on the figures finds it in a few calls
(:func:`limit_sequences`), for every layout and precision at once. Pure."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from anchorgpu.errors import said
from anchorgpu.units import fmt_given

__all__ = ["Gauge", "UserLimits", "floor_rungs", "limit_rungs", "limit_sequences", "rung_of"]

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

    def slack(self, per_user: FloatArray, ttft_s: FloatArray | None) -> FloatArray:
        """How far within both limits each configuration is, as a share of the limit: the smaller of ``1 - floor x
        step`` (a user's step between tokens, ``1 / per_user``, against the longest the floor allows) and ``1 - TTFT /
        limit``; 0 at a limit, negative past it. Each falls about linearly with the sequences a replica runs (a step
        grows by each sequence's KV read, or its products), so a line through two of them crosses 0 near where the
        limits are first missed (:func:`limit_sequences` interpolates on it; :meth:`met` decides, not this).

        >>> UserLimits(20.0, 2.0).slack(np.array([25.0, 40.0]), np.array([1.0, 3.0])).round(6).tolist()
        [0.2, -0.5]
        """
        with np.errstate(divide="ignore"):
            out: FloatArray = (1.0 - self.min_tokens_per_s_per_user / per_user
                               if self.min_tokens_per_s_per_user is not None else np.full(np.shape(per_user), np.inf))
        if self.max_ttft_s is not None:
            assert ttft_s is not None, "a TTFT limit needs the TTFT figures"
            out = np.minimum(out, 1.0 - ttft_s / self.max_ttft_s)
        return out

    def gauge(self, per_user: FloatArray, ttft_s: FloatArray | None) -> tuple[BoolArray, FloatArray]:
        """:meth:`met` and :meth:`slack` of the same figures (a :data:`Gauge`'s answer)."""
        return self.met(per_user, ttft_s), self.slack(per_user, ttft_s)

    def words(self) -> str:
        """``decode 20 tokens/s or faster and see a first token within 2 s``."""
        decode = (said("decode {rate} tokens/s or faster", rate=fmt_given(self.min_tokens_per_s_per_user))
                  if self.min_tokens_per_s_per_user is not None else None)
        first = (said("see a first token within {ttft} s", ttft=fmt_given(self.max_ttft_s))
                 if self.max_ttft_s is not None else None)
        if decode is not None and first is not None:
            return said("{decode} and {first}", decode=decode, first=first)
        return decode or first or ""

PerUser = Callable[[IntArray], FloatArray]
"""Decode tokens/s a user at each concurrency of an ``(M, R, L)`` array, as the sweep times it, each of the ``R``
rows at its own precision (in the order of the saturation rungs: weights first, then KV dtype)."""

WAYS = 4
"""The parts an open bracket is cut into a round once the interpolation has had :data:`INTERPOLATED_ROUNDS` rounds
(figures with a jump or a kink near the limit): ``WAYS - 1`` cuts, as the search cut every bracket before stop 61 (4
ways measured best then: on ``recommend llama-3.1-70b --lower-precision --min-tokens-per-s 33.3`` over the whole
catalog, median CPU of the search, halving 12.5 ms, 4 ways 10.1 ms, 8 ways 19.4 ms)."""

INTERPOLATED_ROUNDS = 3
"""Rounds after the ends that ask only the interpolated counts: on run.py's two limit calls (``recommend llama-3.1-70b
--lower-precision`` under 33.3 tok/s a user; 20 tok/s and a 2 s first token), 1,602 searches each, the second settles
every search (``benchmarks/hardening/stop61_recmono.md``); the third is for figures with a kink or a jump."""


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
    limits = UserLimits(min_tokens_per_s_per_user=floor_tokens_per_s)
    return limit_rungs(lambda conc, _asked: limits.gauge(per_user(conc), None), dp, saturation, ways)


Gauge = Callable[[IntArray, BoolArray | None], tuple[BoolArray, FloatArray]]
"""Where the limits hold at each concurrency of an ``(M, R, L)`` array, and how far within them
(:meth:`UserLimits.gauge`: a figure that is 0 at a limit, negative past it, about linear in the sequences a replica);
the second argument, where not None, an ``(R, L)`` mask of the positions asked: an answer outside it is not read (a
search leaves its settled brackets out)."""


def limit_rungs(gauge: Gauge, dp: IntArray, saturation: IntArray, ways: int = WAYS) -> IntArray:
    """``(R, L)``: each layout's rung of :func:`limit_sequences` (its sequences a replica as a concurrency,
    :func:`rung_of`), at most its ``saturation`` rung (at least 2, as any rung)."""
    return np.minimum(rung_of(dp, limit_sequences(gauge, dp, saturation, ways)), np.maximum(saturation, 2))


def limit_sequences(gauge: Gauge, dp: IntArray, saturation: IntArray, ways: int = WAYS) -> IntArray:
    """``(R, L)``: for each layout, a count ``T`` of sequences a replica whose concurrency (:func:`rung_of`) meets the
    limits (``gauge``'s first answer, at each concurrency of an ``(M, R, L)`` array) while ``T + 1`` misses them, or
    ``T`` its saturation's count (``saturation // dp``, at least 1) where that meets them; where even one sequence a
    replica misses them, 1 (the sweep marks it too slow, as any rung). Where the figures fall steadily (meets up to
    some count, misses past it) that is the largest count that meets them; where they do not, it is one such
    transition, not necessarily the first, and may be another than the 4-way cuts' before stop 61 found (nor was
    theirs always the first): both ends of it are asked, never inferred, whichever transition the interpolation
    lands on.

    The search keeps each layout's bracket (``lo`` meets, ``hi`` misses) and the ``gauge``'s second answer at its
    ends (:meth:`UserLimits.slack`, about linear in the sequences within a regime): the ends (1 and the saturation's
    count) first, then each round the counts around where a line crosses 0 (``g`` rounded down): in the first round
    ``g`` and ``g + 1`` on the line through the ends, then ``g - 1`` to ``g + 1`` on the line through the two
    nearest asked counts on one side of the bracket (the side whose two are closer together: the local slope). A
    bracket still open after :data:`INTERPOLATED_ROUNDS` such rounds is also cut into ``ways`` parts a round, so
    every search ends within a few rounds more, however the figures run. Each round asks ``gauge`` only at the
    brackets still open (its mask, :data:`Gauge`). Each layout's search reads only its own column (its
    ``saturation // dp`` and ``gauge`` at its concurrencies), so two layouts that ``gauge`` times alike, with the
    same ``saturation // dp``, find the same count."""
    top = np.maximum(saturation // dp, 1)  # sequences a replica at saturation
    met, slack = gauge(rung_of(dp, np.stack((np.ones_like(top), top))), None)
    lo = np.where(met[1], top, 1)
    hi = np.where(met[1] | ~met[0], lo, top)  # a bracket (lo meets, hi does not) where hi > lo + 1
    ends = _Bracket(lo, slack[0], hi, slack[1])
    parts = np.arange(1, ways)[:, None, None]
    rounds = 0
    while (open_ := ends.hi - ends.lo > 1).any():
        rounds += 1
        if rounds == 1:
            guess = ends.crossing()
            asked = np.stack((guess, guess + 1))
        else:  # and the count below: a crossing a hair past the transition puts g on the first miss (stop61_recmono.md)
            guess = ends.local_crossing()
            asked = np.stack((guess - 1, guess, guess + 1))
        if rounds > INTERPOLATED_ROUNDS:
            asked = np.concatenate((asked, _cuts(ends.lo, ends.hi, parts, ways)))
            asked.sort(axis=0)
        asked = np.where(open_, np.clip(asked, ends.lo + 1, ends.hi - 1), ends.lo)  # ascending, inside each bracket
        met, slack = gauge(rung_of(dp, asked), open_)
        ends.narrow(asked, met, slack, open_)
    return ends.lo


class _Bracket:
    """Each search's bracket (``lo`` meets the limits, ``hi`` misses them) with the gauge's slack at its ends, and the
    next nearest asked count each side (``lo2`` below ``lo``, ``hi2`` above ``hi``; 0 where none was asked): the
    points :func:`limit_sequences` draws its lines through."""

    def __init__(self, lo: IntArray, s_lo: FloatArray, hi: IntArray, s_hi: FloatArray) -> None:
        self.lo, self.s_lo, self.hi, self.s_hi = lo, s_lo, hi, s_hi
        self.lo2, self.hi2 = np.zeros_like(lo), np.zeros_like(hi)
        self.s_lo2, self.s_hi2 = np.zeros_like(s_lo), np.zeros_like(s_hi)

    def crossing(self) -> IntArray:
        """Where the line through the bracket's ends crosses 0, rounded down."""
        return _crossing(self.lo, self.s_lo, self.hi, self.s_hi, self.lo)

    def local_crossing(self) -> IntArray:
        """Where the line through the two nearest asked counts one side crosses 0, rounded down: below ``lo`` where
        those two are the closer together (or there are none above), else above ``hi``; through the ends where
        neither side has two."""
        ends = self.crossing()
        above = np.where(self.hi2 > 0, _crossing(self.hi, self.s_hi, self.hi2, self.s_hi2, ends), ends)
        below = (self.lo2 > 0) & ((self.hi2 == 0) | (self.lo - self.lo2 <= self.hi2 - self.hi))
        return np.where(below, _crossing(self.lo2, self.s_lo2, self.lo, self.s_lo, ends), above)

    def narrow(self, asked: IntArray, met: BoolArray, slack: FloatArray, open_: BoolArray) -> None:
        """Each open bracket narrowed to the counts ``asked`` (``(M, R, L)``, ascending, inside it) first miss the
        limits at (``hi``; unchanged where none does) and the one before it (``lo``; unchanged where the first
        asked misses), keeping the next nearest asked count each side."""
        m = asked.shape[0]
        first = np.where(met.all(axis=0), m, np.argmax(~met, axis=0))  # the first asked count that misses (m: none)
        below = np.maximum(first - 1, 0)[None]
        moved = first > 0
        lo = np.where(moved, np.take_along_axis(asked, below, 0)[0], self.lo)
        s_lo = np.where(moved, np.take_along_axis(slack, below, 0)[0], self.s_lo)
        # the next below: the largest asked count under the new lo (they all met), else the old lo, else its next
        under = np.where((np.arange(m)[:, None, None] < first) & (asked < lo), asked, 0)
        at = np.argmax(under, axis=0)[None]
        lo2 = np.where(self.lo < lo, self.lo, self.lo2)
        s_lo2 = np.where(self.lo < lo, self.s_lo, self.s_lo2)
        nearer = under.max(axis=0) > lo2
        lo2 = np.where(nearer, np.take_along_axis(under, at, 0)[0], lo2)
        s_lo2 = np.where(nearer, np.take_along_axis(slack, at, 0)[0], s_lo2)
        missed = first < m
        at_hi = np.minimum(first, m - 1)[None]
        hi = np.where(missed, np.take_along_axis(asked, at_hi, 0)[0], self.hi)
        s_hi = np.where(missed, np.take_along_axis(slack, at_hi, 0)[0], self.s_hi)
        # the next above: the smallest asked count over the new hi, else the old hi, else its next
        none = np.iinfo(np.int64).max
        over = np.where(asked > hi, asked, none)
        at = np.argmin(over, axis=0)[None]
        hi2 = np.where(self.hi > hi, self.hi, np.where(self.hi2 > 0, self.hi2, none))
        s_hi2 = np.where(self.hi > hi, self.s_hi, self.s_hi2)
        nearer = over.min(axis=0) < hi2
        hi2 = np.where(nearer, np.take_along_axis(over, at, 0)[0], hi2)
        s_hi2 = np.where(nearer, np.take_along_axis(slack, at, 0)[0], s_hi2)
        hi2 = np.where(hi2 == none, 0, hi2)
        for name, new in (("lo", lo), ("s_lo", s_lo), ("lo2", lo2), ("s_lo2", s_lo2), ("hi", hi), ("s_hi", s_hi),
                          ("hi2", hi2), ("s_hi2", s_hi2)):
            setattr(self, name, np.where(open_, new, getattr(self, name)))


def _crossing(x0: IntArray, s0: FloatArray, x1: IntArray, s1: FloatArray, otherwise: IntArray) -> IntArray:
    """Where the line through (``x0``, ``s0``) and (``x1``, ``s1``) crosses 0, rounded down; ``otherwise`` where it
    does not (level, the same count twice, a figure not finite). Only a guess: the caller clips it into the bracket."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = x0 + s0 * (x1 - x0) / (s0 - s1)
    ok = np.isfinite(x) & (x0 != x1)
    # far outside any bracket is as good as its edge: clipped before the cast (no overflow)
    at = np.floor(np.clip(np.where(ok, x, 0.0), -1.0, 2.0**53))
    crossing: IntArray = np.where(ok, at, otherwise).astype(np.int64)
    return crossing


def _cuts(lo: IntArray, hi: IntArray, parts: IntArray, ways: int) -> IntArray:
    """The ``ways - 1`` cuts ``(ways - 1, R, L)`` that part each bracket (``lo``, ``hi``) into ``ways``, ascending,
    each strictly inside it (where it is open, ``hi > lo + 1``)."""
    cut: IntArray = np.clip(lo + -(-(hi - lo) * parts // ways), lo + 1, hi - 1)
    return cut
