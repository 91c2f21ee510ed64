"""The ``api_keys`` repository: an account's keys, found by the SHA-256 of the key (see :mod:`anchorgpu.accounts.keys`).

Like every repository it works inside its unit of work's session and never commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from anchorgpu.store.tables import ApiKeyRow

__all__ = ["ApiKeyRecord", "ApiKeyRepository"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKeyRecord:
    id: str
    account_id: str
    name: str
    prefix: str
    key_hash: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None


class ApiKeyRepository:
    def __init__(self, session: Session) -> None:
        self._session = session

    def add(self, key: ApiKeyRecord) -> None:
        self._session.add(ApiKeyRow(id=key.id, account_id=key.account_id, name=key.name, prefix=key.prefix,
                                    key_hash=key.key_hash, created_at=key.created_at, expires_at=key.expires_at,
                                    revoked_at=key.revoked_at))
        self._session.flush()

    def get_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        row = self._session.scalars(select(ApiKeyRow).where(ApiKeyRow.key_hash == key_hash)).one_or_none()
        return None if row is None else _key(row)

    def get(self, account_id: str, key_id: str, *, for_update: bool = False) -> ApiKeyRecord | None:
        """The account's key ``key_id``; another account's key is None."""
        query = select(ApiKeyRow).where(ApiKeyRow.id == key_id, ApiKeyRow.account_id == account_id)
        if for_update:
            query = query.with_for_update()
        row = self._session.scalars(query).one_or_none()
        return None if row is None else _key(row)

    def for_account(self, account_id: str, *, for_update: bool = False) -> list[ApiKeyRecord]:
        """The account's keys, oldest first; ``for_update`` locks them all (two revokes then serialize)."""
        query = select(ApiKeyRow).where(ApiKeyRow.account_id == account_id).order_by(ApiKeyRow.created_at, ApiKeyRow.id)
        if for_update:
            query = query.with_for_update()
        return [_key(r) for r in self._session.scalars(query)]

    def revoke(self, key_id: str, now: datetime) -> None:
        self._session.execute(update(ApiKeyRow).where(ApiKeyRow.id == key_id, ApiKeyRow.revoked_at.is_(None))
                              .values(revoked_at=now))


def _key(row: ApiKeyRow) -> ApiKeyRecord:
    return ApiKeyRecord(id=row.id, account_id=row.account_id, name=row.name, prefix=row.prefix, key_hash=row.key_hash,
                        created_at=row.created_at, expires_at=row.expires_at, revoked_at=row.revoked_at)
