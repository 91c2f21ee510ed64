"""Reliability fixtures: the real app in-process (``create_app``) on a per-test database, and accounts.

Databases come from the root conftest (``sqlite_url``, ``postgres_url``, ``db_url`` for both engines).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings


@dataclass(frozen=True)
class Caller:
    account_id: str
    api_key: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def idem(self, key: str) -> dict[str, str]:
        return {**self.auth, "Idempotency-Key": key}


@dataclass
class App:
    """The app, a client that never raises server exceptions (so a 500 is seen as a 500), and its store."""

    app: Any
    client: TestClient

    @property
    def store(self) -> Any:
        return self.app.state.store

    def caller(self, name: str) -> Caller:
        from anchorgpu.accounts import create_account

        account_id, api_key = create_account(self.store.uow_factory(), name, clock=self.app.state.clock)
        return Caller(account_id, api_key)

    def quote(self, caller: Caller, **body: Any) -> dict[str, Any]:
        payload = {"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1month", "options": {}, **body}
        response = self.client.post("/v1/quotes", json=payload, headers=caller.auth)
        assert response.status_code == 201, response.text
        quote: dict[str, Any] = response.json()
        return quote


def _app_on(url: str, clock: Any) -> Iterator[App]:
    app = create_app(Settings(database_url=url, offline=True), clock=clock, session_secret="reliability-secret")
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/v1/healthz").status_code == 200  # builds the store
        yield App(app, client)
    app.state.store.dispose()


@pytest.fixture
def sqlite_app(sqlite_url: str, fixed_clock: Any) -> Iterator[App]:
    yield from _app_on(sqlite_url, fixed_clock)


@pytest.fixture
def any_app(db_url: str, fixed_clock: Any) -> Iterator[App]:
    """The app on SQLite and on PostgreSQL (the test runs once per engine)."""
    yield from _app_on(db_url, fixed_clock)


@pytest.fixture
def postgres_app(postgres_url: str, fixed_clock: Any) -> Iterator[App]:
    yield from _app_on(postgres_url, fixed_clock)
