"""Quotes: priced by the catalog's pure ``price_quote``, stored for the account, shown again exactly as first
priced. :mod:`anchorgpu.allocations.booking` buys them and prices extensions the same way.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from anchorgpu.allocations.inputs import (
    Clock,
    _catalog,
    _now,
    _quantity,
    _require_account,
    _require_id,
    _term,
)
from anchorgpu.errors import UnknownEntity
from anchorgpu.store.repository import QuoteRecord
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import Term

__all__ = ["DEFAULT_QUOTE_VALIDITY_S", "create_quote", "get_quote"]

DEFAULT_QUOTE_VALIDITY_S = 24 * 3600


def _price(
    catalog: Any, *, offering: str, quantity: int, term: Term, options: Mapping[str, int] | None, now: datetime,
    region: str | None, validity_s: int, quote_id: str,
) -> tuple[Any, dict[str, Any]]:
    from anchorgpu.quotes.pricing import price_quote
    from anchorgpu.quotes.serialize import quote_to_json

    quote = price_quote(catalog, offering, quantity, term, dict(options or {}), now, validity_s,
                        region=region, quote_id=quote_id)
    return quote, quote_to_json(quote)


def _store_quote(uow: AbstractUnitOfWork, account_id: str, quote: Any, body: dict[str, Any], purpose: str) -> QuoteRecord:
    record = QuoteRecord(
        id=body["id"], account_id=account_id, offering_id=quote.offering_id, region=quote.region,
        quantity=quote.quantity, gpus=quote.gpus, term=quote.term, options=dict(quote.options),
        total_usd=quote.total_usd, catalog_version=quote.catalog_version, created_at=quote.created_at,
        valid_until=quote.valid_until, purpose=purpose, body=body,
    )
    uow.quotes.add(record)
    return record


def create_quote(
    uow: AbstractUnitOfWork,
    *,
    account_id: str,
    offering: str,
    term: Term | str,
    quantity: int = 1,
    options: Mapping[str, int] | None = None,
    region: str | None = None,
    clock: Clock,
    validity_s: int = DEFAULT_QUOTE_VALIDITY_S,
    catalog: Any | None = None,
) -> dict[str, Any]:
    """Price ``quantity`` servers of ``offering`` for ``term`` (CAT's pure ``price_quote``) and store the
    quote for the account; return its JSON (``id, offering, quantity, gpus, term, lines, total_usd, …``).

    Bad input (unknown offering/option/region, bad term, unpriced) raises before anything is stored.
    """
    now = _now(clock)
    quantity = _quantity(quantity)
    quote, body = _price(_catalog(catalog), offering=offering, quantity=quantity, term=_term(term), options=options,
                         now=now, region=region, validity_s=validity_s, quote_id=f"q_{secrets.token_hex(8)}")
    with uow:
        _require_account(uow, account_id)
        _store_quote(uow, account_id, quote, body, "quote")
        uow.commit()
    return body


def get_quote(uow: AbstractUnitOfWork, *, account_id: str, quote_id: str) -> dict[str, Any]:
    """The stored quote JSON exactly as first shown (prices as quoted), plus ``used``."""
    _require_id("quote", quote_id)
    with uow:
        record = uow.quotes.get(account_id, quote_id)
    if record is None or record.purpose != "quote":
        raise UnknownEntity("quote", quote_id)
    return {**record.body, "used": record.used_at is not None}
