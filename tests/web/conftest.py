"""Page test fixtures: the app on a per-test SQLite file (STORE's ``sqlite_url``), a fixed clock, a browser-like client."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings


@pytest.fixture
def app(sqlite_url: str, fixed_clock: Any) -> Any:
    return create_app(Settings(database_url=sqlite_url, offline=True), clock=fixed_clock, session_secret="page-test-secret")


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as c:
        yield c
    store = getattr(app.state, "store", None)
    if store is not None:
        store.dispose()


def hidden(html: str, name: str) -> str:
    """The value of the first hidden input called ``name``."""
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden field {name!r}"
    return match.group(1)


@pytest.fixture
def field() -> Any:
    return hidden


@pytest.fixture
def signed_in(client: TestClient) -> str:
    """Sign up through the page (embedded default allows it); returns the API key shown once."""
    page = client.get("/signin").text
    response = client.post("/signup", data={"csrf_token": hidden(page, "csrf_token"), "name": "page user"})
    assert response.status_code == 201
    key = re.search(r'id="api-key">([^<]+)<', response.text)
    assert key
    return key.group(1)
