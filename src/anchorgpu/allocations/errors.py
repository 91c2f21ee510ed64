"""Named errors of quotes, allocations and idempotency (subclasses of the one tree in anchorgpu.errors).

Each has a stable ``code``; the API maps ``http_status`` and the CLI ``exit_code``. Raising any of them
changes nothing in the database (the service's transaction is rolled back; an idempotent operation
stores the business outcome under its key, see :mod:`anchorgpu.allocations.idempotency`).
"""

from __future__ import annotations

from anchorgpu.errors import AnchorError, Conflict, InvalidInput, NotFound

__all__ = [
    "AllocationExpired",
    "AllocationStateConflict",
    "AllocationTerminated",
    "IdempotencyInProgress",
    "IdempotencyKeyReused",
    "InsufficientCapacity",
    "InvalidIdempotencyKey",
    "InvalidQuantity",
    "PriceChanged",
    "QuoteAlreadyUsed",
    "QuoteExpired",
    "replayed_error",
]


class QuoteExpired(Conflict):
    """The quote's ``valid_until`` has passed; ask for a new quote."""

    code = "quote_expired"


class PriceChanged(Conflict):
    """The price confirmed for an extension is no longer today's price; nothing was charged."""

    code = "price_changed"


class QuoteAlreadyUsed(Conflict):
    """The quote was already bought (one allocation per quote)."""

    code = "quote_already_used"


class InsufficientCapacity(Conflict):
    """Booking would put more servers in use than the region's stock at some instant of the term."""

    code = "insufficient_capacity"


class AllocationExpired(Conflict):
    """The allocation's paid term is over; it cannot be started, stopped, extended or terminated."""

    code = "allocation_expired"


class AllocationTerminated(Conflict):
    code = "allocation_terminated"


class AllocationStateConflict(Conflict):
    """The action does not apply to the allocation's current state (e.g. stop when already stopped)."""

    code = "allocation_state_conflict"


class IdempotencyKeyReused(Conflict):
    """The key was first used with a different request; a key is never a way to make a second purchase."""

    code = "idempotency_key_reused"
    http_status = 422


class IdempotencyInProgress(Conflict):
    """A request with this key is still being processed; retry the same request shortly."""

    code = "idempotency_request_in_progress"


class InvalidIdempotencyKey(InvalidInput):
    code = "invalid_idempotency_key"


class InvalidQuantity(InvalidInput):
    code = "invalid_quantity"


_FAMILY_BY_STATUS: dict[int, type[AnchorError]] = {409: Conflict, 404: NotFound, 422: InvalidInput}


def replayed_error(status: int, code: str, message: str) -> AnchorError:
    """Rebuild the stored business error of an idempotent request, flagged ``replayed = True``.

    The class is chosen from the most specific known error with that ``code``, so the API and the CLI
    answer a replay exactly as they answered the first request.

    >>> err = replayed_error(409, "insufficient_capacity", "only 0 of 1 servers free")
    >>> isinstance(err, InsufficientCapacity), err.replayed, err.http_status
    (True, True, 409)
    """
    known: dict[str, type[AnchorError]] = {
        cls.code: cls
        for cls in (QuoteExpired, QuoteAlreadyUsed, InsufficientCapacity, AllocationExpired, AllocationTerminated,
                    AllocationStateConflict)
    }
    cls = known.get(code) or _FAMILY_BY_STATUS.get(status, Conflict)
    error = cls.__new__(cls)
    AnchorError.__init__(error, message, code=code)
    error.http_status = status
    error.replayed = True  # type: ignore[attr-defined]
    return error
