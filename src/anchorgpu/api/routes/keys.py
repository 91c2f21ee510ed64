"""``/v1/keys``: the caller's API keys — create (the key is answered once), list by prefix, revoke.

Any usable key of an account manages that account's keys. A revoked or expired key answers 401 on the
very next request, on every worker: authentication reads the key row on each request (no cache).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, StrictStr

from anchorgpu.accounts import keys as key_service
from anchorgpu.api.deps import AccountDep, ClockDep, UowFactoryDep
from anchorgpu.api.schemas import problems

router = APIRouter(prefix="/keys", tags=["keys"])

KeyId = Path(max_length=40, description="Key id, e.g. 'key_3f2a…' (from GET /v1/keys)")


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=key_service.KEY_NAME_MAX, description="A name to tell the key apart, e.g. 'ci runner'")
    expires_at: StrictStr | None = Field(
        default=None, max_length=40, json_schema_extra={"format": "date-time"},
        description="Instant (ISO 8601 with a time zone, e.g. 2027-01-31T00:00:00Z) from which the key is refused; "
                    f"null = never. At most {key_service.MAX_KEY_LIFETIME.days:,} days ahead. Read by the rule "
                    "`anchorgpu keys create --expires-at` uses: not a Unix timestamp")


class KeyOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(description="Key id, for DELETE /v1/keys/{id}")
    name: str = Field(description="The key's name")
    prefix: str = Field(description="First characters of the key, to recognize it (the key itself is never shown again)")
    created_at: str = Field(description="When it was created (ISO 8601 UTC)")
    expires_at: str | None = Field(description="From when it is refused (ISO 8601 UTC); null = never")
    revoked_at: str | None = Field(description="When it was revoked; null = not revoked")
    status: str = Field(description="'active', 'expired' or 'revoked' now")
    current: bool = Field(description="True for the key this request was made with")


class KeyCreated(KeyOut):
    api_key: str = Field(description="The key itself: shown in this answer only, keep it (only a hash is stored)")


class KeyList(BaseModel):
    data: list[KeyOut] = Field(description="Every key of the account, oldest first, revoked and expired ones included")
    count: int = Field(description="Number of keys in data")


@router.post("", status_code=201, response_model=KeyCreated, summary="Create an API key", responses=problems(401, 409, 422))
def create(body: KeyCreate, account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep) -> dict[str, Any]:
    """A new key for your account; `api_key` appears in this answer only."""
    from anchorgpu.validation import iso_instant

    expires_at = None if body.expires_at is None else iso_instant(body.expires_at, flag="expires_at")
    info, api_key = key_service.create_key(uow_factory(), account_id=account.id, name=body.name, expires_at=expires_at,
                                           clock=clock)
    return {**info.to_json(), "api_key": api_key}


@router.get("", response_model=KeyList, summary="List your API keys", responses=problems(401))
def list_keys(account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep) -> dict[str, Any]:
    """Your keys by prefix (never the keys themselves), with their status now."""
    rows = [k.to_json() for k in key_service.list_keys(uow_factory(), account_id=account.id, clock=clock, current_key_id=account.key_id)]
    return {"data": rows, "count": len(rows)}


@router.delete("/{key_id}", response_model=KeyOut, summary="Revoke an API key", responses=problems(401, 404, 409))
def revoke(account: AccountDep, uow_factory: UowFactoryDep, clock: ClockDep, key_id: str = KeyId) -> dict[str, Any]:
    """Revoke one of your keys now (final). The account's last usable key cannot be revoked (409 `last_api_key`)."""
    info = key_service.revoke_key(uow_factory(), account_id=account.id, key_id=key_id, clock=clock)
    return {**info.to_json(), "current": info.id == account.key_id}
