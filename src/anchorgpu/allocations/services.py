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
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from anchorgpu.allocations.domain import (
    STOP_NOTICE,
    Allocation,
    AllocationEvent,
    AllocationState,
    Booking,
    peak_servers,
)
from anchorgpu.allocations.errors import InsufficientCapacity, InvalidQuantity, QuoteAlreadyUsed, QuoteExpired
from anchorgpu.allocations.idempotency import DEFAULT_KEY_TTL_S, Outcome, run_idempotent
from anchorgpu.errors import InvalidInput, InvalidTerm, UnknownEntity
from anchorgpu.store.repository import QuoteRecord
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import Term, fmt_usd, parse_term, require_whole_gpus
from anchorgpu.validation import is_valid_id

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

Clock = Callable[[], datetime]

DEFAULT_QUOTE_VALIDITY_S = 24 * 3600


def _now(clock: Clock) -> datetime:
    now = clock()
    if now.tzinfo is None:
        raise InvalidInput("the clock must return timezone-aware datetimes (UTC)")
    return now


def _catalog(catalog: Any | None) -> Any:
    if catalog is not None:
        return catalog
    from anchorgpu.catalog import load_catalog

    return load_catalog()


MAX_SERVERS_PER_QUOTE = 1_000
"""Most servers one quote may ask for (far above any region's stock; keeps every count storable)."""
MAX_TERM_HOURS = 10 * 8_760
"""Longest term one quote or extension may ask for: 10 years of hours."""
MAX_STOCK_SERVERS = 100_000


def _term(term: Term | str) -> Term:
    parsed = term if isinstance(term, Term) else parse_term(term)
    if parsed.hours > MAX_TERM_HOURS:
        raise InvalidTerm(f"term {parsed}: at most {MAX_TERM_HOURS} hours (10 years) can be quoted at once")
    return parsed


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
        raise InvalidQuantity(f"quantity {quantity!r}: a whole number of servers from 1 to {MAX_SERVERS_PER_QUOTE}")
    return quantity


# -- JSON ----------------------------------------------------------------------------------------

def _event_to_json(e: AllocationEvent) -> dict[str, Any]:
    return {
        "seq": e.seq, "kind": e.kind, "at": e.at.isoformat(),
        "from_state": None if e.from_state is None else e.from_state.value, "to_state": e.to_state.value,
        "details": e.details,
    }


def allocation_to_json(allocation: Allocation, now: datetime) -> dict[str, Any]:
    """The allocation JSON contract (CLI ``--json``, API body) with the state at ``now``.

    Keys: ``id, quote_id, offering, region, quantity, gpus, state, starts_at, ends_at, term{unit,count,hours},
    paid_hours, amount_usd, created_at, terminated_at, events[]``; a stopped allocation also carries
    ``notice`` (stopping does not pause the paid term).
    """
    current, _ = allocation.resolve(now)
    body: dict[str, Any] = {
        "id": current.id,
        "quote_id": current.quote_id,
        "offering": current.offering_id,
        "region": current.region,
        "quantity": current.quantity,
        "gpus": current.gpus,
        "state": current.state.value,
        "starts_at": current.starts_at.isoformat(),
        "ends_at": current.ends_at.isoformat(),
        "term": {"unit": current.term.unit, "count": current.term.count, "hours": current.term.hours},
        "paid_hours": int((current.ends_at - current.starts_at) / timedelta(hours=1)),
        "amount_usd": str(current.amount_usd),
        "created_at": current.created_at.isoformat(),
        "terminated_at": None if current.terminated_at is None else current.terminated_at.isoformat(),
        "events": [_event_to_json(e) for e in current.events],
    }
    if current.state is AllocationState.STOPPED:
        body["notice"] = stop_notice(current)
    return body


def stop_notice(allocation: Allocation) -> str:
    """The stop statement with this allocation's own end and amount.

    It always contains :data:`STOP_NOTICE`'s words "Stopping does not pause the paid term".
    """
    return (
        f"{STOP_NOTICE.split(':')[0]}: this allocation still ends at {allocation.ends_at.isoformat()} "
        f"and its amount paid ({fmt_usd(allocation.amount_usd)}) does not change; start it again any time before then."
    )


# -- quotes --------------------------------------------------------------------------------------

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


def _require_account(uow: AbstractUnitOfWork, account_id: str) -> None:
    if uow.accounts.get(account_id) is None:
        raise UnknownEntity("account", account_id)


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


# -- capacity ------------------------------------------------------------------------------------

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
            f"{offering_id} in {region}: {servers} server(s) requested but only {free} of {stock} free "
            f"for the whole period {starts_at:%Y-%m-%d %H:%M} to {ends_at:%Y-%m-%d %H:%M} UTC"
        )
    uow.capacity.add(allocation_id=allocation_id, offering_id=offering_id, region=region,
                     booking=Booking(servers=servers, starts_at=starts_at, ends_at=ends_at))


# -- buying and acting on allocations -------------------------------------------------------------

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
        raise InvalidInput("starts_at must be a timezone-aware instant, not in the past")
    begin = starts_at or now
    request = {"quote_id": quote_id, "starts_at": None if starts_at is None else starts_at.isoformat()}

    def action(u: AbstractUnitOfWork) -> tuple[int, dict[str, Any], str | None]:
        quote = u.quotes.get(account_id, quote_id, for_update=True)
        if quote is None or quote.purpose != "quote":
            raise UnknownEntity("quote", quote_id)
        if quote.used_at is not None:
            raise QuoteAlreadyUsed(f"quote {quote_id} was already bought; ask for a new quote")
        if not now < quote.valid_until:
            raise QuoteExpired(f"quote {quote_id} expired at {quote.valid_until.isoformat()}; ask for a new quote")
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


# -- reads ---------------------------------------------------------------------------------------

def list_allocations(uow: AbstractUnitOfWork, *, account_id: str, clock: Clock) -> list[dict[str, Any]]:
    """The account's allocations, oldest first, with states at the clock's now."""
    now = _now(clock)
    with uow:
        allocations = uow.allocations.for_account(account_id)
    return [allocation_to_json(a, now) for a in allocations]


def get_allocation(uow: AbstractUnitOfWork, *, account_id: str, allocation_id: str, clock: Clock) -> dict[str, Any]:
    """One allocation of the account; ``UnknownEntity`` for an unknown id or another account's."""
    now = _now(clock)
    _require_id("allocation", allocation_id)
    with uow:
        allocation = uow.allocations.get(account_id, allocation_id)
    if allocation is None:
        raise UnknownEntity("allocation", allocation_id)
    return allocation_to_json(allocation, now)


# -- stock (operator) ----------------------------------------------------------------------------

def set_stock(
    uow: AbstractUnitOfWork, *, offering: str, servers: int, region: str | None = None, clock: Clock,
    catalog: Any | None = None,
) -> dict[str, Any]:
    """Set the servers of ``offering`` in ``region`` (default: its first region). Lowering stock never
    cancels what was sold; it only limits new bookings. Returns ``{offering, region, stock, booked_now}``."""
    if isinstance(servers, bool) or not isinstance(servers, int) or not 0 <= servers <= MAX_STOCK_SERVERS:
        raise InvalidQuantity(f"stock {servers!r}: must be a whole number of servers from 0 to {MAX_STOCK_SERVERS}")
    shipped = _catalog(catalog)
    found = shipped.offering(offering)
    where = (region or found.region).strip().lower()
    if region is not None:
        shipped.region(where)  # a region nobody has: UnknownEntity (exit 3) with did-you-mean, as `quote --region`
    if where not in found.regions:
        from anchorgpu.quotes.errors import RegionNotOffered

        raise RegionNotOffered(f"offering {found.id} is not listed in region {where!r} (listed: {', '.join(found.regions)})")
    now = _now(clock)
    with uow:
        uow.stock.set(found.id, where, servers, now)
        booked = peak_servers(uow.capacity.overlapping(found.id, where, now, now + timedelta(microseconds=1)),
                              now, now + timedelta(microseconds=1))
        uow.commit()
    return {"offering": found.id, "region": where, "stock": servers, "booked_now": booked}


def list_stock(uow: AbstractUnitOfWork, *, clock: Clock | None = None) -> dict[tuple[str, str], int]:
    """Servers in stock per (offering, region). With ``clock``: servers free right now (stock − booked)."""
    with uow:
        stock = uow.stock.all()
        if clock is None:
            return stock
        now = _now(clock)
        later = now + timedelta(microseconds=1)
        return {
            (o, r): max(s - peak_servers(uow.capacity.overlapping(o, r, now, later), now, later), 0)
            for (o, r), s in stock.items()
        }


def seed_stock(uow: AbstractUnitOfWork, *, clock: Clock, catalog: Any | None = None) -> int:
    """Insert the catalog's initial stock for every (offering, region) not yet in the database.

    Idempotent: rows already there (possibly changed by an operator) are never overwritten.
    """
    from sqlalchemy.exc import IntegrityError

    rows = {(o.id, r): int(n) for o in _catalog(catalog).offerings for r, n in o.initial_stock.items()}
    for _attempt in range(3):
        try:
            with uow:
                added = uow.stock.add_missing(rows, _now(clock))
                uow.commit()
            return added
        except IntegrityError:
            continue  # another process (a second API worker) seeded the same rows first: look again
    raise RuntimeError("could not seed stock: rows kept changing under concurrent seeding")
