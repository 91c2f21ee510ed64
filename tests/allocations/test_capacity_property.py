"""Property: whatever sequence of purchases, extensions and terminations arrives, the servers booked for
an offering never exceed its stock at any instant — and every refusal was justified.

Hypothesis drives the real services on a fresh SQLite database per example (copied from the session's
migrated template); the check recomputes the occupancy hour by hour from the bookings table.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from anchorgpu.accounts import create_account
from anchorgpu.allocations import services as svc
from anchorgpu.allocations.errors import InsufficientCapacity
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store.tables import CapacityBookingRow

OFFERING = "l4-1x-vm"  # priced per hour, week and month (catalog/data/offerings.csv)

_step = st.one_of(
    st.tuples(st.just("buy"), st.integers(0, 30), st.sampled_from(["4h", "10h", "24h"]), st.integers(1, 3)),
    st.tuples(st.just("extend"), st.integers(0, 20), st.sampled_from(["2h", "8h"]), st.just(0)),
    st.tuples(st.just("terminate"), st.integers(0, 20), st.just(""), st.just(0)),
    st.tuples(st.just("tick"), st.integers(1, 6), st.just(""), st.just(0)),
)


def _held(store: Any, instant: Any) -> int:
    with store.engine.connect() as conn:
        rows = conn.execute(select(CapacityBookingRow.servers).where(
            CapacityBookingRow.starts_at <= instant, CapacityBookingRow.ends_at > instant)).all()
    return sum(r.servers for r in rows)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stock=st.integers(0, 4), steps=st.lists(_step, min_size=1, max_size=14))
def test_booked_servers_never_exceed_stock_at_any_instant(
    _sqlite_template: Path, fixed_clock: Any, stock: int, steps: list[tuple[str, int, str, int]],
) -> None:
    start = fixed_clock.now
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "anchorgpu.db"
        shutil.copy(_sqlite_template, db)
        clock = type(fixed_clock)(start)
        store = bootstrap(Settings(database_url=f"sqlite:///{db}"), clock=clock)
        try:
            account_id, _ = create_account(store.uow_factory(), "prop", clock=clock)
            svc.set_stock(store.uow_factory(), offering=OFFERING, servers=stock, clock=clock)
            allocations: list[str] = []
            for n, (kind, a, term, qty) in enumerate(steps):
                try:
                    if kind == "buy":
                        q = svc.create_quote(store.uow_factory(), account_id=account_id, offering=OFFERING, term=term,
                                             quantity=qty, clock=clock)
                        out = svc.buy_quote(store.uow_factory(), account_id=account_id, quote_id=q["id"],
                                            idempotency_key=f"k{n}", clock=clock, starts_at=clock() + timedelta(hours=a))
                        allocations.append(out.body["id"])
                    elif kind in ("extend", "terminate") and allocations:
                        target = allocations[a % len(allocations)]
                        extra = {"term": term} if kind == "extend" else {}
                        getattr(svc, kind)(store.uow_factory(), account_id=account_id, allocation_id=target,
                                           idempotency_key=f"k{n}", clock=clock, **extra)
                    elif kind == "tick":
                        clock.advance(hours=a)
                except InsufficientCapacity:
                    if kind == "buy":  # the refusal was justified: some hour of the period was full
                        begin = clock() + timedelta(hours=a)
                        hours = int(term.rstrip("h"))
                        peak = max(_held(store, begin + timedelta(hours=h)) for h in range(hours))
                        assert peak + qty > stock, (begin, peak, qty, stock)
                except Exception as exc:  # expired/terminated allocations refuse further actions by design
                    assert getattr(exc, "code", "") in {"allocation_expired", "allocation_terminated"}, exc
            with store.engine.connect() as conn:
                rows = conn.execute(select(CapacityBookingRow.servers, CapacityBookingRow.starts_at,
                                           CapacityBookingRow.ends_at)).all()
            if rows:
                first = min(r.starts_at for r in rows)
                last = max(r.ends_at for r in rows)
                hour = first
                while hour < last:  # every booking boundary is on a whole hour of the fixed clock
                    held = sum(r.servers for r in rows if r.starts_at <= hour < r.ends_at)
                    assert held <= stock, (hour, held, stock)
                    hour += timedelta(hours=1)
        finally:
            store.dispose()
