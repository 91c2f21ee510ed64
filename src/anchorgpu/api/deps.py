"""Dependencies of the API and the page, as ``Annotated`` aliases that tests override.

``create_app`` stores the settings and a clock on ``app.state``; the store (engine + unit-of-work
factory, built by :mod:`anchorgpu.bootstrap`) is built on first use and kept on ``app.state`` too, so
importing this module or creating an app touches no database. Tests replace any of these through
``app.dependency_overrides[get_clock] = lambda: fixed_clock`` and so on.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from anchorgpu.api.errors import AuthenticationRequired, IdempotencyKeyInvalid, IdempotencyKeyMissing
from anchorgpu.config import Settings
from anchorgpu.validation import is_valid_idempotency_key

__all__ = [
    "AccountDep",
    "ClockDep",
    "PresentedAccountDep",
    "IdempotencyKeyDep",
    "SettingsDep",
    "StoreDep",
    "UowFactoryDep",
    "get_clock",
    "get_current_account",
    "get_presented_account",
    "get_settings",
    "get_store",
    "get_uow_factory",
    "require_idempotency_key",
    "system_clock",
    "validate_idempotency_key",
]

Clock = Callable[[], datetime]
_store_lock = threading.Lock()


def system_clock() -> datetime:
    """The real clock, timezone-aware UTC (the only place the API reads the time)."""
    return datetime.now(UTC)


def get_settings(request: Request) -> Settings:
    settings = request.app.state.settings
    assert isinstance(settings, Settings)
    return settings


def get_clock(request: Request) -> Clock:
    clock: Clock = request.app.state.clock
    return clock


def get_store(request: Request) -> Any:
    """The wired store of this app (engine + UoW factory), built once on first use."""
    state = request.app.state
    store = getattr(state, "store", None)
    if store is None:
        with _store_lock:
            store = getattr(state, "store", None)
            if store is None:
                from anchorgpu import bootstrap

                store = bootstrap.bootstrap(state.settings, clock=state.clock)
                state.store = store
    return store


def get_uow_factory(store: Annotated[Any, Depends(get_store)]) -> Callable[[], Any]:
    factory: Callable[[], Any] = store.uow_factory
    return factory


SettingsDep = Annotated[Settings, Depends(get_settings)]
ClockDep = Annotated[Clock, Depends(get_clock)]
StoreDep = Annotated[Any, Depends(get_store)]
UowFactoryDep = Annotated[Callable[[], Any], Depends(get_uow_factory)]


def _bearer_key(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, key = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    return key.strip()


BEARER_SCHEME = HTTPBearer(
    auto_error=False, scheme_name="bearerAuth", bearerFormat="API key",
    description="`Authorization: Bearer <api key>`; keys come from `anchorgpu accounts create NAME` or the page's sign-in",
)
"""Declares the HTTP bearer security scheme in the OpenAPI document (so the docs' "Authorize" sends the key);
the header itself is still read by :func:`get_current_account`, with the same rules as before."""


def _lazy_uow_factory(request: Request) -> Callable[[], Any]:
    """The unit-of-work factory as :func:`get_uow_factory` gives it (tests' overrides of it or of the store
    included), built only when called for: a public route without a key never touches the store."""
    overrides = request.app.dependency_overrides
    if get_uow_factory in overrides:
        factory: Callable[[], Any] = overrides[get_uow_factory]()
        return factory
    store = overrides[get_store]() if get_store in overrides else get_store(request)
    return get_uow_factory(store)


def get_presented_account(request: Request, clock: ClockDep) -> Any | None:
    """The account of the request's ``Authorization`` header, or None when it has none. A header that is sent
    is checked on every ``/v1`` route, public ones included: one that is not ``Bearer <key>``, or a key that is
    unknown, revoked or expired, is 401 ``authentication_required`` (never ignored). Cached per request, so a
    route that needs the account reads the key row once."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    key = _bearer_key(header)
    if key is None:
        raise AuthenticationRequired("the Authorization header must be 'Bearer <api key>' (get a key with: anchorgpu "
                                     "accounts create NAME); send none to use a public route without one")
    from anchorgpu.accounts import authenticate

    try:  # reads the key row on every request (no cache): a revoke or an expiry holds at once on every worker
        return authenticate(_lazy_uow_factory(request)(), key, now=clock())
    except LookupError as exc:  # NotFound-like answers: unknown, revoked or expired key
        raise AuthenticationRequired(str(exc) or "the API key is not valid") from exc


PresentedAccountDep = Annotated[Any | None, Depends(get_presented_account)]


def get_current_account(
    account: PresentedAccountDep,
    _declared: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER_SCHEME)] = None,
) -> Any:
    """The account of the ``Authorization: Bearer`` key; 401 ``authentication_required`` otherwise."""
    if account is None:
        raise AuthenticationRequired("this endpoint needs 'Authorization: Bearer <api key>' (get one with: anchorgpu accounts create NAME)")
    return account


AccountDep = Annotated[Any, Depends(get_current_account)]


def validate_idempotency_key(value: str | None) -> str:
    """The key itself, or an error: required, 1–255 printable ASCII characters.

    >>> validate_idempotency_key("order-42")
    'order-42'
    """
    if value is None:
        raise IdempotencyKeyMissing("this request needs an 'Idempotency-Key' header (1-255 printable characters) so a retry cannot book twice")
    if not is_valid_idempotency_key(value):
        raise IdempotencyKeyInvalid("the 'Idempotency-Key' header must be 1-255 printable ASCII characters")
    return value


def require_idempotency_key(
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            description="Required. 1-255 printable characters, unique per intended action; a retry with the same key and body replays the first answer",
        ),
    ] = None,
) -> str:
    return validate_idempotency_key(idempotency_key)


IdempotencyKeyDep = Annotated[str, Depends(require_idempotency_key)]
