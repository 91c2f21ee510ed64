"""Validation of every row of a backup before anything is written (used by :mod:`anchorgpu.store.backup`).

No second rule book: a row must pass

1. **the database's own column definitions** (:mod:`anchorgpu.store.tables`): a value per column, NULL
   only where the column allows it, text within the column's length and free of control characters
   (NUL included), integers as JSON integers (not ``true``, not ``"3"``) within the column's range, money
   as a plain decimal string that fits ``NUMERIC(18, 2)``, instants as ISO 8601 with a zone (years
   2000-2999), JSON columns as objects;
2. **the API's and the services' own checks** for what the row stands for: account and key names through
   :func:`anchorgpu.accounts.clean_name`, a quote's offering, quantity, term and options through the API's
   request schema ``QuoteCreate``, quote ids through ``AllocationCreate``, idempotency keys through
   :func:`anchorgpu.api.deps.validate_idempotency_key`, states through ``AllocationState``, terms through
   ``anchorgpu.units.Term``, stock through the bound ``set_stock`` enforces;
3. **the database's constraints** (CHECK, UNIQUE, foreign keys), which the restore's one transaction
   enforces; a violation is reported in one line and nothing is kept.

An allocation's ``amount_usd`` must also equal the amounts of its ``created`` and ``extended`` events (the
services write both in one transaction), which catches a price edited in one place only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlalchemy import BigInteger, Integer, String, Table
from sqlalchemy.types import JSON

from anchorgpu.errors import AnchorError, InvalidInput
from anchorgpu.store.types import Money, UtcDateTime

__all__ = ["RowInvalid", "check_amounts", "decode_row"]

_MONEY = re.compile(r"-?[0-9]{1,16}(\.[0-9]{1,2})?")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
YEARS = (2000, 2999)
"""Instants a backup may hold: far from datetime's year-9999 edge, where adding a term overflows."""


class RowInvalid(InvalidInput):
    """One value of one row breaks a rule; the message names table, column and value."""

    code = "backup_invalid"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}…({len(text)} characters)"


def _column(table: Table, name: str, value: Any) -> Any:
    """``value`` of column ``name`` decoded to what the store writes, or :class:`RowInvalid`."""
    column = table.columns[name]
    kind = column.type
    where = f"{table.name}.{name} = {_short(value)}"
    if value is None:
        if not column.nullable:
            raise RowInvalid(f"{where}: the column cannot be empty")
        return None
    if isinstance(kind, UtcDateTime):
        try:
            if not isinstance(value, str):
                raise ValueError("not text")
            instant = datetime.fromisoformat(value)
        except ValueError as exc:
            raise RowInvalid(f"{where}: not an ISO 8601 instant ({exc})") from exc
        if instant.tzinfo is None:
            raise RowInvalid(f"{where}: the instant has no time zone")
        if not YEARS[0] <= instant.year <= YEARS[1]:
            raise RowInvalid(f"{where}: outside the years {YEARS[0]}-{YEARS[1]}")
        return instant
    if isinstance(kind, Money):
        if not isinstance(value, str) or not _MONEY.fullmatch(value):
            raise RowInvalid(f"{where}: money must be a plain decimal string of at most 16 digits and 2 decimals, e.g. '0.89'")
        return Decimal(value)
    if isinstance(kind, Integer):
        low, high = INT64 if isinstance(kind, BigInteger) else INT32
        if isinstance(value, bool) or not isinstance(value, int):
            raise RowInvalid(f"{where}: must be a JSON integer")
        if not low <= value <= high:
            raise RowInvalid(f"{where}: out of the column's range")
        return value
    if isinstance(kind, String):
        if not isinstance(value, str):
            raise RowInvalid(f"{where}: must be text")
        if kind.length is not None and len(value) > kind.length:
            raise RowInvalid(f"{table.name}.{name}: {len(value)} characters, the column holds at most {kind.length}")
        if _CONTROL.search(value):
            raise RowInvalid(f"{where}: contains a control character (such as NUL)")
        return value
    if isinstance(kind, JSON):
        if not isinstance(value, dict):
            raise RowInvalid(f"{where}: must be a JSON object")
        return value
    raise AssertionError(f"no rule for column type {kind!r} of {table.name}.{name}")  # a new column type needs one


def _same(check: Callable[[], Any], where: str) -> None:
    """Run one of the API's or the services' own checks; its refusal becomes this row's reason."""
    from pydantic import ValidationError

    try:
        check()
    except ValidationError as exc:
        first = exc.errors()[0]
        raise RowInvalid(f"{where}: {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from exc
    except (AnchorError, ValueError, TypeError) as exc:
        raise RowInvalid(f"{where}: {exc}") from exc


def _term(row: dict[str, Any], where: str) -> str:
    from anchorgpu.units import parse_term

    term = parse_term(f"{row['term_count']}{row['term_unit']}")
    if term.unit != row["term_unit"] or term.hours != row["term_hours"]:
        raise RowInvalid(f"{where}: term {row['term_count']} {row['term_unit']} is not {row['term_hours']} hours")
    return str(term)


def _rules(table: str, row: dict[str, Any]) -> None:
    from anchorgpu.accounts import ACCOUNT_NAME_MAX, clean_name
    from anchorgpu.accounts.keys import KEY_NAME_MAX
    from anchorgpu.allocations.domain import AllocationState
    from anchorgpu.allocations.stock import MAX_STOCK_SERVERS
    from anchorgpu.api.deps import validate_idempotency_key
    from anchorgpu.api.schemas import AllocationCreate, QuoteCreate

    where = f"{table} {row.get('id') or row.get('offering_id')}"

    def named(value: str, what: str, max_chars: int) -> None:
        if clean_name(value, what=what, max_chars=max_chars) != value:
            raise RowInvalid(f"{where}: {what} {_short(value)} is not as the service stores names (trimmed, single spaces)")

    if table == "accounts":
        _same(lambda: named(row["name"], "account name", ACCOUNT_NAME_MAX), where)
    elif table == "api_keys":
        _same(lambda: named(row["name"], "key name", KEY_NAME_MAX), where)
        if not _HEX64.fullmatch(row["key_hash"]) or not row["prefix"].startswith("agpu_"):
            raise RowInvalid(f"{where}: not a stored API key (key_hash is 64 hex digits, prefix starts with agpu_)")
    elif table == "stock":
        if not 0 <= row["servers"] <= MAX_STOCK_SERVERS:
            raise RowInvalid(f"{where}: servers {row['servers']:,} is not between 0 and {MAX_STOCK_SERVERS:,}")
    elif table == "quotes":
        def quote() -> None:
            QuoteCreate.model_validate({"offering": row["offering_id"], "quantity": row["quantity"], "term": _term(row, where),
                                        "options": row["options"], "region": row["region"]})
        _same(quote, where)
        if row["purpose"] not in ("quote", "extension") or row["total_usd"] < 0:
            raise RowInvalid(f"{where}: purpose {_short(row['purpose'])} or total_usd {row['total_usd']} is not one the service writes")
    elif table == "allocations":
        def allocation() -> None:
            AllocationState(row["state"])
            AllocationCreate.model_validate({"quote_id": row["quote_id"]})
            QuoteCreate.model_validate({"offering": row["offering_id"], "quantity": row["quantity"], "term": _term(row, where),
                                        "region": row["region"]})
        _same(allocation, where)
        if row["amount_usd"] < 0 or row["ends_at"] < row["starts_at"]:
            raise RowInvalid(f"{where}: amount_usd {row['amount_usd']} is negative or it ends before it starts")
    elif table == "allocation_events":
        def event() -> None:
            AllocationState(row["to_state"])
            if row["from_state"] is not None:
                AllocationState(row["from_state"])
        _same(event, where)
        if row["seq"] < 1:
            raise RowInvalid(f"{where}: seq {row['seq']} is not a positive sequence number")
    elif table == "capacity_bookings":
        if row["servers"] < 1 or row["ends_at"] < row["starts_at"]:
            raise RowInvalid(f"{where}: servers {row['servers']} or its period is not one the service books")
    elif table == "idempotency_keys":
        _same(lambda: validate_idempotency_key(row["key"]), where)
        if not _HEX64.fullmatch(row["fingerprint"]) or not (row["response_status"] == 0 or 200 <= row["response_status"] <= 599):
            raise RowInvalid(f"{where}: fingerprint or response_status {row['response_status']} is not one the service stores")


def decode_row(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """The row as the store writes it, after every column and row rule above; :class:`RowInvalid` otherwise."""
    unknown = set(values) - set(table.columns.keys())
    if unknown:
        raise RowInvalid(f"table {table.name} has no column {sorted(unknown)[0]!r}")
    missing = set(table.columns.keys()) - set(values)
    if missing:
        raise RowInvalid(f"table {table.name}: the row has no {sorted(missing)[0]!r}")
    row = {name: _column(table, name, values[name]) for name in table.columns.keys()}
    _rules(table.name, row)
    return row


def check_amounts(rows: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Each allocation's ``amount_usd`` equals the sum of its ``created`` and ``extended`` events' amounts."""
    paid: dict[str, Decimal] = {}
    amounts: dict[str, Decimal] = {}
    for table, row in rows:
        if table == "allocations":
            amounts[row["id"]] = row["amount_usd"]
        elif table == "allocation_events" and row["kind"] in ("created", "extended"):
            try:
                paid[row["allocation_id"]] = paid.get(row["allocation_id"], Decimal(0)) + Decimal(str(row["details"]["amount_usd"]))
            except (KeyError, TypeError, InvalidOperation) as exc:
                raise RowInvalid(f"allocation_events {row['id']}: a {row['kind']} event without a valid amount_usd") from exc
    for allocation_id, amount in amounts.items():
        if paid.get(allocation_id) != amount:
            raise RowInvalid(f"allocations {allocation_id}: amount_usd {amount} does not match its events' "
                             f"{paid.get(allocation_id, Decimal(0))} (edited in one place only)")
