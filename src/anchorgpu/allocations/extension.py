"""The price of extending an allocation, before anything is charged.

:func:`quote_extension` prices the added term exactly as :func:`anchorgpu.allocations.booking.extend`
would (a new quote at today's list prices, same offering, region, quantity and options), says when the
allocation would end and what it would have cost in all, and whether the stock holds the servers for the
added period. It reads only: no quote is stored, no capacity is booked, nothing is charged. The API
answers it for ``POST /v1/allocations/{id}/extend`` with ``dry_run: true``; the page shows it as the
confirmation step, and the confirmed price travels with the charge (:func:`check_expected_price`), so a
price that moved in between is refused instead of charged.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from anchorgpu.allocations.domain import bounded_end, peak_servers
from anchorgpu.allocations.errors import PriceChanged
from anchorgpu.errors import UnknownEntity, said
from anchorgpu.money_rules import usd_amount
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import Term, fmt_usd

__all__ = ["check_expected_price", "parse_expected_usd", "quote_extension"]


def parse_expected_usd(text: object, *, flag: str = "expected_total_usd") -> Decimal | None:
    """The confirmed total from a form, an option or a body (None when not given: a form's empty field), by the one
    money rule of :func:`anchorgpu.money_rules.usd_amount` (a plain decimal with at most 2 places), else one line.

    >>> parse_expected_usd("2190.00"), parse_expected_usd(None)
    (Decimal('2190.00'), None)
    """
    if text is None or text == "":
        return None
    return usd_amount(text, field="expected_total_usd", flag=flag)


def check_expected_price(expected_usd: Decimal | None, total_usd: Decimal, term: Term) -> None:
    """Refuse the charge when the price confirmed by the user is not today's price for ``term``."""
    if expected_usd is not None and expected_usd != total_usd:
        raise PriceChanged(
            said("the extension by {term} now costs {total_usd}, not the {expected_usd} confirmed: nothing was "
                 "charged; confirm the new price to extend", term=term, total_usd=fmt_usd(total_usd),
                 expected_usd=fmt_usd(expected_usd)))


def quote_extension(uow: AbstractUnitOfWork, *, account_id: str, allocation_id: str, term: Term | str, now: datetime,
                    catalog: Any | None = None) -> dict[str, Any]:
    """What extending by ``term`` would cost and change, read-only (see the module docstring)."""
    from anchorgpu.allocations.inputs import _catalog, _require_id, _term
    from anchorgpu.allocations.quoting import DEFAULT_QUOTE_VALIDITY_S, _price

    added = _term(term)
    cat = _catalog(catalog)
    _require_id("allocation", allocation_id)
    with uow:
        allocation = uow.allocations.get(account_id, allocation_id)
        if allocation is None:
            raise UnknownEntity("allocation", allocation_id)
        current, _ = allocation._require_live(now, "extend")
        original = uow.quotes.get(account_id, allocation.quote_id)
        options = dict(original.options) if original is not None else {}
        quote, body = _price(cat, offering=allocation.offering_id, quantity=allocation.quantity, term=added,
                             options=options, now=now, region=allocation.region,
                             validity_s=DEFAULT_QUOTE_VALIDITY_S, quote_id="q_dry_run")
        new_ends_at = bounded_end(current.ends_at, added.hours, now)
        stock = uow.stock.get(allocation.offering_id, allocation.region) or 0
        booked = peak_servers(uow.capacity.overlapping(allocation.offering_id, allocation.region, current.ends_at,
                                                       new_ends_at), current.ends_at, new_ends_at)
    free = max(stock - booked, 0)
    available = booked + allocation.quantity <= stock
    body.pop("id", None)
    body.pop("valid_until", None)
    return {
        "dry_run": True, "charged": False, "allocation_id": allocation.id, "term": str(added),
        "added_hours": added.hours, "total_usd": str(quote.total_usd),
        "effective_per_gpu_hour_usd": str(quote.effective_per_gpu_hour_usd),
        "current_ends_at": current.ends_at.isoformat(), "ends_at": new_ends_at.isoformat(),
        "amount_usd_after": str(current.amount_usd + quote.total_usd),
        "capacity_available": available, "servers_free": free, "servers_in_stock": stock,
        "capacity": (f"{allocation.quantity} server(s) of {allocation.offering_id} in {allocation.region} are free for "
                     "the added period" if available else
                     f"only {free:,} of {stock:,} server(s) are free for the added period: extending would be refused"),
        "quote": body,
        "statement": (f"Extending by {added} would charge {fmt_usd(quote.total_usd)} now (today's list price, "
                      f"{allocation.quantity} server(s)), moving the end to {new_ends_at.isoformat()}. "
                      "Nothing has been charged."),
    }
