"""API test fixtures: ``create_app(test_settings)`` on a per-test SQLite file, a fixed clock, accounts.

The databases come from the root conftest (``sqlite_url``: a migrated, seeded copy per test).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from app_helpers import Caller


@pytest.fixture
def settings(sqlite_url: str) -> Settings:
    """A fresh migrated + seeded SQLite file for this test (STORE's ``sqlite_url``), offline."""
    return Settings(database_url=sqlite_url, offline=True)


@pytest.fixture
def clock(fixed_clock: Any) -> Any:
    return fixed_clock


@pytest.fixture
def app(settings: Settings, clock: Any) -> Any:
    return create_app(settings, clock=clock, session_secret="test-secret")


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
    store = getattr(app.state, "store", None)
    if store is not None:
        store.dispose()


def make_caller(client: TestClient, app: Any, name: str) -> Caller:
    from anchorgpu.accounts import create_account

    client.get("/v1/healthz")  # builds the store the routes use
    store = app.state.store
    account_id, api_key = create_account(store.uow_factory(), name, clock=app.state.clock)
    return Caller(account_id=account_id, api_key=api_key)


@pytest.fixture
def alice(client: TestClient, app: Any) -> Caller:
    return make_caller(client, app, "alice")


@pytest.fixture
def bob(client: TestClient, app: Any) -> Caller:
    return make_caller(client, app, "bob")


def problem_of(response: Any) -> dict[str, Any]:
    """The problem+json body, after checking its media type and required members."""
    assert response.headers["content-type"].startswith("application/problem+json"), response.text
    body: dict[str, Any] = response.json()
    assert {"type", "title", "status", "detail", "code"} <= body.keys()
    assert body["status"] == response.status_code
    assert body["detail"] and "\n" not in body["detail"]
    return body


@pytest.fixture
def problem() -> Any:
    """``problem(response)`` checks a problem+json answer and returns its body."""
    return problem_of


@pytest.fixture
def quote_for(client: TestClient) -> Any:
    """``quote_for(caller, **body)`` creates a quote (1 month of one H100 VM by default) and returns its JSON."""

    def create(caller: Caller, **body: Any) -> dict[str, Any]:
        payload = {"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1month", "options": {}, **body}
        response = client.post("/v1/quotes", json=payload, headers=caller.auth)
        assert response.status_code == 201, response.text
        quote: dict[str, Any] = response.json()
        return quote

    return create
