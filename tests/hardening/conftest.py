"""Hardening fixtures (issue 13): the real app in-process on SQLite and on PostgreSQL, and accounts on it.

Databases come from the root conftest (``db_url`` runs a test once per engine; ``sqlite_url`` one engine).
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
class Served:
    """The app, a client that answers 500s instead of raising them, and helpers to act on it."""

    app: Any
    client: TestClient

    def caller(self, name: str) -> Caller:
        from anchorgpu.accounts import create_account

        account_id, api_key = create_account(self.app.state.store.uow_factory(), name, clock=self.app.state.clock)
        return Caller(account_id, api_key)

    def quote(self, caller: Caller, **body: Any) -> dict[str, Any]:
        payload = {"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1month", "options": {}, **body}
        response = self.client.post("/v1/quotes", json=payload, headers=caller.auth)
        assert response.status_code == 201, response.text
        quote: dict[str, Any] = response.json()
        return quote

    def book(self, caller: Caller, key: str) -> dict[str, Any]:
        response = self.client.post("/v1/allocations", json={"quote_id": self.quote(caller)["id"]}, headers=caller.idem(key))
        assert response.status_code == 201, response.text
        allocation: dict[str, Any] = response.json()
        return allocation


def serve(url: str, clock: Any, **settings: Any) -> Iterator[Served]:
    app = create_app(Settings(database_url=url, offline=True, **settings), clock=clock, session_secret="hardening")
    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/v1/healthz").status_code == 200  # builds the store
        yield Served(app, client)
    app.state.store.dispose()


@pytest.fixture
def served(db_url: str, fixed_clock: Any) -> Iterator[Served]:
    """The app on SQLite and on PostgreSQL (the test runs once per engine)."""
    yield from serve(db_url, fixed_clock)


@pytest.fixture
def sqlite_served(sqlite_url: str, fixed_clock: Any) -> Iterator[Served]:
    yield from serve(sqlite_url, fixed_clock)


def problem_of(response: Any) -> dict[str, Any]:
    """The problem+json body, after checking its media type and that its detail is one line."""
    assert response.headers["content-type"].startswith("application/problem+json"), response.text[:300]
    body: dict[str, Any] = response.json()
    assert body["status"] == response.status_code and body["code"]
    assert body["detail"] and "\n" not in body["detail"]
    return body
