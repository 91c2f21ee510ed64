"""SQLite killed with ``kill -9`` in the middle of booking writes: reopened, no torn or half-applied booking.

A child process books as fast as it can through the services (quote, then buy with an idempotency key) and
prints each booking's key once its transaction has committed. The parent kills it with SIGKILL at
random moments (several rounds, most of them inside a write), and once deterministically while a booking's
transaction has written every row and is about to COMMIT. After each kill the database is opened again and

* ``PRAGMA integrity_check`` answers ``ok`` and the WAL is recovered (a new booking works at once);
* every booking the child acknowledged is there, exactly once: its allocation, its ``created`` event, one
  capacity row, its quote marked used, its idempotency key with the stored 201 answer;
* nothing is half there: no allocation without those rows, no used quote without its allocation, no
  idempotency key left without an outcome; the booking killed before COMMIT is entirely absent.

Which setting makes this true: the engine opens SQLite in WAL mode with ``synchronous=NORMAL``
(:mod:`anchorgpu.store.engine`). A killed *process* loses nothing that committed under NORMAL (or even
OFF): the WAL frames are in the operating system's page cache, and an uncommitted transaction has no commit
frame, so recovery ignores it. NORMAL only gives up durability of the last commits on an *operating
system crash or power cut* (the database stays consistent, never torn); ``synchronous=FULL`` keeps those
too, at an fsync per commit.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from typing import Any

import pytest
from sqlalchemy import func, select, text

from anchorgpu.allocations import services as svc
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store.engine import make_engine
from anchorgpu.store.tables import AllocationEventRow, AllocationRow, CapacityBookingRow, IdempotencyKeyRow, QuoteRow

pytestmark = pytest.mark.slow

CHILD = r"""
import sys, time
from anchorgpu.accounts import create_account
from anchorgpu.allocations import services as svc
from anchorgpu.bootstrap import bootstrap
from anchorgpu.config import Settings
from anchorgpu.store.uow import SqlAlchemyUnitOfWork

url, label, hang_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = bootstrap(Settings(database_url=url), migrate=False, seed=False, purge_keys=False)
with store.engine.connect() as conn:
    print("synchronous", conn.exec_driver_sql("PRAGMA synchronous").scalar(),
          "journal", conn.exec_driver_sql("PRAGMA journal_mode").scalar(), flush=True)
account, _ = create_account(store.uow_factory(), f"killed {label}", clock=store.clock)
commits = 0
real_commit = SqlAlchemyUnitOfWork.commit

def commit(self):
    global commits
    commits += 1
    if hang_at and commits == hang_at:
        self.session.flush()
        print("about-to-commit", flush=True)
        time.sleep(60)  # killed here: every row written in the open transaction, no COMMIT
    real_commit(self)

SqlAlchemyUnitOfWork.commit = commit
n = 0
while True:
    n += 1
    key = f"{label}-{n}"
    quote = svc.create_quote(store.uow_factory(), account_id=account, offering="l4-1x-vm", term="1h", clock=store.clock)
    print("quote", key, quote["id"], flush=True)
    outcome = svc.buy_quote(store.uow_factory(), account_id=account, quote_id=quote["id"], idempotency_key=key, clock=store.clock)
    print("booked", key, outcome.body["id"], flush=True)
"""


def _child(url: str, label: str, hang_at: int = 0) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CHILD, url, label, str(hang_at)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "ANCHORGPU_OFFLINE": "1"})


def _read_until(process: subprocess.Popen[str], predicate: Any, timeout_s: float) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.strip())
        if predicate(lines):
            return lines
    raise AssertionError(f"child did not get there in {timeout_s} s: {lines[-3:]} {process.stderr.read() if process.stderr else ''}")


def _kill(process: subprocess.Popen[str]) -> list[str]:
    os.kill(process.pid, signal.SIGKILL)
    rest, _ = process.communicate(timeout=10)
    assert process.returncode == -signal.SIGKILL
    return [line.strip() for line in rest.splitlines()]


def _check(url: str, acknowledged: dict[str, str], absent: set[str]) -> dict[str, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"
            allocations = {r.id: r for r in conn.execute(select(AllocationRow))}
            created = dict(conn.execute(select(AllocationEventRow.allocation_id, func.count())
                                        .where(AllocationEventRow.kind == "created").group_by(AllocationEventRow.allocation_id)).all())
            capacity = dict(conn.execute(select(CapacityBookingRow.allocation_id, func.count())
                                         .group_by(CapacityBookingRow.allocation_id)).all())
            used = {r.id: r.used_at for r in conn.execute(select(QuoteRow.id, QuoteRow.used_at))}
            keys = {r.key: (r.response_status, r.resource_id) for r in conn.execute(select(IdempotencyKeyRow))}
    finally:
        engine.dispose()
    for key, allocation_id in acknowledged.items():  # every acknowledged booking, exactly once, whole
        assert keys.get(key) == (201, allocation_id), key
    for allocation_id, row in allocations.items():  # nothing half-applied
        assert created.get(allocation_id) == 1 and capacity.get(allocation_id) == 1, allocation_id
        assert used[row.quote_id] is not None
    assert sum(1 for at in used.values() if at is not None) == len(allocations)
    assert all(status == 201 and resource in allocations for status, resource in keys.values()), "a key without its outcome"
    assert not absent & set(keys), f"a booking killed before COMMIT is in the database: {absent & set(keys)}"
    return {"allocations": set(allocations), "keys": {key: resource for key, (_, resource) in keys.items()}}


def _record(lines: list[str], acknowledged: dict[str, str]) -> set[str]:
    """Adds the child's acknowledged bookings; answers the key whose buy had started and was not acknowledged."""
    started: list[str] = []
    for line in lines:
        parts = line.split() or [""]
        # the kill can cut the child's last line short ("booked" alone, seen in a full run): a booking whose
        # acknowledgement was not written whole is not acknowledged; its key stays in flight and is retried
        if parts[0] == "quote" and len(parts) >= 2:
            started.append(parts[1])
        elif parts[0] == "booked" and len(parts) == 3:
            acknowledged[parts[1]] = parts[2]
    return {key for key in started if key not in acknowledged}


def _retry_in_flight(url: str, clock: Any, in_flight: set[str], figures: dict[str, Any]) -> None:
    """Each in-flight key retried as its client would: the stored answer if it committed, never a second booking."""
    store = bootstrap(Settings(database_url=url), clock=clock, migrate=False, seed=False, purge_keys=False)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(select(IdempotencyKeyRow.key, IdempotencyKeyRow.account_id)).all()
            quote_of = dict(conn.execute(select(AllocationRow.id, AllocationRow.quote_id)).all())
        for key, account_id in rows:
            if key not in in_flight:
                continue
            allocation_id = figures["keys"][key]
            outcome = svc.buy_quote(store.uow_factory(), account_id=account_id, quote_id=quote_of[allocation_id],
                                    idempotency_key=key, clock=clock)
            assert outcome.body["id"] == allocation_id, key
        with store.engine.connect() as conn:
            assert conn.execute(select(func.count()).select_from(AllocationRow)).scalar() == len(figures["allocations"])
    finally:
        store.dispose()


def test_kill_9_during_booking_writes_leaves_no_torn_or_half_applied_booking(sqlite_url: str, fixed_clock: Any) -> None:
    seed = bootstrap(Settings(database_url=sqlite_url), clock=fixed_clock, migrate=False, seed=False, purge_keys=False)
    svc.set_stock(seed.uow_factory(), offering="l4-1x-vm", servers=svc.MAX_STOCK_SERVERS, clock=fixed_clock)  # never short
    seed.dispose()
    rng = random.Random(13)
    acknowledged: dict[str, str] = {}
    absent: set[str] = set()
    in_flight: set[str] = set()  # keys whose buy had started when the child was killed
    for round_no in range(4):  # killed at a random moment of a busy write loop
        child = _child(sqlite_url, f"r{round_no}")
        head = _read_until(child, lambda lines: sum(line.startswith("booked") for line in lines) >= 3, 60)
        assert head[0] == "synchronous 1 journal wal"  # NORMAL (1) in WAL mode: the engine's settings
        time.sleep(rng.uniform(0.0, 0.4))
        in_flight |= _record(head + _kill(child), acknowledged)
        _check(sqlite_url, acknowledged, absent)

    # Killed with every row of a booking written inside its transaction, just before COMMIT.
    child = _child(sqlite_url, "hang", hang_at=4)  # commits: account, quote 1, buy 1, quote 2, [buy 2 hangs]
    lines = _read_until(child, lambda lines: lines[-1] == "about-to-commit", 60)
    quote_line = [line for line in lines if line.startswith("quote")][-1]
    absent.add(quote_line.split()[1])
    _record(lines + _kill(child), acknowledged)
    figures = _check(sqlite_url, acknowledged, absent)
    # A kill can land after a booking's COMMIT and before the child printed "booked": that booking is whole
    # and stored, only its answer was lost (at most one per killed round, the key whose buy was under way).
    # Its client retries with the same key and gets the stored answer, never a second allocation.
    unacknowledged = set(figures["keys"]) - set(acknowledged)
    assert unacknowledged <= in_flight, f"a booking nobody asked for: {unacknowledged - in_flight}"
    assert len(figures["allocations"]) == len(acknowledged) + len(unacknowledged) and len(acknowledged) >= 12
    _retry_in_flight(sqlite_url, fixed_clock, in_flight, figures)

    # The reopened database takes new bookings at once (the WAL was recovered, no lock left behind).
    store = bootstrap(Settings(database_url=sqlite_url), clock=fixed_clock, migrate=False, seed=False, purge_keys=False)
    try:
        from anchorgpu.accounts import create_account

        account, _ = create_account(store.uow_factory(), "after", clock=fixed_clock)
        quote = svc.create_quote(store.uow_factory(), account_id=account, offering="l4-1x-vm", term="1h", clock=fixed_clock)
        assert svc.buy_quote(store.uow_factory(), account_id=account, quote_id=quote["id"], idempotency_key="after",
                             clock=fixed_clock).status == 201
        with store.engine.connect() as conn:
            assert conn.execute(text("PRAGMA quick_check")).scalar() == "ok"
    finally:
        store.dispose()
