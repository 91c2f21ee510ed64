"""Accounts: who owns quotes and allocations, identified by API keys of which only a hash is kept.

* :func:`create_account` returns ``(account_id, api_key)``: the account and its first key (named
  ``default``). A key is shown once and only its SHA-256 is stored (a 256-bit random key needs no slow
  password hash: it cannot be guessed, only stolen), with its first characters to tell keys apart.
* An account may hold several keys, each named, revocable and optionally expiring
  (:mod:`anchorgpu.accounts.keys`).
* :func:`authenticate` finds the key by its hash and compares in constant time (``hmac.compare_digest``);
  an unknown, revoked or expired key raises :class:`InvalidApiKey` (a ``NotFound``). It reads the key
  row on every call — no cache — so a revoke takes effect at once on every worker and process.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from anchorgpu.errors import InvalidInput, NotFound, said
from anchorgpu.store.api_keys import ApiKeyRecord
from anchorgpu.store.repository import AccountRecord
from anchorgpu.store.uow import AbstractUnitOfWork

__all__ = [
    "ACCOUNT_NAME_MAX",
    "API_KEY_PREFIX",
    "Account",
    "InvalidApiKey",
    "authenticate",
    "clean_name",
    "create_account",
    "new_name",
    "hash_api_key",
    "new_api_key",
]

API_KEY_PREFIX = "agpu_"
ACCOUNT_NAME_MAX = 200
SHOWN_PREFIX_CHARS = 13
"""Characters of a key kept in clear to tell keys apart: ``agpu_`` and 8 random characters (48 of 256 bits)."""


class InvalidApiKey(NotFound):
    """No account has this API key, or it was revoked, or it expired."""

    code = "invalid_api_key"


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    id: str
    name: str
    created_at: datetime
    key_id: str | None = None
    """The key this caller authenticated with (None when the account was read without a key)."""


def clean_name(value: object, *, what: str, max_chars: int) -> str:
    """A display name: runs of white space become one space; 1..``max_chars`` characters; no control
    characters (NUL, escape sequences) — the rule for account and key names, also applied to restored rows.

    >>> clean_name("  team   a ", what="account name", max_chars=200)
    'team a'
    """
    if not isinstance(value, str):
        raise InvalidInput(said("{what} must be text, not {name__}", what=what, name__=type(value).__name__))
    if any(ord(ch) < 32 or 0x7F <= ord(ch) < 0xA0 for ch in value if ch not in " \t\n\r"):
        raise InvalidInput(said("{what} contains a control character (such as NUL); use printable text", what=what))
    clean = " ".join(value.split())
    if not 1 <= len(clean) <= max_chars:
        raise InvalidInput(said("{what} must be 1-{max_chars} characters, not {clean}", what=what,
                                max_chars=max_chars, clean=len(clean)))
    return clean


_DIRECTION_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional-text controls: ``\u202e`` shows "exe.gnp" as "png.exe" in every listing that prints the name."""


def new_name(value: object, *, what: str, max_chars: int) -> str:
    """:func:`clean_name` for a name being given now (account sign-up, a new key), which must also read as what
    it is: no text-direction controls and at least one visible character (a name of zero-width spaces, a byte
    order mark or combining marks alone shows as nothing in ``keys list``). Rows restored from a backup keep
    :func:`clean_name`'s rule, so that what an earlier version accepted still restores.

    >>> new_name("ci runner 😀", what="key name", max_chars=100)
    'ci runner 😀'
    >>> new_name("\u200b", what="key name", max_chars=100)
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: key name has no visible character; use letters, digits or symbols
    """
    clean = clean_name(value, what=what, max_chars=max_chars)
    for ch in clean:
        if ch in _DIRECTION_CONTROLS:
            raise InvalidInput(said("{what} contains the text-direction control U+{ch:04X}, which makes it "
                                    "display as something else; use plain text", what=what, ch=ord(ch)))
    if not any(unicodedata.category(ch)[0] in "LNPS" for ch in clean):
        raise InvalidInput(said("{what} has no visible character; use letters, digits or symbols", what=what))
    return clean


def hash_api_key(api_key: str) -> str:
    """Hex SHA-256 of the key: the only form in which a key is stored.

    >>> len(hash_api_key("agpu_example"))
    64
    """
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


def new_api_key() -> tuple[str, str, str]:
    """A fresh key: ``(api_key, its hash, its shown prefix)``."""
    api_key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    return api_key, hash_api_key(api_key), api_key[:SHOWN_PREFIX_CHARS]


def create_account(uow: AbstractUnitOfWork, name: str, *, clock: Callable[[], datetime]) -> tuple[str, str]:
    """Create an account named ``name`` with one key named ``default``; return ``(account_id, api_key)``.
    The key is never shown again."""
    clean = new_name(name, what="account name", max_chars=ACCOUNT_NAME_MAX)
    token = secrets.token_hex(8)
    account_id = f"acct_{token}"
    api_key, key_hash, prefix = new_api_key()
    now = clock()
    with uow:
        uow.accounts.add(AccountRecord(id=account_id, name=clean, created_at=now))
        uow.api_keys.add(ApiKeyRecord(id=f"key_{secrets.token_hex(8)}", account_id=account_id, name="default",
                                      prefix=prefix, key_hash=key_hash, created_at=now, expires_at=None, revoked_at=None))
        uow.commit()
    return account_id, api_key


def authenticate(uow: AbstractUnitOfWork, api_key: str, *, now: datetime | None = None) -> Account:
    """The account of ``api_key`` at ``now`` (default: the real clock); :class:`InvalidApiKey` when no
    key matches, or it was revoked, or it expired at or before ``now``."""
    if not isinstance(api_key, str) or not api_key or len(api_key) > 500:
        raise InvalidApiKey(said("the API key is not valid"))
    at = now if now is not None else datetime.now(UTC)
    presented = hash_api_key(api_key)
    with uow:
        key = uow.api_keys.get_by_hash(presented)
        account = None if key is None else uow.accounts.get(key.account_id)
    if key is None or account is None or not hmac.compare_digest(key.key_hash, presented):
        raise InvalidApiKey(said("the API key is not valid"))
    if key.revoked_at is not None:
        raise InvalidApiKey(said("the API key {prefix}… ({key_name}) was revoked", prefix=key.prefix,
                                 key_name=key.name))
    if key.expires_at is not None and key.expires_at <= at:
        raise InvalidApiKey(said("the API key {prefix}… ({key_name}) expired at {isoformat}", prefix=key.prefix,
                                 key_name=key.name, isoformat=key.expires_at.isoformat()))
    return Account(id=account.id, name=account.name, created_at=account.created_at, key_id=key.id)
