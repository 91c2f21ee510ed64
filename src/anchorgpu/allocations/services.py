"""Services of quotes and allocations: plain values in, JSON-ready dicts (the faces' contract) out.

Each service takes a unit of work and a clock (``Callable[[], datetime]``, timezone-aware UTC) and
does its work in ONE transaction. The purchase-like ones (``buy_quote``, ``extend``, ``stop``,
``start``, ``terminate``) take an ``idempotency_key`` and return an :class:`Outcome` (status, body,
``replayed``) through :func:`anchorgpu.allocations.idempotency.run_idempotent`.

Every quote and allocation belongs to an account: another account's id answers ``UnknownEntity``
(not found), never its data.

Capacity: for every instant of a requested period, servers booked for the offering in the region
never exceed its stock. The check and the insert are atomic because the stock row is locked
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serializes writers).

The services live by what they do: :mod:`~anchorgpu.allocations.quoting` (``create_quote``, ``get_quote``),
:mod:`~anchorgpu.allocations.booking` (``buy_quote``, ``stop``, ``start``, ``terminate``, ``extend``),
:mod:`~anchorgpu.allocations.reads` (the allocation JSON, ``list_allocations``, ``get_allocation``),
:mod:`~anchorgpu.allocations.stock` (``set_stock``, ``list_stock``, ``seed_stock``) and
:mod:`~anchorgpu.allocations.inputs` (the checks they share); this module names them all for the faces.
"""

from __future__ import annotations

from anchorgpu.allocations.booking import buy_quote, extend, start, stop, terminate
from anchorgpu.allocations.inputs import MAX_SERVERS_PER_QUOTE as MAX_SERVERS_PER_QUOTE
from anchorgpu.allocations.inputs import MAX_TERM_HOURS as MAX_TERM_HOURS
from anchorgpu.allocations.inputs import Clock
from anchorgpu.allocations.quoting import DEFAULT_QUOTE_VALIDITY_S as DEFAULT_QUOTE_VALIDITY_S
from anchorgpu.allocations.quoting import create_quote, get_quote
from anchorgpu.allocations.reads import allocation_to_json, get_allocation, list_allocations, stop_notice
from anchorgpu.allocations.stock import MAX_STOCK_SERVERS as MAX_STOCK_SERVERS
from anchorgpu.allocations.stock import list_stock, seed_stock, set_stock

__all__ = [
    "Clock",
    "allocation_to_json",
    "buy_quote",
    "create_quote",
    "extend",
    "get_allocation",
    "get_quote",
    "list_allocations",
    "list_stock",
    "seed_stock",
    "set_stock",
    "start",
    "stop_notice",
    "stop",
    "terminate",
]
