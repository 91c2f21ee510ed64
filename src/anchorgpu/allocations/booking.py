"""Buying a quote and acting on the allocation: ``buy_quote``, ``stop``, ``start``, ``terminate``, ``extend``.

Each takes an ``idempotency_key`` and returns an :class:`Outcome` (status, body, ``replayed``) through
:func:`anchorgpu.allocations.idempotency.run_idempotent`, doing its work in ONE transaction.

Capacity: for every instant of a requested period, servers booked for the offering in the region
never exceed its stock. The check and the insert are atomic because the stock row is locked
(``SELECT … FOR UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serializes writers).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from anchorgpu.allocations.domain import Allocation, AllocationEvent, Booking, peak_servers
from anchorgpu.allocations.errors import InsufficientCapacity, QuoteAlreadyUsed, QuoteExpired
from anchorgpu.allocations.idempotency import DEFAULT_KEY_TTL_S, Outcome, run_idempotent
from anchorgpu.allocations.inputs import Clock, _catalog, _now, _require_account, _require_id, _term
from anchorgpu.allocations.quoting import DEFAULT_QUOTE_VALIDITY_S, _price, _store_quote
from anchorgpu.allocations.reads import allocation_to_json
from anchorgpu.errors import InvalidInput, UnknownEntity, said
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import Term

__all__ = ["buy_quote", "extend", "start", "stop", "terminate"]


def _reserve_capacity(
    uow: AbstractUnitOfWork, *, allocation_id: str, offering_id: str, region: str, servers: int,
    starts_at: datetime, ends_at: datetime,
) -> None:
    """Check that ``servers`` more fit at every instant of ``[starts_at, ends_at)`` and book them.

    Must run inside the transaction that writes the allocation: the stock row lock held here makes
    the check and the insert one atomic step for every process sharing the database.
    """
    stock = uow.stock.get(offering_id, region, for_update=True)
    if stock is None:
        stock = 0
    booked = peak_servers(uow.capacity.overlapping(offering_id, region, starts_at, ends_at), starts_at, ends_at)
    if booked + servers > stock:
        free = max(stock - booked, 0)
        raise InsufficientCapacity(
            said("{offering_id} in {region}: {servers:,} server(s) requested but only {free:,} of {stock:,} free "
                 "for the whole period {starts_at:%Y-%m-%d %H:%M} to {ends_at:%Y-%m-%d %H:%M} UTC",
                 offering_id=offering_id, region=region, servers=servers, free=free, stock=stock, starts_at=starts_at,
                 ends_at=ends_at)
        )
    uow.capacity.add(allocation_id=allocation_id, offering_id=offering_id, region=region,
                     booking=Booking(servers=servers, starts_at=starts_at, ends_at=ends_at))


def buy_quote(
    uow: AbstractUnitOfWork,
    *,
    account_id: str,
    quote_id: str,
    idempotency_key: str,
    clock: Clock,
    starts_at: datetime | None = None,
    key_ttl_s: int = DEFAULT_KEY_TTL_S,
) -> Outcome:
    """Buy the account's quote once: an allocation over ``[starts_at, starts_at + term)``, status 201.

    ``starts_at`` defaults to now (a later one makes the allocation ``scheduled``). Raises
    ``UnknownEntity`` (no such quote for this account), :class:`QuoteExpired`,
    :class:`QuoteAlreadyUsed`, :class:`InsufficientCapacity`; the business errors are stored under the key.
    """
    now = _now(clock)
    _require_id("quote", quote_id)
    if starts_at is not None and (starts_at.tzinfo is None or starts_at < now - timedelta(minutes=5)):
        raise InvalidInput(said("starts_at must be a timezone-aware instant, not in the past"))
    begin = starts_at or now
    request = {"quote_id": quote_id, "starts_at": None if starts_at is None else starts_at.isoformat()}

    def action(u: AbstractUnitOfWork) -> tuple[int, dict[str, Any], str | None]:
        quote = u.quotes.get(account_id, quote_id, for_update=True)
        if quote is None or quote.purpose != "quote":
            raise UnknownEntity("quote", quote_id)
        if quote.used_at is not None:
            raise QuoteAlreadyUsed(said("quote {quote_id} was already bought; ask for a new quote", quote_id=quote_id))
        if not now < quote.valid_until:
            raise QuoteExpired(said("quote {quote_id} expired at {isoformat}; ask for a new quote", quote_id=quote_id,
                                    isoformat=quote.valid_until.isoformat()))
        allocation, _ = Allocation.bought(
            id=f"al_{secrets.token_hex(8)}", account_id=account_id, quote_id=quote.id, offering_id=quote.offering_id,
            region=quote.region, quantity=quote.quantity, gpus=quote.gpus, term=quote.term,
            amount_usd=quote.total_usd, starts_at=begin, now=now,
        )
        u.allocations.add(allocation)
        _reserve_capacity(u, allocation_id=allocation.id, offering_id=quote.offering_id, region=quote.region,
                          servers=quote.quantity, starts_at=allocation.starts_at, ends_at=allocation.ends_at)
        u.quotes.mark_used(quote.id, now)
        return 201, allocation_to_json(allocation, now), allocation.id

    return _idempotent(uow, account_id, "buy", idempotency_key, request, now, action, key_ttl_s)


def _idempotent(
    uow: AbstractUnitOfWork, account_id: str, operation: str, key: str, request: dict[str, Any], now: datetime,
    action: Callable[[AbstractUnitOfWork], tuple[int, dict[str, Any], str | None]], ttl_s: int,
) -> Outcome:
    def guarded(u: AbstractUnitOfWork) -> tuple[int, dict[str, Any], str | None]:
        _require_account(u, account_id)
        return action(u)

    return run_idempotent(uow, account_id=account_id, operation=operation, key=key, request=request, now=now,
                          action=guarded, ttl_s=ttl_s)


def _act(
    uow: AbstractUnitOfWork, operation: str, *, account_id: str, allocation_id: str, idempotency_key: str,
    clock: Clock, change: Callable[[AbstractUnitOfWork, Allocation, datetime], tuple[Allocation, list[AllocationEvent]]],
    extra_request: dict[str, Any] | None = None, key_ttl_s: int = DEFAULT_KEY_TTL_S,
) -> Outcome:
    now = _now(clock)
    _require_id("allocation", allocation_id)
    request = {"allocation_id": allocation_id, **(extra_request or {})}

    def action(u: AbstractUnitOfWork) -> tuple[int, dict[str, Any], str | None]:
        allocation = u.allocations.get(account_id, allocation_id, for_update=True)
        if allocation is None:
            raise UnknownEntity("allocation", allocation_id)
        changed, events = change(u, allocation, now)
        u.allocations.save(changed, events)
        return 200, allocation_to_json(changed, now), changed.id

    return _idempotent(uow, account_id, operation, idempotency_key, request, now, action, key_ttl_s)


def stop(uow: AbstractUnitOfWork, *, account_id: str, allocation_id: str, idempotency_key: str, clock: Clock,
         key_ttl_s: int = DEFAULT_KEY_TTL_S) -> Outcome:
    """Stop the allocation. ``ends_at`` and ``amount_usd`` never change: the body's ``notice`` says so."""
    return _act(uow, "stop", account_id=account_id, allocation_id=allocation_id, idempotency_key=idempotency_key,
                clock=clock, change=lambda _u, a, now: a.stop(now), key_ttl_s=key_ttl_s)


def start(uow: AbstractUnitOfWork, *, account_id: str, allocation_id: str, idempotency_key: str, clock: Clock,
          key_ttl_s: int = DEFAULT_KEY_TTL_S) -> Outcome:
    """Start a stopped allocation again; :class:`AllocationExpired` once its term is over."""
    return _act(uow, "start", account_id=account_id, allocation_id=allocation_id, idempotency_key=idempotency_key,
                clock=clock, change=lambda _u, a, now: a.start(now), key_ttl_s=key_ttl_s)


def terminate(uow: AbstractUnitOfWork, *, account_id: str, allocation_id: str, idempotency_key: str, clock: Clock,
              key_ttl_s: int = DEFAULT_KEY_TTL_S) -> Outcome:
    """End the allocation now: no refund (``amount_usd`` stays); its servers are free again from now on."""

    def change(u: AbstractUnitOfWork, a: Allocation, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        changed, events = a.terminate(now)
        u.capacity.release_after(a.id, now)
        return changed, events

    return _act(uow, "terminate", account_id=account_id, allocation_id=allocation_id,
                idempotency_key=idempotency_key, clock=clock, change=change, key_ttl_s=key_ttl_s)


def extend(
    uow: AbstractUnitOfWork,
    *,
    account_id: str,
    allocation_id: str,
    term: Term | str,
    idempotency_key: str,
    clock: Clock,
    catalog: Any | None = None,
    key_ttl_s: int = DEFAULT_KEY_TTL_S,
    expected_total_usd: Decimal | None = None,
) -> Outcome:
    """Add ``term`` after the allocation's ``ends_at``, priced by a new quote at today's list prices (same
    offering, region, quantity and options), with capacity checked for the added period only.
    ``expected_total_usd``: the price the user confirmed (:func:`anchorgpu.allocations.extension.quote_extension`);
    a different price today is refused (``PriceChanged``) and nothing is charged."""
    from anchorgpu.allocations.extension import check_expected_price

    added = _term(term)
    cat = _catalog(catalog)

    def change(u: AbstractUnitOfWork, a: Allocation, now: datetime) -> tuple[Allocation, list[AllocationEvent]]:
        original = u.quotes.get(account_id, a.quote_id)
        options = dict(original.options) if original is not None else {}
        quote, body = _price(cat, offering=a.offering_id, quantity=a.quantity, term=added, options=options, now=now,
                             region=a.region, validity_s=DEFAULT_QUOTE_VALIDITY_S,
                             quote_id=f"q_{secrets.token_hex(8)}")
        check_expected_price(expected_total_usd, quote.total_usd, added)
        current, _ = a.resolve(now)
        extended, events = a.extend(now, hours=added.hours, amount_usd=quote.total_usd, quote_id=body["id"])
        _store_quote(u, account_id, quote, body, "extension")
        u.quotes.mark_used(body["id"], now)
        _reserve_capacity(u, allocation_id=a.id, offering_id=a.offering_id, region=a.region, servers=a.quantity,
                          starts_at=current.ends_at, ends_at=extended.ends_at)
        return extended, events

    return _act(uow, "extend", account_id=account_id, allocation_id=allocation_id, idempotency_key=idempotency_key,
                clock=clock, change=change, extra_request={"term": {"unit": added.unit, "count": added.count}},
                key_ttl_s=key_ttl_s)
