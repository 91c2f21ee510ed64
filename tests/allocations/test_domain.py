"""The allocation state machine and the capacity sweep, with a fixed clock (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorgpu.allocations.domain import STOP_NOTICE, Allocation, AllocationState, Booking, peak_servers
from anchorgpu.allocations.errors import AllocationExpired, AllocationStateConflict, AllocationTerminated
from anchorgpu.units import Term

T0 = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


def bought(*, term: Term = Term("month", 1), starts_at: datetime = T0, now: datetime = T0) -> Allocation:
    allocation, _ = Allocation.bought(
        id="al_test", account_id="acct_test", quote_id="q_test", offering_id="h100-sxm-1x-vm", region="us-east",
        quantity=1, gpus=1, term=term, amount_usd=Decimal("2190.00"), starts_at=starts_at, now=now,
    )
    return allocation


def test_a_month_allocation_ends_exactly_720_hours_after_it_starts() -> None:
    # DESIGN.md section 2: a rental month is exactly 30 days (720 h); a week is 168 h.
    assert bought().ends_at - T0 == timedelta(hours=720)
    assert bought(term=Term("week", 2)).ends_at - T0 == timedelta(hours=336)


def test_a_purchase_writes_a_created_event_with_the_amount() -> None:
    allocation = bought()
    assert [e.kind for e in allocation.events] == ["created"]
    assert allocation.events[0].details == {"quote_id": "q_test", "amount_usd": "2190.00"}


def test_stop_never_changes_the_end_or_the_amount_paid() -> None:
    allocation = bought()
    stopped, events = allocation.stop(hours(5))
    assert stopped.state is AllocationState.STOPPED
    assert (stopped.ends_at, stopped.amount_usd) == (allocation.ends_at, allocation.amount_usd)
    assert events[-1].kind == "stopped" and events[-1].details["notice"] == STOP_NOTICE
    assert "does not pause the paid term" in STOP_NOTICE


def test_a_stopped_allocation_still_expires_at_its_original_end() -> None:
    stopped, _ = bought().stop(hours(1))
    assert stopped.state_at(hours(719)) is AllocationState.STOPPED
    assert stopped.state_at(hours(720)) is AllocationState.EXPIRED


def test_start_after_stop_makes_it_active_again() -> None:
    stopped, _ = bought().stop(hours(1))
    started, events = stopped.start(hours(2))
    assert started.state is AllocationState.ACTIVE and events[-1].kind == "started"


def test_starting_an_expired_allocation_is_refused_with_allocation_expired() -> None:
    stopped, _ = bought().stop(hours(1))
    with pytest.raises(AllocationExpired) as err:
        stopped.start(hours(721))
    assert err.value.code == "allocation_expired"


@pytest.mark.parametrize("action", ["stop", "start"])
def test_repeating_a_state_change_is_a_named_conflict(action: str) -> None:
    allocation = bought()
    if action == "start":  # active → start is meaningless
        with pytest.raises(AllocationStateConflict):
            allocation.start(hours(1))
    else:
        stopped, _ = allocation.stop(hours(1))
        with pytest.raises(AllocationStateConflict):
            stopped.stop(hours(2))


def test_a_future_start_is_scheduled_until_the_clock_reaches_it() -> None:
    allocation = bought(starts_at=hours(24), now=T0)
    assert allocation.state is AllocationState.SCHEDULED
    assert allocation.state_at(hours(23)) is AllocationState.SCHEDULED
    resolved, events = allocation.resolve(hours(25))
    assert resolved.state is AllocationState.ACTIVE
    assert [(e.kind, e.at) for e in events] == [("activated", hours(24))]


def test_expiry_is_dated_at_ends_at_not_when_it_was_noticed() -> None:
    _, events = bought(term=Term("hour", 10)).resolve(hours(100))
    assert [(e.kind, e.at) for e in events] == [("expired", hours(10))]


def test_extend_adds_the_term_and_its_price_after_the_current_end() -> None:
    extended, events = bought().extend(hours(3), hours=168, amount_usd=Decimal("547.00"), quote_id="q_ext")
    assert extended.ends_at == hours(720 + 168)
    assert extended.amount_usd == Decimal("2737.00")
    assert events[-1].details["previous_ends_at"] == hours(720).isoformat()


def test_terminate_keeps_the_amount_no_refund_and_blocks_later_actions() -> None:
    terminated, events = bought().terminate(hours(10))
    assert terminated.state is AllocationState.TERMINATED
    assert terminated.amount_usd == Decimal("2190.00") and events[-1].details["refund_usd"] == "0.00"
    for action in (terminated.stop, terminated.start, terminated.terminate):
        with pytest.raises(AllocationTerminated):
            action(hours(11))


def test_event_sequence_numbers_count_up_through_every_change() -> None:
    a = bought()
    a, _ = a.stop(hours(1))
    a, _ = a.start(hours(2))
    a, _ = a.extend(hours(3), hours=1, amount_usd=Decimal("3.49"), quote_id="q2")
    assert [e.seq for e in a.events] == [1, 2, 3, 4]
    assert [e.kind for e in a.events] == ["created", "stopped", "started", "extended"]


# -- capacity sweep ------------------------------------------------------------------------------

def test_back_to_back_bookings_do_not_overlap() -> None:
    # Half-open periods: one ending at 10 h and another starting at 10 h never run at the same instant.
    bookings = [Booking(servers=1, starts_at=hours(0), ends_at=hours(10)),
                Booking(servers=1, starts_at=hours(10), ends_at=hours(20))]
    assert peak_servers(bookings, hours(0), hours(20)) == 1


def test_bookings_outside_the_window_do_not_count() -> None:
    bookings = [Booking(servers=5, starts_at=hours(0), ends_at=hours(10))]
    assert peak_servers(bookings, hours(10), hours(20)) == 0
    assert peak_servers(bookings, hours(9), hours(20)) == 5


_intervals = st.lists(
    st.tuples(st.integers(0, 48), st.integers(1, 24), st.integers(1, 4)), max_size=12
)


@given(_intervals, st.integers(0, 48), st.integers(1, 48))
def test_peak_equals_a_brute_force_count_at_every_hour(raw: list[tuple[int, int, int]], w0: int, wlen: int) -> None:
    # Integer-hour bookings: the peak over [w0, w0+wlen) is the max over each whole hour in it.
    bookings = [Booking(servers=n, starts_at=hours(s), ends_at=hours(s + d)) for s, d, n in raw]
    brute = max(
        (sum(n for s, d, n in raw if s <= h < s + d) for h in range(w0, w0 + wlen)),
        default=0,
    )
    assert peak_servers(bookings, hours(w0), hours(w0 + wlen)) == brute
