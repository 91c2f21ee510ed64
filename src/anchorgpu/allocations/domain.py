"""Allocation domain: a bought quote as a modeled rental (no hardware is touched). Pure: no SQL, no clock.

States and transitions (``now`` is always passed in)::

    scheduled ──(clock reaches starts_at)──▶ active ──stop──▶ stopped ──start──▶ active
        │                                      │                 │
        └─────────────── terminate ────────────┴─────────────────┴──▶ terminated   (no refund)
    scheduled / active / stopped ──(clock reaches ends_at)──▶ expired

* ``ends_at = starts_at + term`` and moves only by ``extend`` (a new paid period). **Stopping never
  changes ``ends_at`` or ``amount_usd``**: the paid term keeps running while stopped.
* Every transition yields an :class:`AllocationEvent`; clock-driven ones (activation, expiry) are dated
  at the instant they happened (``starts_at`` / ``ends_at``), not when they were noticed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from anchorgpu.allocations.errors import AllocationExpired, AllocationStateConflict, AllocationTerminated
from anchorgpu.errors import said
from anchorgpu.units import Term

__all__ = [
    "STOP_NOTICE",
    "Allocation",
    "AllocationEvent",
    "AllocationState",
    "Booking",
    "peak_servers",
]

STOP_NOTICE = (
    "Stopping does not pause the paid term: the allocation still ends at its ends_at and its amount "
    "paid does not change; start it again any time before it ends."
)
"""The statement every answer to a stop carries (DESIGN.md section 2)."""

MAX_YEARS_AHEAD = 20
MAX_END_AHEAD = timedelta(hours=MAX_YEARS_AHEAD * 8_760)
"""Product rule: an allocation never ends more than 20 years (175,200 h) after the moment it is bought or
extended. Ten-year terms stay possible, repeated extensions cannot walk ``ends_at`` towards year 9999."""


def bounded_end(starts_at: datetime, hours: int, now: datetime) -> datetime:
    """``starts_at + hours``, or :class:`~anchorgpu.errors.InvalidTerm` past :data:`MAX_END_AHEAD` from ``now``.

    >>> from datetime import UTC
    >>> bounded_end(datetime(2026, 1, 1, tzinfo=UTC), 24, datetime(2026, 1, 1, tzinfo=UTC)).day
    2
    """
    from anchorgpu.errors import InvalidTerm

    limit = now + MAX_END_AHEAD
    if hours < 0 or hours > MAX_YEARS_AHEAD * 8_760 or starts_at > limit or timedelta(hours=hours) > limit - starts_at:
        raise InvalidTerm(said("an allocation may end at most {MAX_YEARS_AHEAD} years ahead (before "
                               "{limit:%Y-%m-%d}); {hours:,} more hours from {starts_at:%Y-%m-%d} would pass that",
                               MAX_YEARS_AHEAD=MAX_YEARS_AHEAD, limit=limit, hours=hours, starts_at=starts_at))
    return starts_at + timedelta(hours=hours)


class AllocationState(StrEnum):
    SCHEDULED = "scheduled"
    ACTIVE = "active"
    STOPPED = "stopped"
    EXPIRED = "expired"
    TERMINATED = "terminated"


LIVE_STATES = frozenset({AllocationState.SCHEDULED, AllocationState.ACTIVE, AllocationState.STOPPED})


@dataclass(frozen=True, slots=True, kw_only=True)
class AllocationEvent:
    """One change of an allocation: ``kind`` is created / activated / stopped / started / extended /
    terminated / expired."""

    seq: int
    kind: str
    at: datetime
    from_state: AllocationState | None
    to_state: AllocationState
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Allocation:
    """A rental of ``quantity`` servers of ``offering_id`` in ``region`` over ``[starts_at, ends_at)``.

    ``term`` is the term first bought; extensions add to ``ends_at`` and ``amount_usd`` and are listed
    in ``events``. ``state`` is the state as last written; :meth:`resolve` applies the clock.
    """

    id: str
    account_id: str
    quote_id: str
    offering_id: str
    region: str
    quantity: int
    gpus: int
    state: AllocationState
    term: Term
    starts_at: datetime
    ends_at: datetime
    amount_usd: Decimal
    created_at: datetime
    terminated_at: datetime | None = None
    events: tuple[AllocationEvent, ...] = ()

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def bought(
        cls,
        *,
        id: str,
        account_id: str,
        quote_id: str,
        offering_id: str,
        region: str,
        quantity: int,
        gpus: int,
        term: Term,
        amount_usd: Decimal,
        starts_at: datetime,
        now: datetime,
    ) -> tuple[Allocation, AllocationEvent]:
        """A new allocation from a bought quote: scheduled if it starts later, active otherwise.

        >>> from datetime import UTC
        >>> t0 = datetime(2026, 1, 1, tzinfo=UTC)
        >>> a, e = Allocation.bought(id="al_1", account_id="acct_1", quote_id="q_1", offering_id="h100-sxm-1x-vm",
        ...     region="us-east", quantity=1, gpus=1, term=Term("month", 1), amount_usd=Decimal("2190.00"),
        ...     starts_at=t0, now=t0)
        >>> a.state.value, a.ends_at - a.starts_at, e.kind
        ('active', datetime.timedelta(days=30), 'created')
        """
        state = AllocationState.SCHEDULED if starts_at > now else AllocationState.ACTIVE
        allocation = cls(
            id=id, account_id=account_id, quote_id=quote_id, offering_id=offering_id, region=region,
            quantity=quantity, gpus=gpus, state=state, term=term, starts_at=starts_at,
            ends_at=bounded_end(starts_at, term.hours, now), amount_usd=amount_usd, created_at=now,
        )
        event = allocation._event("created", now, None, state, {"quote_id": quote_id, "amount_usd": str(amount_usd)})
        return allocation._with(events=(event,)), event

    # -- the clock ----------------------------------------------------------------------------
    def state_at(self, now: datetime) -> AllocationState:
        """The state at ``now``: expiry and activation follow the clock."""
        return self.resolve(now)[0].state

    def resolve(self, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        """Apply what the clock did since the last write: scheduled → active at ``starts_at``, any live
        state → expired at ``ends_at``. Returns the updated allocation and the new events."""
        current, new = self, []
        if current.state is AllocationState.SCHEDULED and now >= current.starts_at and current.starts_at < current.ends_at:
            event = current._event("activated", current.starts_at, current.state, AllocationState.ACTIVE)
            current, new = current._with(state=AllocationState.ACTIVE, events=(*current.events, event)), [event]
        if current.state in LIVE_STATES and now >= current.ends_at:
            event = current._event("expired", current.ends_at, current.state, AllocationState.EXPIRED)
            current, new = current._with(state=AllocationState.EXPIRED, events=(*current.events, event)), [*new, event]
        return current, new

    # -- actions (each returns the new allocation and the events to store) ---------------------
    def stop(self, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        """Stop a running allocation. ``ends_at`` and ``amount_usd`` do not change (the paid term runs on)."""
        current, events = self._require_live(now, "stop")
        if current.state is AllocationState.STOPPED:
            raise AllocationStateConflict(said("allocation {self_id} is already stopped", self_id=self.id))
        return current._transition("stopped", now, AllocationState.STOPPED, events, {"notice": STOP_NOTICE})

    def start(self, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        """Start a stopped allocation again (only before it ends)."""
        current, events = self._require_live(now, "start")
        if current.state is not AllocationState.STOPPED:
            raise AllocationStateConflict(said("allocation {self_id} is {state_value}, not stopped", self_id=self.id,
                                               state_value=current.state.value))
        target = AllocationState.SCHEDULED if now < current.starts_at else AllocationState.ACTIVE
        return current._transition("started", now, target, events)

    def extend(self, now: datetime, *, hours: int, amount_usd: Decimal, quote_id: str) -> tuple[Allocation, list[AllocationEvent]]:
        """Add ``hours`` of paid term after ``ends_at``, paid by ``amount_usd`` (priced by ``quote_id``)."""
        current, events = self._require_live(now, "extend")
        new_ends_at = bounded_end(current.ends_at, hours, now)
        details = {
            "quote_id": quote_id, "added_hours": hours, "amount_usd": str(amount_usd),
            "previous_ends_at": current.ends_at.isoformat(), "ends_at": new_ends_at.isoformat(),
        }
        extended = current._with(ends_at=new_ends_at, amount_usd=current.amount_usd + amount_usd)
        return extended._transition("extended", now, current.state, events, details)

    def terminate(self, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        """End the allocation now. No refund: ``amount_usd`` stays; capacity after ``now`` is released."""
        current, events = self._require_live(now, "terminate")
        ended = current._with(terminated_at=now)
        return ended._transition("terminated", now, AllocationState.TERMINATED, events, {"refund_usd": "0.00"})

    # -- helpers ------------------------------------------------------------------------------
    def _require_live(self, now: datetime, action: str) -> tuple[Allocation, list[AllocationEvent]]:
        current, events = self.resolve(now)
        if current.state is AllocationState.EXPIRED:
            raise AllocationExpired(said("cannot {action} allocation {self_id}: its paid term ended at {isoformat}",
                                         action=action, self_id=self.id, isoformat=current.ends_at.isoformat()))
        if current.state is AllocationState.TERMINATED:
            raise AllocationTerminated(said("cannot {action} allocation {self_id}: it was terminated", action=action,
                                            self_id=self.id))
        return current, events

    def _transition(
        self, kind: str, now: datetime, to_state: AllocationState, earlier: list[AllocationEvent],
        details: dict[str, Any] | None = None,
    ) -> tuple[Allocation, list[AllocationEvent]]:
        event = self._event(kind, now, self.state, to_state, details)
        return self._with(state=to_state, events=(*self.events, event)), [*earlier, event]

    def _event(
        self, kind: str, at: datetime, from_state: AllocationState | None, to_state: AllocationState,
        details: dict[str, Any] | None = None,
    ) -> AllocationEvent:
        return AllocationEvent(seq=len(self.events) + 1, kind=kind, at=at, from_state=from_state, to_state=to_state,
                               details=dict(details or {}))

    def _with(self, **changes: Any) -> Allocation:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class Booking:
    """Servers held over ``[starts_at, ends_at)`` (an allocation's bought or extended period)."""

    servers: int
    starts_at: datetime
    ends_at: datetime


def peak_servers(bookings: Iterable[Booking], window_start: datetime, window_end: datetime) -> int:
    """The most servers held at any instant of ``[window_start, window_end)`` (sweep over interval ends).

    Half-open intervals: a booking ending exactly when another starts does not overlap it.

    >>> from datetime import UTC
    >>> t = lambda h: datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=h)
    >>> peak_servers([Booking(servers=2, starts_at=t(0), ends_at=t(10)),
    ...               Booking(servers=1, starts_at=t(10), ends_at=t(20)),
    ...               Booking(servers=3, starts_at=t(5), ends_at=t(12))], t(0), t(24))
    5
    """
    points: list[tuple[datetime, int]] = []
    for b in bookings:
        start, end = max(b.starts_at, window_start), min(b.ends_at, window_end)
        if start < end:
            points.append((start, b.servers))
            points.append((end, -b.servers))
    # At equal instants, releases (-) sort before acquisitions (+): half-open intervals.
    points.sort(key=lambda p: (p[0], p[1]))
    peak = held = 0
    for _, delta in points:
        held += delta
        peak = max(peak, held)
    return peak
