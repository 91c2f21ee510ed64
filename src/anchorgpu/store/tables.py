"""The database schema: SQLAlchemy 2 row classes (persistence only, no behaviour).

Domain objects live in :mod:`anchorgpu.allocations.domain` and :mod:`anchorgpu.accounts`; the
repositories translate between the two. The schema changes only through Alembic migrations in
``anchorgpu/store/migrations``; ``tests/store`` checks that these classes and the migrations agree.

Tables:

* ``accounts``          – who owns quotes and allocations.
* ``api_keys``          – an account's API keys (several, named, revocable, optionally expiring); only
  the SHA-256 of a key and its first characters (``prefix``, to tell keys apart) are stored.
* ``stock``             – servers of an offering in a region (the operator's number; seeded from the catalog).
* ``quotes``            – a priced quote with its full JSON body, so history keeps the prices as quoted.
* ``allocations``       – a bought quote: state, ``starts_at``/``ends_at``, the amount paid so far.
* ``allocation_events`` – one row per change of an allocation, written in the same transaction.
* ``capacity_bookings`` – servers held by an allocation over ``[starts_at, ends_at)``; the overselling
  check sums these against ``stock`` under a row lock.
* ``idempotency_keys``  – one row per (account, operation, key): fingerprint and the stored outcome.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, BigInteger, CheckConstraint, ForeignKey, Index, Integer, MetaData, String, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from anchorgpu.store.types import Money, UtcDateTime

__all__ = [
    "AccountRow",
    "AllocationEventRow",
    "AllocationRow",
    "ApiKeyRow",
    "Base",
    "CapacityBookingRow",
    "IdempotencyKeyRow",
    "QuoteRow",
    "StockRow",
    "metadata",
]

# Named constraints, so that migrations can refer to them on both engines.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UtcDateTime(), Decimal: Money(), dict[str, Any]: JSON()}


metadata = Base.metadata


class AccountRow(Base):
    __tablename__ = "accounts"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]


class ApiKeyRow(Base):
    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    prefix: Mapped[str] = mapped_column(String(20))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime | None]
    revoked_at: Mapped[datetime | None]


class StockRow(Base):
    __tablename__ = "stock"

    offering_id: Mapped[str] = mapped_column(String(100), primary_key=True)
    region: Mapped[str] = mapped_column(String(100), primary_key=True)
    servers: Mapped[int] = mapped_column(Integer)
    updated_at: Mapped[datetime]

    __table_args__ = (CheckConstraint("servers >= 0", name="servers_not_negative"),)


class QuoteRow(Base):
    __tablename__ = "quotes"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    offering_id: Mapped[str] = mapped_column(String(100))
    region: Mapped[str] = mapped_column(String(100))
    quantity: Mapped[int] = mapped_column(Integer)
    gpus: Mapped[int] = mapped_column(Integer)
    term_unit: Mapped[str] = mapped_column(String(10))
    term_count: Mapped[int] = mapped_column(Integer)
    term_hours: Mapped[int] = mapped_column(Integer)
    options: Mapped[dict[str, Any]]
    total_usd: Mapped[Decimal]
    catalog_version: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[datetime]
    valid_until: Mapped[datetime]
    # "quote" = bought by a user; "extension" = priced internally for an extend.
    purpose: Mapped[str] = mapped_column(String(20), default="quote")
    body: Mapped[dict[str, Any]]
    used_at: Mapped[datetime | None]


class AllocationRow(Base):
    __tablename__ = "allocations"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    # One allocation per quote: the database refuses a second purchase of the same quote.
    quote_id: Mapped[str] = mapped_column(ForeignKey("quotes.id"), unique=True)
    offering_id: Mapped[str] = mapped_column(String(100))
    region: Mapped[str] = mapped_column(String(100))
    quantity: Mapped[int] = mapped_column(Integer)
    gpus: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(20))
    term_unit: Mapped[str] = mapped_column(String(10))
    term_count: Mapped[int] = mapped_column(Integer)
    term_hours: Mapped[int] = mapped_column(Integer)
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]
    amount_usd: Mapped[Decimal]
    created_at: Mapped[datetime]
    terminated_at: Mapped[datetime | None]

    __table_args__ = (
        CheckConstraint("quantity > 0", name="quantity_positive"),
        CheckConstraint("state IN ('scheduled', 'active', 'stopped', 'expired', 'terminated')", name="known_state"),
    )


class AllocationEventRow(Base):
    __tablename__ = "allocation_events"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    allocation_id: Mapped[str] = mapped_column(ForeignKey("allocations.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    at: Mapped[datetime]
    from_state: Mapped[str | None] = mapped_column(String(20))
    to_state: Mapped[str] = mapped_column(String(20))
    details: Mapped[dict[str, Any]]

    __table_args__ = (UniqueConstraint("allocation_id", "seq"),)


class CapacityBookingRow(Base):
    __tablename__ = "capacity_bookings"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    allocation_id: Mapped[str] = mapped_column(ForeignKey("allocations.id"), index=True)
    offering_id: Mapped[str] = mapped_column(String(100))
    region: Mapped[str] = mapped_column(String(100))
    servers: Mapped[int] = mapped_column(Integer)
    starts_at: Mapped[datetime]
    ends_at: Mapped[datetime]

    __table_args__ = (
        Index(None, "offering_id", "region", "starts_at", "ends_at"),
        CheckConstraint("servers > 0", name="servers_positive"),
        CheckConstraint("ends_at >= starts_at", name="ends_after_start"),
    )


class IdempotencyKeyRow(Base):
    __tablename__ = "idempotency_keys"

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    operation: Mapped[str] = mapped_column(String(40))
    key: Mapped[str] = mapped_column(String(255))
    fingerprint: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[dict[str, Any]]
    resource_id: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime] = mapped_column(index=True)

    __table_args__ = (UniqueConstraint("account_id", "operation", "key"),)
