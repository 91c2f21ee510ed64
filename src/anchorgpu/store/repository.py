"""Repositories: the only code that turns rows into domain objects and back (SQLAlchemy 2 idioms).

Every method works inside the session of the unit of work that created the repository; none of them
commits. ``for_update=True`` takes a row lock (``SELECT … FOR UPDATE``) on PostgreSQL; on SQLite the
whole transaction already holds the database's write lock (``BEGIN IMMEDIATE``, see
:mod:`anchorgpu.store.engine`), so the clause is simply not rendered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from anchorgpu.allocations.domain import Allocation, AllocationEvent, AllocationState, Booking
from anchorgpu.store.tables import (
    AccountRow,
    AllocationEventRow,
    AllocationRow,
    CapacityBookingRow,
    IdempotencyKeyRow,
    QuoteRow,
    StockRow,
)
from anchorgpu.units import Term

__all__ = [
    "AccountRecord",
    "AccountRepository",
    "AllocationRepository",
    "CapacityRepository",
    "IdempotencyRecord",
    "IdempotencyRepository",
    "QuoteRecord",
    "QuoteRepository",
    "StockRepository",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountRecord:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class QuoteRecord:
    """A stored quote. ``body`` is the quote JSON exactly as first shown (prices as quoted)."""

    id: str
    account_id: str
    offering_id: str
    region: str
    quantity: int
    gpus: int
    term: Term
    options: dict[str, int]
    total_usd: Decimal
    catalog_version: str
    created_at: datetime
    valid_until: datetime
    purpose: str
    body: dict[str, Any]
    used_at: datetime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IdempotencyRecord:
    id: int
    account_id: str
    operation: str
    key: str
    fingerprint: str
    response_status: int
    response_body: dict[str, Any]
    resource_id: str | None
    created_at: datetime
    expires_at: datetime


class AccountRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, account: AccountRecord) -> None:
        self._session.add(AccountRow(id=account.id, name=account.name, created_at=account.created_at))
        self._session.flush()  # the account exists before its first key row refers to it

    def get(self, account_id: str) -> AccountRecord | None:
        row = self._session.get(AccountRow, account_id)
        return None if row is None else _account(row)


def _account(row: AccountRow) -> AccountRecord:
    return AccountRecord(id=row.id, name=row.name, created_at=row.created_at)


class StockRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, offering_id: str, region: str, *, for_update: bool = False) -> int | None:
        """Servers in stock, or None when the offering has no stock row in the region."""
        query = select(StockRow.servers).where(StockRow.offering_id == offering_id, StockRow.region == region)
        if for_update:
            query = query.with_for_update()
        return self._session.scalars(query).one_or_none()

    def set(self, offering_id: str, region: str, servers: int, now: datetime) -> None:
        row = self._session.get(StockRow, (offering_id, region), with_for_update=True)
        if row is None:
            self._session.add(StockRow(offering_id=offering_id, region=region, servers=servers, updated_at=now))
        else:
            row.servers, row.updated_at = servers, now
        self._session.flush()

    def add_missing(self, rows: dict[tuple[str, str], int], now: datetime) -> int:
        """Insert the (offering, region) rows not yet present; existing numbers are never overwritten."""
        present = {(o, r) for o, r in self._session.execute(select(StockRow.offering_id, StockRow.region)).all()}
        added = 0
        for (offering_id, region), servers in sorted(rows.items()):
            if (offering_id, region) not in present:
                self._session.add(StockRow(offering_id=offering_id, region=region, servers=servers, updated_at=now))
                added += 1
        self._session.flush()
        return added

    def all(self) -> dict[tuple[str, str], int]:
        return {(o, r): s for o, r, s in self._session.execute(select(StockRow.offering_id, StockRow.region, StockRow.servers)).all()}


class CapacityRepository:
    """Servers held per offering and region over time (one row per bought or extended period)."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def overlapping(self, offering_id: str, region: str, starts_at: datetime, ends_at: datetime) -> list[Booking]:
        rows = self._session.scalars(
            select(CapacityBookingRow).where(
                CapacityBookingRow.offering_id == offering_id,
                CapacityBookingRow.region == region,
                CapacityBookingRow.starts_at < ends_at,
                CapacityBookingRow.ends_at > starts_at,
            )
        )
        return [Booking(servers=r.servers, starts_at=r.starts_at, ends_at=r.ends_at) for r in rows]

    def add(self, *, allocation_id: str, offering_id: str, region: str, booking: Booking) -> None:
        self._session.add(CapacityBookingRow(
            allocation_id=allocation_id, offering_id=offering_id, region=region, servers=booking.servers,
            starts_at=booking.starts_at, ends_at=booking.ends_at,
        ))
        self._session.flush()

    def release_after(self, allocation_id: str, at: datetime) -> None:
        """Free the allocation's servers from ``at`` on (terminate): periods are cut at ``at``."""
        bookings = self._session.scalars(select(CapacityBookingRow).where(CapacityBookingRow.allocation_id == allocation_id))
        for row in bookings:
            if row.ends_at > at:
                row.ends_at = max(row.starts_at, at)
        self._session.flush()

    def for_allocation(self, allocation_id: str) -> list[Booking]:
        rows = self._session.scalars(
            select(CapacityBookingRow).where(CapacityBookingRow.allocation_id == allocation_id).order_by(CapacityBookingRow.id)
        )
        return [Booking(servers=r.servers, starts_at=r.starts_at, ends_at=r.ends_at) for r in rows]


class QuoteRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, quote: QuoteRecord) -> None:
        self._session.add(QuoteRow(
            id=quote.id, account_id=quote.account_id, offering_id=quote.offering_id, region=quote.region,
            quantity=quote.quantity, gpus=quote.gpus, term_unit=quote.term.unit, term_count=quote.term.count,
            term_hours=quote.term.hours, options=dict(quote.options), total_usd=quote.total_usd,
            catalog_version=quote.catalog_version, created_at=quote.created_at, valid_until=quote.valid_until,
            purpose=quote.purpose, body=quote.body, used_at=quote.used_at,
        ))
        self._session.flush()

    def get(self, account_id: str, quote_id: str, *, for_update: bool = False) -> QuoteRecord | None:
        """The account's quote; another account's quote is None (never visible)."""
        query = select(QuoteRow).where(QuoteRow.id == quote_id, QuoteRow.account_id == account_id)
        if for_update:
            query = query.with_for_update()
        row = self._session.scalars(query).one_or_none()
        return None if row is None else _quote(row)

    def mark_used(self, quote_id: str, at: datetime) -> None:
        self._session.execute(update(QuoteRow).where(QuoteRow.id == quote_id).values(used_at=at))


def _quote(row: QuoteRow) -> QuoteRecord:
    return QuoteRecord(
        id=row.id, account_id=row.account_id, offering_id=row.offering_id, region=row.region, quantity=row.quantity,
        gpus=row.gpus, term=Term(row.term_unit, row.term_count),  # type: ignore[arg-type]
        options={str(k): int(v) for k, v in row.options.items()}, total_usd=row.total_usd,
        catalog_version=row.catalog_version, created_at=row.created_at, valid_until=row.valid_until,
        purpose=row.purpose, body=row.body, used_at=row.used_at,
    )


class AllocationRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, allocation: Allocation) -> None:
        self._session.add(AllocationRow(
            id=allocation.id, account_id=allocation.account_id, quote_id=allocation.quote_id,
            offering_id=allocation.offering_id, region=allocation.region, quantity=allocation.quantity,
            gpus=allocation.gpus, state=allocation.state.value, term_unit=allocation.term.unit,
            term_count=allocation.term.count, term_hours=allocation.term.hours, starts_at=allocation.starts_at,
            ends_at=allocation.ends_at, amount_usd=allocation.amount_usd, created_at=allocation.created_at,
            terminated_at=allocation.terminated_at,
        ))
        self._session.flush()
        self.add_events(allocation.id, allocation.events)

    def save(self, allocation: Allocation, new_events: list[AllocationEvent]) -> None:
        """Write the allocation's changed fields and its new events (same transaction)."""
        self._session.execute(
            update(AllocationRow).where(AllocationRow.id == allocation.id).values(
                state=allocation.state.value, ends_at=allocation.ends_at, amount_usd=allocation.amount_usd,
                terminated_at=allocation.terminated_at,
            )
        )
        self.add_events(allocation.id, new_events)

    def add_events(self, allocation_id: str, events: tuple[AllocationEvent, ...] | list[AllocationEvent]) -> None:
        for e in events:
            self._session.add(AllocationEventRow(
                allocation_id=allocation_id, seq=e.seq, kind=e.kind, at=e.at,
                from_state=None if e.from_state is None else e.from_state.value, to_state=e.to_state.value,
                details=e.details,
            ))
        self._session.flush()

    def get(self, account_id: str, allocation_id: str, *, for_update: bool = False) -> Allocation | None:
        """The account's allocation with its events; another account's allocation is None."""
        query = select(AllocationRow).where(AllocationRow.id == allocation_id, AllocationRow.account_id == account_id)
        if for_update:
            query = query.with_for_update()
        row = self._session.scalars(query).one_or_none()
        if row is None:
            return None
        return _allocation(row, self._events([row.id]).get(row.id, ()))

    def for_account(self, account_id: str) -> list[Allocation]:
        rows = list(self._session.scalars(
            select(AllocationRow).where(AllocationRow.account_id == account_id).order_by(AllocationRow.created_at, AllocationRow.id)
        ))
        events = self._events([r.id for r in rows])
        return [_allocation(r, events.get(r.id, ())) for r in rows]

    def count(self) -> int:
        return int(self._session.scalar(select(func.count()).select_from(AllocationRow)) or 0)

    def _events(self, allocation_ids: list[str]) -> dict[str, tuple[AllocationEvent, ...]]:
        if not allocation_ids:
            return {}
        out: dict[str, list[AllocationEvent]] = {}
        rows = self._session.scalars(
            select(AllocationEventRow).where(AllocationEventRow.allocation_id.in_(allocation_ids))
            .order_by(AllocationEventRow.allocation_id, AllocationEventRow.seq)
        )
        for r in rows:
            out.setdefault(r.allocation_id, []).append(AllocationEvent(
                seq=r.seq, kind=r.kind, at=r.at,
                from_state=None if r.from_state is None else AllocationState(r.from_state),
                to_state=AllocationState(r.to_state), details=dict(r.details),
            ))
        return {k: tuple(v) for k, v in out.items()}


def _allocation(row: AllocationRow, events: tuple[AllocationEvent, ...]) -> Allocation:
    return Allocation(
        id=row.id, account_id=row.account_id, quote_id=row.quote_id, offering_id=row.offering_id, region=row.region,
        quantity=row.quantity, gpus=row.gpus, state=AllocationState(row.state),
        term=Term(row.term_unit, row.term_count),  # type: ignore[arg-type]
        starts_at=row.starts_at, ends_at=row.ends_at, amount_usd=row.amount_usd, created_at=row.created_at,
        terminated_at=row.terminated_at, events=events,
    )


class IdempotencyRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def get(self, account_id: str, operation: str, key: str) -> IdempotencyRecord | None:
        row = self._session.scalars(select(IdempotencyKeyRow).where(
            IdempotencyKeyRow.account_id == account_id, IdempotencyKeyRow.operation == operation,
            IdempotencyKeyRow.key == key,
        )).one_or_none()
        return None if row is None else _idem(row)

    def reserve(self, *, account_id: str, operation: str, key: str, fingerprint: str, now: datetime,
                expires_at: datetime) -> int:
        """Insert the key row (no outcome yet) and flush: a concurrent twin blocks or fails right here,
        on the unique (account, operation, key) constraint."""
        row = IdempotencyKeyRow(account_id=account_id, operation=operation, key=key, fingerprint=fingerprint,
                                response_status=0, response_body={}, resource_id=None, created_at=now,
                                expires_at=expires_at)
        self._session.add(row)
        self._session.flush()
        return row.id

    def complete(self, row_id: int, *, status: int, body: dict[str, Any], resource_id: str | None) -> None:
        self._session.execute(update(IdempotencyKeyRow).where(IdempotencyKeyRow.id == row_id).values(
            response_status=status, response_body=body, resource_id=resource_id))

    def delete(self, row_id: int) -> None:
        self._session.execute(delete(IdempotencyKeyRow).where(IdempotencyKeyRow.id == row_id))
        self._session.flush()

    def purge(self, now: datetime) -> int:
        """Delete every key whose ``expires_at`` is at or before ``now``; return how many."""
        result = self._session.execute(delete(IdempotencyKeyRow).where(IdempotencyKeyRow.expires_at <= now))
        return int(getattr(result, "rowcount", 0) or 0)


def _idem(row: IdempotencyKeyRow) -> IdempotencyRecord:
    return IdempotencyRecord(
        id=row.id, account_id=row.account_id, operation=row.operation, key=row.key, fingerprint=row.fingerprint,
        response_status=row.response_status, response_body=dict(row.response_body), resource_id=row.resource_id,
        created_at=row.created_at, expires_at=row.expires_at,
    )
