"""End-of-run checks: the database against the clients' own record.

Each check returns a list of problems (empty = it holds). The database is read with SQLAlchemy Core on
the store's own table definitions; nothing here writes.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from load_clients import KeyedRequest, Record
from sqlalchemy import Engine, select

from anchorgpu.store.tables import (
    AllocationEventRow,
    AllocationRow,
    CapacityBookingRow,
    IdempotencyKeyRow,
    QuoteRow,
    StockRow,
)

EVENT_OF = {"stop": "stopped", "start": "started", "extend": "extended", "terminate": "terminated"}


@dataclass
class Snapshot:
    """The rows the checks need, read once after the load."""

    allocations: dict[str, Any]
    events: dict[str, list[Any]]
    bookings: list[Any]
    stock: dict[tuple[str, str], int]
    keys: dict[tuple[str, str, str], Any]
    quotes_used: dict[str, datetime | None]


def snapshot(engine: Engine) -> Snapshot:
    with engine.connect() as conn:
        allocations = {r.id: r for r in conn.execute(select(AllocationRow.__table__))}
        events: dict[str, list[Any]] = defaultdict(list)
        for r in conn.execute(select(AllocationEventRow.__table__).order_by(AllocationEventRow.allocation_id, AllocationEventRow.seq)):
            events[r.allocation_id].append(r)
        bookings = list(conn.execute(select(CapacityBookingRow.__table__)))
        stock = {(r.offering_id, r.region): r.servers for r in conn.execute(select(StockRow.__table__))}
        keys = {(r.account_id, r.operation, r.key): r for r in conn.execute(select(IdempotencyKeyRow.__table__))}
        quotes_used = {r.id: r.used_at for r in conn.execute(select(QuoteRow.id, QuoteRow.used_at))}
    return Snapshot(allocations, events, bookings, stock, keys, quotes_used)


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _final_answers(request: KeyedRequest) -> list[Any]:
    """Answers that are the request's outcome (not 5xx, not 'still in progress')."""
    return [a for a in request.answers if a.status < 500 and not (isinstance(a.body, dict) and a.body.get("code") == "idempotency_request_in_progress")]


def check_resolved(record: Record) -> list[str]:
    """Every purchase-like request got its final answer before the grace period ended."""
    return [f"{r.operation} key {r.key}: no final answer after {len(r.answers)} answers, {r.transport_errors} transport errors"
            for r in record.keyed if not r.resolved]


def check_replays_identical(record: Record, snap: Snapshot) -> list[str]:
    """All outcome answers to one key are identical, at most one is not flagged as a replay, and they
    equal what the database keeps under that key."""
    problems = []
    for r in record.keyed:
        finals = _final_answers(r)
        if not finals:
            continue
        first = finals[0]
        for other in finals[1:]:
            if other.status != first.status or _canon(other.body) != _canon(first.body):
                problems.append(f"{r.operation} key {r.key}: answers differ ({first.status} vs {other.status})")
                break
        fresh = [a for a in finals if not a.replayed]
        if len(fresh) > 1:
            problems.append(f"{r.operation} key {r.key}: {len(fresh)} answers not flagged as replays (applied twice?)")
        row = snap.keys.get((r.account_id, r.operation, r.key))
        if row is None:
            if first.status < 400 or first.status == 409:
                problems.append(f"{r.operation} key {r.key}: answered {first.status} but no key row in the database")
            continue
        if first.status < 300 and _canon(row.response_body) != _canon(first.body):
            problems.append(f"{r.operation} key {r.key}: stored outcome differs from the answer")
        if first.status >= 400 and row.response_body.get("error", {}).get("code") != first.body.get("code"):
            problems.append(f"{r.operation} key {r.key}: stored error differs from the answer")
    return problems


def check_bookings_exactly_once(record: Record, snap: Snapshot, accounts: set[str]) -> list[str]:
    """Every acknowledged booking is in the database exactly once, as acknowledged; every allocation of
    the run's accounts is accounted for by exactly one buy key, its quote is used, and it has its
    'created' event and capacity rows (nothing half-written)."""
    problems = []
    acknowledged: dict[str, KeyedRequest] = {}
    for r in record.keyed:
        if r.operation != "buy" or not r.succeeded:
            continue
        body = r.final.body  # type: ignore[union-attr]
        acknowledged[body["id"]] = r
        row = snap.allocations.get(body["id"])
        if row is None:
            problems.append(f"acknowledged allocation {body['id']} (key {r.key}) is missing")
        elif (row.account_id, row.quote_id) != (r.account_id, r.body["quote_id"]):
            problems.append(f"allocation {body['id']} belongs to {row.account_id}/{row.quote_id}, not as acknowledged")
    per_quote = Counter(row.quote_id for row in snap.allocations.values())
    problems += [f"quote {q} bought {n} times" for q, n in per_quote.items() if n > 1]
    buy_keys = Counter(row.resource_id for (_, op, _), row in snap.keys.items() if op == "buy" and row.resource_id)
    bookings_of = Counter(b.allocation_id for b in snap.bookings)
    for allocation_id, row in snap.allocations.items():
        if row.account_id not in accounts:
            continue
        if buy_keys[allocation_id] != 1:
            problems.append(f"allocation {allocation_id}: {buy_keys[allocation_id]} buy keys point at it")
        if snap.quotes_used.get(row.quote_id) is None:
            problems.append(f"allocation {allocation_id}: its quote is not marked used")
        kinds = [e.kind for e in snap.events.get(allocation_id, [])]
        if not kinds or kinds[0] != "created":
            problems.append(f"allocation {allocation_id}: no 'created' event first ({kinds})")
        extensions = kinds.count("extended")
        if bookings_of[allocation_id] != 1 + extensions:
            problems.append(f"allocation {allocation_id}: {bookings_of[allocation_id]} capacity rows for {extensions} extensions")
    for (account_id, op, key), row in snap.keys.items():
        if account_id in accounts and row.response_status < 300 and row.resource_id not in snap.allocations:
            problems.append(f"{op} key {key}: stored success points at missing {row.resource_id}")
    return problems


def check_actions_once(record: Record, snap: Snapshot) -> list[str]:
    """Each allocation has exactly as many stopped/started/extended/terminated events as the clients got
    distinct successful keys for (a retried action is applied once)."""
    expected: dict[tuple[str, str], int] = Counter()
    for r in record.keyed:
        if r.operation in EVENT_OF and r.succeeded:
            expected[(r.final.body["id"], EVENT_OF[r.operation])] += 1  # type: ignore[union-attr]
    problems = []
    touched = {allocation_id for allocation_id, _ in expected}
    for allocation_id in touched:
        kinds = Counter(e.kind for e in snap.events.get(allocation_id, []))
        for kind in EVENT_OF.values():
            if kinds[kind] != expected[(allocation_id, kind)]:
                problems.append(f"allocation {allocation_id}: {kinds[kind]} '{kind}' events, {expected[(allocation_id, kind)]} acknowledged")
    return problems


def peak_concurrent(intervals: list[tuple[datetime, datetime, int]]) -> tuple[int, datetime | None]:
    """Most servers held at one instant over half-open intervals [start, end) (sweep line: ends before starts
    at the same instant)."""
    points = sorted([(s, 1, n) for s, e, n in intervals if e > s] + [(e, 0, -n) for s, e, n in intervals if e > s])
    level = peak = 0
    at = None
    for when, _, delta in points:
        level += delta
        if level > peak:
            peak, at = level, when
    return peak, at


def check_no_overselling(snap: Snapshot) -> tuple[list[str], dict[str, int]]:
    """At no instant do the servers held (capacity rows, and independently the allocations' own
    [starts_at, terminated_at or ends_at) intervals) exceed the stock of the offering in the region."""
    problems = []
    peaks: dict[str, int] = {}
    by_place: dict[tuple[str, str], list[tuple[datetime, datetime, int]]] = defaultdict(list)
    for b in snap.bookings:
        by_place[(b.offering_id, b.region)].append((b.starts_at, b.ends_at, b.servers))
    from_allocations: dict[tuple[str, str], list[tuple[datetime, datetime, int]]] = defaultdict(list)
    for a in snap.allocations.values():
        end = min(a.ends_at, a.terminated_at) if a.terminated_at is not None else a.ends_at
        from_allocations[(a.offering_id, a.region)].append((a.starts_at, end, a.quantity))
    for source, groups in (("capacity rows", by_place), ("allocations", from_allocations)):
        for place, intervals in groups.items():
            peak, at = peak_concurrent(intervals)
            stock = snap.stock.get(place, 0)
            if source == "allocations":
                peaks[f"{place[0]}@{place[1]}"] = peak
            if peak > stock:
                problems.append(f"{place[0]} in {place[1]}: {peak} servers held at {at} ({source}) > stock {stock}")
    return problems, peaks


def check_reuse_refused(record: Record) -> list[str]:
    return [f"key {key} reused for another quote answered {status} {code}" for key, status, code in record.reuse_checks
            if (status, code) != (422, "idempotency_key_reused")]
