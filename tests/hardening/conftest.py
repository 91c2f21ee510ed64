"""Hardening fixtures (issue 13): the real app in-process on SQLite and on PostgreSQL, and accounts on it.

Databases come from the root conftest (``db_url`` runs a test once per engine; ``sqlite_url`` one engine).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.app import create_app
from anchorgpu.config import Settings
from app_helpers import ServedApp
from cli_runner import run

Served = ServedApp  # the name this folder's tests import


@pytest.fixture
def local_db(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI on this test's SQLite database, offline, with its own config folder and no API key."""
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANCHORGPU_OFFLINE", "1")
    monkeypatch.delenv("ANCHORGPU_API_KEY", raising=False)


def cli_refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The CLI's refusal of ``argv``: exit 2 and one line on stderr, which it returns."""
    code, _, err = run(capsys, *argv)
    assert code == 2, f"{argv!r}: exit {code}: {err[:300]}"
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


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


def uvicorn_thread(app: Any, **options: Any) -> Iterator[tuple[str, int]]:
    """Run ``app`` under uvicorn (as ``anchorgpu serve`` configures it, ``options`` on top) on a free loopback port in
    a thread; yields ``(host, port)`` once it listens and stops it afterwards. For fixtures: ``yield from ...``."""
    import socket
    import threading
    import time

    import uvicorn

    from anchorgpu.api.server import uvicorn_options

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off",
                            **{**uvicorn_options(), **options})
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield "127.0.0.1", port
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    """The app in-process, offline and unthrottled, for the QA files that drive its API and pages (a test file's own
    ``client`` fixture, where it has one, takes precedence)."""
    with TestClient(create_app(Settings(offline=True, rate_limit=False))) as c:
        yield c


def page_error(page_text: str) -> str:
    """The text of a planner page's first error box (its markup dropped), asserting there is one."""
    found = re.search(r'class="[^"]*error[^"]*"[^>]*>(.*?)</', page_text, re.S)
    assert found, page_text[:400]
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()
