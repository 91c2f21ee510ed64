"""In Chromium: search "fsdp" on the glossary page, open the entry, follow its "try it" link into the planner.

Issue 7's done-when, driven through a real browser against the app served by uvicorn on a free port.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser
CHROMIUM = "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import uvicorn

    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    db: Path = tmp_path_factory.mktemp("glossary-browser") / "anchorgpu.db"
    app = create_app(Settings(database_url=f"sqlite:///{db}", offline=True), session_secret="glossary-browser-test")
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def page(base_url: str) -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium is missing at {CHROMIUM}: install it with 'sudo apt-get install -y chromium' (./dev test does this)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(20_000)
        try:
            yield page
        finally:
            browser.close()


def test_a_newcomer_searches_fsdp_opens_the_entry_and_lands_in_the_planner_with_the_preset(base_url: str, page: Any) -> None:
    page.goto(f"{base_url}/glossary")
    page.fill("input[name=q]", "fsdp")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("#glossary-results")
    page.click("#glossary-results li:first-child a")
    page.wait_for_url("**/glossary/fsdp**")
    assert "Fully Sharded Data Parallel" in page.inner_text("#entry-term")
    assert "Шардированный параллелизм по данным" in page.inner_text("#text-ru")
    links = page.locator("#try-it a.button")
    assert links.count() == 2  # ZeRO 0 and ZeRO 3, side by side
    links.nth(1).click()
    page.wait_for_url("**/plan?model=llama-3.1-8b*zero=3*")
    verdict = page.inner_text("#verdict")
    assert verdict.startswith("Fits")  # sharded over 8 H100s the 8B training fits; at ZeRO 0 it does not
    page.go_back()
    page.locator("#try-it a.button").nth(0).click()
    page.wait_for_url("**/plan?model=llama-3.1-8b*zero=0*")
    assert page.inner_text("#verdict").startswith("Does not fit")


def test_the_language_switch_shows_the_russian_page_and_a_russian_query_finds_the_kv_cache(base_url: str, page: Any) -> None:
    page.goto(f"{base_url}/glossary")
    page.click("#lang-switch")
    page.wait_for_url("**lang=ru**")
    page.fill("input[name=q]", "кэш KV")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("#glossary-results")
    assert page.inner_text("#glossary-results li:first-child a").startswith("KV-кэш")
    page.click("#glossary-results li:first-child a")
    assert page.locator("html").get_attribute("lang") == "ru"
    assert "Попробовать" in page.inner_text("#try-it")


@pytest.mark.parametrize("width", [390, 1280])
def test_the_russian_search_box_and_an_entry_fit_the_screen(base_url: str, page: Any, width: int, tmp_path: Path) -> None:
    """Issue 14: the RU glossary search box overflowed a 390 px phone screen. Screenshots go to the test's tmp dir."""
    page.set_viewport_size({"width": width, "height": 900})
    try:
        page.goto(f"{base_url}/glossary?lang=ru&q=голое+железо")
        box = page.locator("#glossary-q").bounding_box()
        button = page.locator("form[role=search] button").bounding_box()
        assert box is not None and button is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= width and button["x"] + button["width"] <= width
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.inner_text("#glossary-results li:first-child a").startswith(page.inner_text("#glossary-results li:first-child a strong"))
        page.screenshot(path=str(tmp_path / f"glossary-ru-{width}.png"), full_page=False)
        page.goto(f"{base_url}/glossary/mig?lang=ru")
        caveat = page.locator("#definition-caveat")
        assert caveat.is_visible() and "не обещает" in caveat.inner_text()
        page.screenshot(path=str(tmp_path / f"glossary-mig-ru-{width}.png"), full_page=True)
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
