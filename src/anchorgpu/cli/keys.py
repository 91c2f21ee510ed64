"""``anchorgpu keys create|list|revoke``: the API keys of the account the CLI acts as.

    anchorgpu keys create NAME [--expires-in 30d | --expires-at 2027-01-31T00:00:00Z] [--json]
    anchorgpu keys list [--json]
    anchorgpu keys revoke KEY_ID [--json]

The account is the one of ``--api-key`` / ``ANCHORGPU_API_KEY``, or the local CLI account. The same
service as ``POST|GET /v1/keys`` and ``DELETE /v1/keys/{id}`` (:mod:`anchorgpu.accounts.keys`).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.cli.commerce import ApiKeyOpt, JsonOpt, _local_account, _state_file, _store
from anchorgpu.errors import Conflict, InvalidInput

if TYPE_CHECKING:
    from anchorgpu.accounts import Account
    from anchorgpu.bootstrap import Store

keys_app = typer.Typer(help="API keys of your account: create, list (by prefix), revoke.", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

_DURATION = re.compile(r"([0-9]{1,5})(h|d|w)")
_UNIT_HOURS = {"h": 1, "d": 24, "w": 168}


def parse_expiry(expires_in: str | None, expires_at: str | None, now: datetime) -> datetime | None:
    """The expiry instant from ``--expires-in 30d|12h|2w`` or ``--expires-at ISO`` (not both).

    >>> from datetime import UTC
    >>> parse_expiry("2d", None, datetime(2026, 1, 1, tzinfo=UTC)).isoformat()
    '2026-01-03T00:00:00+00:00'
    """
    if expires_in is not None and expires_at is not None:
        raise InvalidInput("give --expires-in or --expires-at, not both")
    if expires_in is not None:
        match = _DURATION.fullmatch(expires_in.strip())
        if match is None:
            raise InvalidInput(f"--expires-in {expires_in!r}: expected a whole number of hours, days or weeks, e.g. 12h, 30d, 2w")
        return (now + timedelta(hours=int(match.group(1)) * _UNIT_HOURS[match.group(2)])).replace(microsecond=0)
    if expires_at is not None:
        from anchorgpu.validation import iso_instant

        return iso_instant(expires_at, flag="--expires-at")  # the API's rule (POST /v1/keys expires_at)
    return None


def _caller(store: Store, api_key: str | None) -> Account:
    from anchorgpu.accounts import authenticate

    if not api_key:
        _local_account(store)  # created on first use
        api_key = str(_local_entry(store).get("api_key", ""))
    return authenticate(store.uow_factory(), api_key, now=store.clock())


def _local_entry(store: Store) -> dict[str, Any]:
    try:
        entry = json.loads(_state_file().read_text(encoding="utf-8")).get(store.settings.database_url, {})
    except (OSError, ValueError):
        return {}
    return entry if isinstance(entry, dict) else {}


def _is_key(store: Store, api_key: object, key_id: str) -> bool:
    """Whether ``api_key`` (the local CLI account's stored key) is the key ``key_id``."""
    from anchorgpu.accounts import hash_api_key

    if not isinstance(api_key, str):
        return False
    with store.uow_factory() as uow:
        key = uow.api_keys.get_by_hash(hash_api_key(api_key))
    return key is not None and key.id == key_id


def _remember(store: Store, account_id: str, api_key: str) -> None:
    import os

    path = _state_file()
    known: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    known[store.settings.database_url] = {"account_id": account_id, "api_key": api_key}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(known, indent=2), encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def _show(info: dict[str, Any]) -> str:
    expiry = f"expires {info['expires_at']}" if info["expires_at"] else "never expires"
    mark = " (this key)" if info.get("current") else ""
    return f"{info['id']}  {info['prefix']}…  {info['name']!r}  {info['status']}{mark}  {expiry}"


@keys_app.command("create")
def create_command(
    name: Annotated[str, typer.Argument(help="A name to tell the key apart, e.g. 'ci runner'.")],
    expires_in: Annotated[str | None, typer.Option("--expires-in", help="Refuse the key after 12h, 30d, 2w …")] = None,
    expires_at: Annotated[str | None, typer.Option("--expires-at", help="Refuse the key from this instant (ISO 8601 with zone).")] = None,
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create a key for your account and print it ONCE (only its hash and prefix are stored)."""
    from anchorgpu.accounts.keys import create_key

    store = _store()
    account = _caller(store, api_key)
    info, secret = create_key(store.uow_factory(), account_id=account.id, name=name,
                              expires_at=parse_expiry(expires_in, expires_at, store.clock()), clock=store.clock)
    if as_json:
        emit_json({**info.to_json(), "api_key": secret})
        return
    console().print(f"{_show(info.to_json())}\napi key (shown once, keep it): {secret}", highlight=False, soft_wrap=True)


@keys_app.command("list")
def list_command(api_key: ApiKeyOpt = None, as_json: JsonOpt = False) -> None:
    """Your keys by prefix, with their status (active, expired, revoked)."""
    from anchorgpu.accounts.keys import list_keys

    store = _store()
    account = _caller(store, api_key)
    rows = [k.to_json() for k in list_keys(store.uow_factory(), account_id=account.id, clock=store.clock, current_key_id=account.key_id)]
    if as_json:
        emit_json({"data": rows, "count": len(rows)})
        return
    for row in rows:
        console().print(_show(row), highlight=False, soft_wrap=True)


@keys_app.command("revoke")
def revoke_command(
    key_id: Annotated[str, typer.Argument(help="Key id from 'anchorgpu keys list'.")],
    api_key: ApiKeyOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke one of your keys now (final); the last usable key cannot be revoked."""
    from anchorgpu.accounts.keys import revoke_key

    store = _store()
    account = _caller(store, api_key)
    local = _local_entry(store)
    if not api_key and key_id == account.key_id:
        raise Conflict(f"{key_id} is the key this CLI acts with (kept in {_state_file()}); revoke it with "
                       "--api-key ANOTHER_KEY_OF_THE_ACCOUNT, which the CLI then keeps instead", code="last_api_key")
    info = revoke_key(store.uow_factory(), account_id=account.id, key_id=key_id, clock=store.clock).to_json()
    if api_key and local.get("account_id") == account.id and _is_key(store, local.get("api_key"), key_id):
        _remember(store, account.id, api_key)  # the local CLI account keeps working with the key given
    if as_json:
        emit_json(info)
        return
    console().print(f"revoked {_show(info)}", highlight=False, soft_wrap=True)
