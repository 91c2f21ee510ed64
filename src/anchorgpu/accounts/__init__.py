"""Accounts: who owns quotes and allocations, identified by an API key of which only a hash is kept.

* :func:`create_account` returns ``(account_id, api_key)``; the key is shown once and only its SHA-256
  is stored (a 256-bit random key needs no slow password hash: it cannot be guessed, only stolen).
* :func:`authenticate` finds the account by the key's hash and compares in constant time
  (``hmac.compare_digest``); an unknown key raises :class:`InvalidApiKey` (a ``NotFound``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from anchorgpu.errors import InvalidInput, NotFound
from anchorgpu.store.repository import AccountRecord
from anchorgpu.store.uow import AbstractUnitOfWork

__all__ = ["API_KEY_PREFIX", "Account", "InvalidApiKey", "authenticate", "create_account", "hash_api_key"]

API_KEY_PREFIX = "agpu_"


class InvalidApiKey(NotFound):
    """No account has this API key."""

    code = "invalid_api_key"


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    id: str
    name: str
    created_at: datetime


def hash_api_key(api_key: str) -> str:
    """Hex SHA-256 of the key: the only form in which a key is stored.

    >>> len(hash_api_key("agpu_example"))
    64
    """
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


def create_account(uow: AbstractUnitOfWork, name: str, *, clock: Callable[[], datetime]) -> tuple[str, str]:
    """Create an account named ``name``; return ``(account_id, api_key)``. The key is never shown again."""
    clean = " ".join(str(name).split())
    if not 1 <= len(clean) <= 200:
        raise InvalidInput(f"account name {name!r}: must be 1-200 characters")
    account_id = f"acct_{secrets.token_hex(8)}"
    api_key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    with uow:
        uow.accounts.add(AccountRecord(id=account_id, name=clean, api_key_hash=hash_api_key(api_key), created_at=clock()))
        uow.commit()
    return account_id, api_key


def authenticate(uow: AbstractUnitOfWork, api_key: str) -> Account:
    """The account of ``api_key``; :class:`InvalidApiKey` when none has it."""
    if not isinstance(api_key, str) or not api_key or len(api_key) > 500:
        raise InvalidApiKey("the API key is not valid")
    presented = hash_api_key(api_key)
    with uow:
        record = uow.accounts.get_by_key_hash(presented)
    if record is None or not hmac.compare_digest(record.api_key_hash, presented):
        raise InvalidApiKey("the API key is not valid")
    return Account(id=record.id, name=record.name, created_at=record.created_at)
