"""Reliability fixtures: the real app in-process (``create_app``) on a per-test database, and accounts.

Databases come from the root conftest (``sqlite_url``, ``postgres_url``, ``db_url`` for both engines).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from app_helpers import ServedApp

App = ServedApp  # the name this folder's tests import


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
