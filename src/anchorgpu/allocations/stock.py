"""Stock (operator): servers per offering and region, set by hand or seeded from the catalog; lowering it never
cancels what was sold, it only limits new bookings.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from anchorgpu.allocations.domain import peak_servers
from anchorgpu.allocations.errors import InvalidQuantity
from anchorgpu.allocations.inputs import Clock, _catalog, _now
from anchorgpu.errors import said
from anchorgpu.store.uow import AbstractUnitOfWork

__all__ = ["MAX_STOCK_SERVERS", "list_stock", "seed_stock", "set_stock"]

MAX_STOCK_SERVERS = 100_000


def set_stock(
    uow: AbstractUnitOfWork, *, offering: str, servers: int, region: str | None = None, clock: Clock,
    catalog: Any | None = None,
) -> dict[str, Any]:
    """Set the servers of ``offering`` in ``region`` (default: its first region). Lowering stock never
    cancels what was sold; it only limits new bookings. Returns ``{offering, region, stock, booked_now}``."""
    if isinstance(servers, bool) or not isinstance(servers, int) or not 0 <= servers <= MAX_STOCK_SERVERS:
        raise InvalidQuantity(said("stock {servers!r}: must be a whole number of servers from 0 to "
                                   "{MAX_STOCK_SERVERS:,}", servers=servers, MAX_STOCK_SERVERS=MAX_STOCK_SERVERS))
    shipped = _catalog(catalog)
    found = shipped.offering(offering)
    where = (region or found.region).strip().lower()
    if region is not None:
        shipped.region(where)  # a region nobody has: UnknownEntity (exit 3) with did-you-mean, as `quote --region`
    if where not in found.regions:
        from anchorgpu.quotes.errors import RegionNotOffered

        raise RegionNotOffered(said("offering {found_id} is not listed in region {where!r} (listed: {regions})",
                                    found_id=found.id, where=where, regions=', '.join(found.regions)))
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
