"""Column types that behave the same on SQLite and PostgreSQL.

* :class:`UtcDateTime` stores instants in UTC and always hands back timezone-aware ``datetime``
  values (SQLite keeps no zone, so a naive value read back is UTC by construction).
* :class:`Money` stores ``Decimal`` USD exactly: ``NUMERIC(18, 2)`` on PostgreSQL, text on SQLite
  (SQLite's NUMERIC affinity would turn it into a binary float).
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import DateTime, Numeric, String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

__all__ = ["Money", "UtcDateTime"]


class UtcDateTime(TypeDecorator[datetime]):
    """An instant: timezone-aware UTC in Python, ``timestamptz`` on PostgreSQL, ISO text on SQLite."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: AnchorGPU stores only timezone-aware instants")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Money(TypeDecorator[Decimal]):
    """Exact ``Decimal`` USD, to the cent or finer."""

    impl = Numeric(18, 2)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(40))
        return dialect.type_descriptor(Numeric(18, 2, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if not isinstance(value, Decimal):
            raise TypeError(f"money must be a Decimal, got {type(value).__name__}")
        return str(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        if value is None:
            return None
        return Decimal(str(value))
