"""The allocation JSON contract (CLI ``--json``, API body) and the reads that answer with it: the account's
allocations, or one of them, with their states at the clock's now.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from anchorgpu.allocations.domain import STOP_NOTICE, Allocation, AllocationEvent, AllocationState
from anchorgpu.allocations.inputs import Clock, _now, _require_id
from anchorgpu.errors import UnknownEntity
from anchorgpu.store.uow import AbstractUnitOfWork
from anchorgpu.units import fmt_usd

__all__ = ["allocation_to_json", "get_allocation", "list_allocations", "stop_notice"]


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
