"""What every allocation service checks before it works: the clock, ids, quantities, terms and the account,
and the catalog it prices from (see :mod:`anchorgpu.allocations.services`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from anchorgpu.allocations.errors import InvalidQuantity
from anchorgpu.errors import InvalidInput, UnknownEntity, said
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import MAX_TERM_HOURS, Term, quotable_term, require_whole_gpus
from anchorgpu.validation import is_valid_id

__all__ = ["MAX_SERVERS_PER_QUOTE", "MAX_TERM_HOURS", "Clock"]

Clock = Callable[[], datetime]


def _now(clock: Clock) -> datetime:
    now = clock()
    if now.tzinfo is None:
        raise InvalidInput(said("the clock must return timezone-aware datetimes (UTC)"))
    return now


def _catalog(catalog: Any | None) -> Any:
    if catalog is not None:
        return catalog
    from anchorgpu.catalog import load_catalog

    return load_catalog()


MAX_SERVERS_PER_QUOTE = 1_000
"""Most servers one quote may ask for (far above any region's stock; keeps every count storable)."""
def _term(term: Term | str) -> Term:
    return quotable_term(term)


def _require_id(kind: str, value: str) -> str:
    """An id that could name a stored row, else "not found" before any query (a NUL byte, a control
    character or a 5,000-character string never names one; PostgreSQL would refuse the NUL outright)."""
    if not is_valid_id(value):
        raise UnknownEntity(kind, value if len(value) <= 100 else value[:100] + "…")
    return value


def _quantity(quantity: object) -> int:
    if isinstance(quantity, float) and not quantity.is_integer():
        require_whole_gpus(quantity, field="quantity")  # raises: part of a server is never offered
    if isinstance(quantity, bool) or not isinstance(quantity, int) or not 1 <= quantity <= MAX_SERVERS_PER_QUOTE:
        if isinstance(quantity, float) and quantity.is_integer() and 1 <= quantity <= MAX_SERVERS_PER_QUOTE:
            return int(quantity)
        raise InvalidQuantity(said("quantity {quantity!r}: a whole number of servers from 1 to "
                                   "{MAX_SERVERS_PER_QUOTE:,}", quantity=quantity,
                                   MAX_SERVERS_PER_QUOTE=MAX_SERVERS_PER_QUOTE))
    return quantity


def _require_account(uow: AbstractUnitOfWork, account_id: str) -> None:
    if uow.accounts.get(account_id) is None:
        raise UnknownEntity("account", account_id)
