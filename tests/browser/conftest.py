"""Browser tests: Playwright driving Debian's Chromium against a real ``anchorgpu serve`` on a free port.

They run in CI, never skipped: ``./dev test`` installs Chromium when it is missing; if it is still
absent the fixture fails with the command to run.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_env(tmp_path: Path, database_url: str | None = None) -> dict[str, str]:
    """The environment of a test server: its own database (a fresh SQLite file by default), offline."""
    env = {**os.environ, "ANCHORGPU_DATABASE_URL": database_url or f"sqlite:///{tmp_path / 'anchorgpu.db'}",
           "ANCHORGPU_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("ANCHORGPU_SESSION_SECRET", None)
    env.pop("ANCHORGPU_API_KEY", None)
    # a journey loads several plan/recommend pages a second, which serve's per-address limits refuse (429);
    # a test that means to meet the limits sets ANCHORGPU_RATE_LIMIT=1 itself
    env.setdefault("ANCHORGPU_RATE_LIMIT", "0")
    return env


def anchorgpu_exe() -> str:
    return str(Path(sys.executable).with_name("anchorgpu"))


def start_server(tmp_path: Path, *, database_url: str | None = None, workers: int = 1) -> tuple[subprocess.Popen[bytes], str, Path]:
    """``anchorgpu serve`` on its own database and a free port; returns (process, base URL, log file)."""
    port = free_port()
    log = tmp_path / "serve.log"
    env = server_env(tmp_path, database_url)
    cmd = [anchorgpu_exe(), "serve", "--port", str(port), "--log-level", "warning", "--workers", str(workers)]
    process = subprocess.Popen(cmd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"anchorgpu serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{base}/v1/healthz", timeout=2) as response:
                if response.status == 200:
                    return process, base, log
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"anchorgpu serve did not answer /v1/healthz within 60 s:\n{log.read_text()}")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``anchorgpu serve`` per test module (one start instead of one per test), without the per-address limits:
    journeys load several plan and recommendation pages a second from one address, which the limits refuse. Each
    test signs up its own account, so the tests of a module share the database without seeing each other's keys,
    quotes or allocations. A test that needs the limits, or a database of its own, starts its own server
    (``serve_kit.own``)."""
    with pytest.MonkeyPatch.context() as patch:  # the server reads its environment when it starts
        patch.setenv("ANCHORGPU_RATE_LIMIT", "0")
        process, base, _log = start_server(tmp_path_factory.mktemp("serve"))
    try:
        yield base
    finally:
        stop_server(process)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: install it with 'sudo apt-get install -y chromium' (./dev test does this)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context, page = new_page(browser, 1280)
    try:
        yield page
    finally:
        context.close()


def new_page(browser: Any, width: int, *, timeout_ms: int = 15_000, **context_options: Any) -> tuple[Any, Any]:
    """A browser context ``width`` px wide (900 high) and its page with a default timeout; close the context after."""
    context = browser.new_context(viewport={"width": width, "height": 900}, **context_options)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    return context, page


def fill_planner(page: Any, server: str) -> None:
    """The planner page with the journeys' workload typed in: Llama-3.1-70B on 4 H100 SXM, 8,192 tokens, 32 users."""
    page.goto(f"{server}/plan")
    page.fill("#f-model", "llama-3.1-70b")
    page.select_option("#f-gpu", "h100-sxm")
    page.fill("#f-gpus", "4")
    page.fill("#f-context", "8192")
    page.fill("#f-concurrency", "32")


@pytest.fixture
def planner_form() -> Any:
    """:func:`fill_planner` for the journeys (``planner_form(page, server)``)."""
    return fill_planner


@pytest.fixture
def open_page() -> Any:
    """:func:`new_page` for tests that size their own pages (``context, page = open_page(browser, width)``)."""
    return new_page


def own_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, rate_limit: bool) -> Iterator[str]:
    """A server of the test's own (its base URL), with or without ``anchorgpu serve``'s per-address limits
    (``ANCHORGPU_RATE_LIMIT``), stopped afterwards. For use in a fixture: ``yield from own_server(...)``."""
    monkeypatch.setenv("ANCHORGPU_RATE_LIMIT", "1" if rate_limit else "0")
    process, base, _log = start_server(tmp_path)
    try:
        yield base
    finally:
        stop_server(process)


@pytest.fixture(scope="session")
def serve_kit() -> Any:
    """The helpers above for tests that start their own servers (``start``, ``stop``, ``env``, ``exe``, ``own``)."""
    from types import SimpleNamespace

    return SimpleNamespace(start=start_server, stop=stop_server, env=server_env, exe=anchorgpu_exe, own=own_server)
