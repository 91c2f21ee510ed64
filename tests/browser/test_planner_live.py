"""Issue 14 item 1 in headless Chromium at 390 and 1280 px: the planner answers as you type (no submit), keeps the
address shareable, shows every weights format for the chosen GPU and, with no GPU, the GPUs it fits on."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def server(tmp_path: Path, serve_kit: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A server with ``anchorgpu serve``'s per-address limits ON (compute pages 1/s, 12/min): typing right after the
    page loaded meets a 429, which the page asks again after its Retry-After."""
    yield from serve_kit.own(tmp_path, monkeypatch, rate_limit=True)


@pytest.mark.parametrize("width", (390, 1280))
def test_the_planner_answers_as_you_type(browser: Any, open_page: Any, server: str, tmp_path: Path, width: int) -> None:
    shots = Path(os.environ.get("ANCHORGPU_SHOTS", str(tmp_path)))
    shots.mkdir(parents=True, exist_ok=True)
    context, page = open_page(browser, width, timeout_ms=20_000)
    try:
        page.goto(f"{server}/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=1&context=8192")
        assert page.inner_text("#verdict").startswith("Does not fit")
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.fill("#f-gpus", "4")  # typed, never submitted
        page.wait_for_function("() => document.querySelector('#verdict').textContent.startsWith('Fits')")
        assert re.search(r"gpus=4", page.url)  # the address follows the answer
        assert not any("/v1/" in url for url in requests)  # the page's own GET, no API key involved
        assert page.locator("#formats-table tbody tr").count() >= 10
        assert page.locator("#formats-table tr.current").count() == 1
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(shots / f"plan-live-formats-{width}.png"), full_page=False)
        page.select_option("#f-gpu", "")
        page.wait_for_selector("#fit-table")
        first = page.locator("#fit-table tbody tr").first.inner_text()
        assert re.search(r"\b(1|2|4|8|16)\b", first)
        page.locator("#gpus-that-fit").screenshot(path=str(shots / f"plan-live-gpus-{width}.png"))
    finally:
        context.close()
