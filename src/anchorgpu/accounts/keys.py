"""An account's API keys: create (shown once), list (by prefix only), revoke; optional expiry.

Shared by ``anchorgpu keys create|list|revoke`` and ``POST|GET /v1/keys``, ``DELETE /v1/keys/{id}``.

* A key is ``agpu_`` + 43 URL-safe characters (256 random bits). Only its SHA-256 and its first 13
  characters (``prefix``) are stored; listings show the prefix, never the key.
* ``expires_at`` is optional, must lie after now and at most :data:`MAX_KEY_LIFETIME` ahead; a key is
  refused from that instant on. Revoking is immediate and final (``revoked_at`` is set, the row stays
  so that the listing keeps the history).
* An account keeps at least one usable key: revoking the last one is refused (:class:`LastApiKey`);
  create the new key first, then revoke the old one (rotation). At most :data:`MAX_ACTIVE_KEYS` usable
  keys per account.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from anchorgpu.accounts import new_api_key, new_name
from anchorgpu.errors import Conflict, InvalidInput, NotFound, said
from anchorgpu.store.api_keys import ApiKeyRecord
from anchorgpu.store.uow import AbstractUnitOfWork

__all__ = [
    "KEY_NAME_MAX",
    "MAX_ACTIVE_KEYS",
    "MAX_KEY_LIFETIME",
    "ApiKeyInfo",
    "LastApiKey",
    "TooManyApiKeys",
    "UnknownApiKey",
    "create_key",
    "key_usable",
    "list_keys",
    "revoke_key",
]

KEY_NAME_MAX = 100
MAX_ACTIVE_KEYS = 50
MAX_KEY_LIFETIME = timedelta(days=5 * 366)
"""Furthest expiry accepted (about five years): dates stay bounded, far from year 9999."""

Clock = Callable[[], datetime]


class UnknownApiKey(NotFound):
    """The account has no key with this id (another account's key is not visible either)."""

    code = "unknown_api_key"


class LastApiKey(Conflict):
    """Revoking this key would leave the account without a usable key."""

    code = "last_api_key"


class TooManyApiKeys(Conflict):
    """The account already holds the most usable keys allowed."""

    code = "too_many_api_keys"


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKeyInfo:
    """A key as listed: never the key itself."""

    id: str
    name: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    status: str  # "active", "expired" or "revoked" at the time of listing
    current: bool = False  # the key this request authenticated with

    def to_json(self) -> dict[str, Any]:
        def iso(value: datetime | None) -> str | None:
            return None if value is None else value.astimezone(UTC).isoformat()

        return {"id": self.id, "name": self.name, "prefix": self.prefix, "created_at": iso(self.created_at),
                "expires_at": iso(self.expires_at), "revoked_at": iso(self.revoked_at), "status": self.status,
                "current": self.current}


def _status(key: ApiKeyRecord, now: datetime) -> str:
    if key.revoked_at is not None:
        return "revoked"
    if key.expires_at is not None and key.expires_at <= now:
        return "expired"
    return "active"


def _info(key: ApiKeyRecord, now: datetime, current_key_id: str | None) -> ApiKeyInfo:
    return ApiKeyInfo(id=key.id, name=key.name, prefix=key.prefix, created_at=key.created_at, expires_at=key.expires_at,
                      revoked_at=key.revoked_at, status=_status(key, now), current=key.id == current_key_id)


def check_expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    """``expires_at`` if it is an aware instant after ``now`` and within :data:`MAX_KEY_LIFETIME`."""
    if expires_at is None:
        return None
    if not isinstance(expires_at, datetime) or expires_at.tzinfo is None:
        raise InvalidInput(said("expires_at must be an instant with a time zone, e.g. 2027-01-31T00:00:00Z"))
    if expires_at <= now:
        raise InvalidInput(said("expires_at {isoformat} is not in the future", isoformat=expires_at.isoformat()))
    if expires_at - now > MAX_KEY_LIFETIME:
        raise InvalidInput(said("expires_at {isoformat} is more than {days:,} days ahead",
                                isoformat=expires_at.isoformat(), days=MAX_KEY_LIFETIME.days))
    return expires_at.astimezone(UTC)


def create_key(uow: AbstractUnitOfWork, *, account_id: str, name: str, expires_at: datetime | None = None,
               clock: Clock) -> tuple[ApiKeyInfo, str]:
    """A new key for ``account_id``: ``(its listing, the key)``. The key is never shown again."""
    clean = new_name(name, what="key name", max_chars=KEY_NAME_MAX)
    now = clock()
    expiry = check_expiry(expires_at, now)
    api_key, key_hash, prefix = new_api_key()
    record = ApiKeyRecord(id=f"key_{secrets.token_hex(8)}", account_id=account_id, name=clean, prefix=prefix,
                          key_hash=key_hash, created_at=now, expires_at=expiry, revoked_at=None)
    with uow:
        if uow.accounts.get(account_id) is None:
            raise UnknownApiKey(said("account {account_id} does not exist", account_id=account_id))
        active = [k for k in uow.api_keys.for_account(account_id) if _status(k, now) == "active"]
        if len(active) >= MAX_ACTIVE_KEYS:
            raise TooManyApiKeys(said("the account already has {active} usable keys (at most {MAX_ACTIVE_KEYS}); "
                                      "revoke one first", active=len(active), MAX_ACTIVE_KEYS=MAX_ACTIVE_KEYS))
        uow.api_keys.add(record)
        uow.commit()
    return _info(record, now, None), api_key


def list_keys(uow: AbstractUnitOfWork, *, account_id: str, clock: Clock, current_key_id: str | None = None) -> list[ApiKeyInfo]:
    """Every key of the account (revoked and expired ones too), oldest first, by prefix only."""
    now = clock()
    with uow:
        keys = uow.api_keys.for_account(account_id)
    return [_info(k, now, current_key_id) for k in keys]


def key_usable(uow: AbstractUnitOfWork, account_id: str, key_id: str, now: datetime) -> bool:
    """Whether the account's key ``key_id`` is neither revoked nor expired at ``now`` (page sessions check this)."""
    with uow:
        key = uow.api_keys.get(account_id, key_id)
    return key is not None and _status(key, now) == "active"


def revoke_key(uow: AbstractUnitOfWork, *, account_id: str, key_id: str, clock: Clock) -> ApiKeyInfo:
    """Revoke the account's key ``key_id`` now; revoking a revoked key changes nothing and answers the same."""
    if not isinstance(key_id, str) or not 1 <= len(key_id) <= 40 or not key_id.isascii() or not key_id.isprintable():
        raise UnknownApiKey(said("no API key {value!r} on this account", value=key_id[:40]))
    now = clock()
    with uow:
        keys = uow.api_keys.for_account(account_id, for_update=True)  # two revokes cannot both see the other active
        key = next((k for k in keys if k.id == key_id), None)
        if key is None:
            raise UnknownApiKey(said("no API key {key_id!r} on this account", key_id=key_id))
        if key.revoked_at is not None:
            return _info(key, now, None)
        others = [k for k in keys if k.id != key.id and _status(k, now) == "active"]
        if not others:
            raise LastApiKey(said("key {key_id} is the account's last usable key; create another first (anchorgpu "
                                  "keys create NAME), then revoke this one", key_id=key.id))
        uow.api_keys.revoke(key.id, now)
        uow.commit()
    return _info(ApiKeyRecord(**{**_asdict(key), "revoked_at": now}), now, None)


def _asdict(key: ApiKeyRecord) -> dict[str, Any]:
    return {f: getattr(key, f) for f in ApiKeyRecord.__dataclass_fields__}
