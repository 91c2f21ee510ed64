"""API test fixtures: ``create_app(test_settings)`` on a per-test SQLite file, a fixed clock, accounts.

A migrated and seeded database is built once per session and copied for each test (migrations take
longer than the tests themselves).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings

START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


class FixedClock:
    """A clock tests move by hand."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from anchorgpu.bootstrap import bootstrap

    path = tmp_path_factory.mktemp("template") / "anchorgpu.db"
    store = bootstrap(Settings(database_url=f"sqlite:///{path}"), clock=FixedClock())
    store.dispose()
    return path


@pytest.fixture
def settings(tmp_path: Path, template_db: Path) -> Settings:
    db = tmp_path / "anchorgpu.db"
    shutil.copy(template_db, db)
    return Settings(database_url=f"sqlite:///{db}", offline=True)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock()


@pytest.fixture
def app(settings: Settings, clock: FixedClock) -> Any:
    return create_app(settings, clock=clock, session_secret="test-secret")


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c
    store = getattr(app.state, "store", None)
    if store is not None:
        store.dispose()


@dataclass
class Caller:
    """An account and the headers that act as it."""

    account_id: str
    api_key: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def idem(self, key: str) -> dict[str, str]:
        return {**self.auth, "Idempotency-Key": key}


def make_caller(client: TestClient, app: Any, name: str) -> Caller:
    from anchorgpu.accounts import create_account
    from anchorgpu.api.deps import get_store

    client.get("/v1/healthz")  # builds the store
    store = app.state.store
    assert get_store  # the store the app built is the one the routes use
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
