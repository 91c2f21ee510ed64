"""Allocations: fixed-term rentals bought from quotes, booked exactly once, never oversold.

Public API (services take plain values, a unit of work and a clock; see each docstring):

- ``create_quote(uow, *, account_id, offering, term, quantity=1, options=None, region=None, clock)`` → quote JSON
- ``get_quote(uow, *, account_id, quote_id)`` → quote JSON (+ ``used``)
- ``buy_quote(uow, *, account_id, quote_id, idempotency_key, clock, starts_at=None)`` → :class:`Outcome` (201)
- ``stop / start / terminate(uow, *, account_id, allocation_id, idempotency_key, clock)`` → :class:`Outcome` (200)
- ``extend(uow, *, account_id, allocation_id, term, idempotency_key, clock)`` → :class:`Outcome` (200)
- ``list_allocations(uow, *, account_id, clock)`` / ``get_allocation(uow, *, account_id, allocation_id, clock)``
- ``set_stock(uow, *, offering, servers, region=None, clock)``, ``list_stock(uow, clock=None)``, ``seed_stock``
- ``purge_idempotency_keys(uow, *, now)`` → number of expired keys deleted
- :class:`Outcome` ``(status, body, replayed, resource_id)``: ``body`` is the exact JSON the faces print;
  a replayed business error is re-raised with ``error.replayed = True``.
- Errors: :mod:`anchorgpu.allocations.errors` (``quote_expired``, ``quote_already_used``,
  ``insufficient_capacity``, ``allocation_expired``, ``allocation_terminated``,
  ``allocation_state_conflict``, ``idempotency_key_reused`` (422), ``idempotency_request_in_progress``,
  ``invalid_idempotency_key``).
- Domain: :class:`Allocation`, :class:`AllocationState`, :data:`STOP_NOTICE`.

Names are loaded on first use (nothing happens at import, and the store can import the domain).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchorgpu.allocations.booking import buy_quote, extend, start, stop, terminate
    from anchorgpu.allocations.domain import STOP_NOTICE, Allocation, AllocationEvent, AllocationState
    from anchorgpu.allocations.errors import (
        AllocationExpired,
        AllocationStateConflict,
        AllocationTerminated,
        IdempotencyInProgress,
        IdempotencyKeyReused,
        InsufficientCapacity,
        InvalidIdempotencyKey,
        QuoteAlreadyUsed,
        QuoteExpired,
    )
    from anchorgpu.allocations.idempotency import Outcome, purge_idempotency_keys, validate_idempotency_key
    from anchorgpu.allocations.quoting import create_quote, get_quote
    from anchorgpu.allocations.reads import allocation_to_json, get_allocation, list_allocations, stop_notice
    from anchorgpu.allocations.stock import list_stock, seed_stock, set_stock

_WHERE = {
    "STOP_NOTICE": "domain", "Allocation": "domain", "AllocationEvent": "domain", "AllocationState": "domain",
    "AllocationExpired": "errors", "AllocationStateConflict": "errors", "AllocationTerminated": "errors",
    "IdempotencyInProgress": "errors", "IdempotencyKeyReused": "errors", "InsufficientCapacity": "errors",
    "InvalidIdempotencyKey": "errors", "QuoteAlreadyUsed": "errors", "QuoteExpired": "errors",
    "Outcome": "idempotency", "purge_idempotency_keys": "idempotency", "validate_idempotency_key": "idempotency",
    "allocation_to_json": "reads", "buy_quote": "booking", "create_quote": "quoting", "extend": "booking",
    "get_allocation": "reads", "get_quote": "quoting", "list_allocations": "reads", "list_stock": "stock",
    "seed_stock": "stock", "set_stock": "stock", "start": "booking", "stop": "booking", "stop_notice": "reads",
    "terminate": "booking",
}

__all__ = [
    "Allocation",
    "AllocationEvent",
    "AllocationExpired",
    "AllocationState",
    "AllocationStateConflict",
    "AllocationTerminated",
    "IdempotencyInProgress",
    "IdempotencyKeyReused",
    "InsufficientCapacity",
    "InvalidIdempotencyKey",
    "Outcome",
    "QuoteAlreadyUsed",
    "QuoteExpired",
    "STOP_NOTICE",
    "allocation_to_json",
    "buy_quote",
    "create_quote",
    "extend",
    "get_allocation",
    "get_quote",
    "list_allocations",
    "list_stock",
    "purge_idempotency_keys",
    "seed_stock",
    "set_stock",
    "start",
    "stop",
    "stop_notice",
    "terminate",
    "validate_idempotency_key",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'anchorgpu.allocations' has no attribute {name!r}")
    return getattr(importlib.import_module(f"anchorgpu.allocations.{module}"), name)
