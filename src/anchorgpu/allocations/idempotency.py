"""Idempotency for every purchase-like operation, implemented once (buy, extend, stop, start, terminate).

Contract (DESIGN.md section 2, the IETF Idempotency-Key draft, brandur's one-transaction design):

* A key is scoped by (account, operation, key) and must be 1–255 printable ASCII characters.
* The request's fingerprint is the SHA-256 of its canonical JSON (sorted keys, no spaces).
* The key row and the effect are written in ONE transaction: the row is inserted first (a concurrent
  twin then waits on the unique constraint, PostgreSQL, or on the write lock, SQLite), the action runs,
  the outcome is stored on the row, and everything commits together — or nothing does.
* Same key + same request → the stored outcome, ``replayed=True`` (also for a stored business error,
  re-raised with ``error.replayed = True``). Same key + different request → :class:`IdempotencyKeyReused`.
  A twin that cannot get the row within the lock timeout → :class:`IdempotencyInProgress`.
* Stored: successes and business errors (:class:`~anchorgpu.errors.Conflict` family: insufficient
  capacity, quote expired/used, state conflicts). Not stored: bad input, unknown ids, transient
  database failures — the transaction is rolled back and the key stays free for a retry.
* Keys live ``Settings.idempotency_key_ttl_s`` (≥ 24 h); an expired key counts as new and
  :func:`purge_idempotency_keys` deletes expired rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from anchorgpu.allocations.errors import (
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidIdempotencyKey,
    replayed_error,
)
from anchorgpu.errors import Conflict, said
from anchorgpu.store.uow import AbstractUnitOfWork

__all__ = [
    "DEFAULT_KEY_TTL_S",
    "Outcome",
    "canonical_json",
    "fingerprint",
    "purge_idempotency_keys",
    "run_idempotent",
    "validate_idempotency_key",
]

DEFAULT_KEY_TTL_S = 48 * 3600
MIN_KEY_TTL_S = 24 * 3600
"""Keys are kept at least 24 h (Stripe's contract; DESIGN.md section 5)."""
LOCK_TIMEOUT_S = 15.0
"""How long a request waits for a concurrent twin with the same key before answering "in progress"."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """The answer of an idempotent operation: HTTP-style ``status``, the JSON ``body`` the faces print,
    and whether it is a replay of the first answer."""

    status: int
    body: dict[str, Any] = field(default_factory=dict)
    replayed: bool = False
    resource_id: str | None = None


def validate_idempotency_key(key: object) -> str:
    """The key if it is 1–255 printable ASCII characters, else :class:`InvalidIdempotencyKey`.

    >>> validate_idempotency_key("retry-42")
    'retry-42'
    """
    if not isinstance(key, str) or not 1 <= len(key) <= 255 or not all(" " <= ch <= "~" for ch in key):
        shown = repr(key)[:40]
        raise InvalidIdempotencyKey(said("idempotency key {shown}: must be 1-255 printable ASCII characters",
                                         shown=shown))
    return key


def _default(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """Canonical JSON text: sorted keys, no insignificant spaces, Decimals and datetimes as strings.

    >>> canonical_json({"b": 1, "a": [1, 2]})
    '{"a":[1,2],"b":1}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_default)


def fingerprint(operation: str, request: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of the operation and its request.

    >>> fingerprint("stop", {"allocation_id": "al_1"}) == fingerprint("stop", {"allocation_id": "al_1"})
    True
    >>> fingerprint("stop", {"allocation_id": "al_1"}) == fingerprint("start", {"allocation_id": "al_1"})
    False
    """
    return hashlib.sha256(canonical_json({"operation": operation, "request": dict(request)}).encode()).hexdigest()


def _is_unique_violation(exc: BaseException) -> bool:
    from sqlalchemy.exc import IntegrityError

    return isinstance(exc, IntegrityError)


def _is_lock_timeout(exc: BaseException) -> bool:
    from sqlalchemy.exc import OperationalError

    if not isinstance(exc, OperationalError):
        return False
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate == "55P03" or "database is locked" in str(exc.orig)


def _replay(record: Any, fp: str, key: str, operation: str) -> Outcome:
    if record.fingerprint != fp:
        raise IdempotencyKeyReused(
            said("idempotency key {key!r} was already used for a different {operation} request; use a new key for "
                 "a different request", key=key, operation=operation)
        )
    body = record.response_body
    if "error" in body and record.response_status >= 400:
        raise replayed_error(record.response_status, body["error"]["code"], body["error"]["message"])
    return Outcome(status=record.response_status, body=body, replayed=True, resource_id=record.resource_id)


Action = Callable[[AbstractUnitOfWork], tuple[int, dict[str, Any], str | None]]


def run_idempotent(
    uow: AbstractUnitOfWork,
    *,
    account_id: str,
    operation: str,
    key: str,
    request: Mapping[str, Any],
    now: datetime,
    action: Action,
    ttl_s: int = DEFAULT_KEY_TTL_S,
) -> Outcome:
    """Run ``action`` once per (account, operation, key); replay its stored outcome afterwards.

    ``action(uow)`` runs inside the open transaction and returns ``(status, body, resource_id)``; the
    body must be JSON-ready (the exact dict the faces print). See the module docstring for the rules.
    """
    validate_idempotency_key(key)
    if ttl_s < MIN_KEY_TTL_S:
        raise ValueError(f"idempotency keys must be kept at least {MIN_KEY_TTL_S:,} s, not {ttl_s:,}")
    fp = fingerprint(operation, request)
    for _attempt in range(3):
        try:
            return _attempt_once(uow, account_id=account_id, operation=operation, key=key, fp=fp, now=now,
                                 action=action, ttl_s=ttl_s)
        except _TwinCommitted:
            continue  # a concurrent twin committed the same key first: read and replay its outcome
        except Exception as exc:
            if _is_lock_timeout(exc):
                raise IdempotencyInProgress(
                    said("a request with idempotency key {key!r} is still in progress; retry the same request "
                         "shortly", key=key)
                ) from exc
            raise
    raise IdempotencyInProgress(said("a request with idempotency key {key!r} is still in progress; retry shortly",
                                     key=key))


class _TwinCommitted(Exception):
    """The key row could not be inserted because a concurrent request with the same key committed it."""


def _attempt_once(
    uow: AbstractUnitOfWork, *, account_id: str, operation: str, key: str, fp: str, now: datetime,
    action: Action, ttl_s: int,
) -> Outcome:
    with uow:
        uow.set_lock_timeout(LOCK_TIMEOUT_S)  # read at call time (tests shorten it)
        existing = uow.idempotency.get(account_id, operation, key)
        if existing is not None and existing.expires_at <= now:
            uow.idempotency.delete(existing.id)  # kept long enough; a reused expired key is a new request
            existing = None
        if existing is not None:
            return _replay(existing, fp, key, operation)
        try:
            row_id = uow.idempotency.reserve(account_id=account_id, operation=operation, key=key, fingerprint=fp,
                                             now=now, expires_at=now + timedelta(seconds=ttl_s))
        except Exception as exc:
            if _is_unique_violation(exc):
                raise _TwinCommitted() from exc
            raise
        try:
            with uow.savepoint():
                status, body, resource_id = action(uow)
        except Conflict as error:  # a business outcome: store it, keep nothing of the action
            error_body = {"error": {"code": error.code, "message": error.message}}
            uow.idempotency.complete(row_id, status=error.http_status, body=error_body, resource_id=None)
            uow.commit()
            error.replayed = False  # type: ignore[attr-defined]
            raise
        body = json.loads(json.dumps(body, ensure_ascii=False, default=_default))  # exactly what a replay returns
        uow.idempotency.complete(row_id, status=status, body=body, resource_id=resource_id)
        uow.commit()
        return Outcome(status=status, body=body, replayed=False, resource_id=resource_id)


def purge_idempotency_keys(uow: AbstractUnitOfWork, *, now: datetime) -> int:
    """Delete idempotency keys whose retention ended at or before ``now``; return how many."""
    with uow:
        purged = uow.idempotency.purge(now)
        uow.commit()
    return purged
