"""Issue 14 in headless Chromium against a real ``anchorgpu serve``: the API docs offline with a working
"Authorize", recommendations that keep the plan's precision, the extension price confirmed before paying,
no speeds for a plan that does not fit. Screenshots go to the test's tmp_path (or $ANCHORGPU_SHOTS)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("ANCHORGPU_SHOTS", str(tmp_path)))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _offline(page: Any, server: str) -> list[str]:
    """Abort every request that leaves the test server; return the list of what was blocked."""
    blocked: list[str] = []

    def handle(route: Any) -> None:
        if route.request.url.startswith(server):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", handle)
    return blocked


def _sign_up(page: Any, server: str, name: str = "issue14 tester") -> str:
    page.goto(f"{server}/signin")
    page.fill("#name", name)
    page.click("text=Create account")
    key = page.inner_text("#api-key").strip()
    assert key.startswith("agpu_")
    return key


def test_api_docs_render_offline_and_authorize_sends_the_bearer_key(page: Any, server: str, tmp_path: Path) -> None:
    key = _sign_up(page, server)
    blocked = _offline(page, server)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{server}/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert not page.locator("#docs-fallback").is_visible()
    assert page.locator(".opblock-summary-path:has-text('/v1/allocations/{allocation_id}/extend')").count() == 1
    page.click("button.authorize")
    page.fill(".auth-container input[type=text], .auth-container input[type=password]", key)
    page.click(".auth-container button.authorize")
    page.click("button.btn-done, .auth-btn-wrapper button.close-modal")
    sent: list[str | None] = []
    page.on("request", lambda r: sent.append(r.headers.get("authorization")) if r.url.endswith("/v1/allocations") else None)
    op = page.locator("#operations-allocations-list_allocations_v1_allocations_get")
    op.locator(".opblock-summary").click()
    op.locator("button.try-out__btn").click()
    op.locator("button.execute").click()
    op.locator(".responses-table.live-responses-table").wait_for()
    assert sent and sent[-1] == f"Bearer {key}"
    assert op.locator(".live-responses-table tbody .response-col_status").first.inner_text().strip() == "200"
    page.screenshot(path=str(_shots(tmp_path) / "docs-1280.png"), full_page=False)
    assert blocked == [] and errors == []


def test_redoc_renders_offline(page: Any, server: str, tmp_path: Path) -> None:
    blocked = _offline(page, server)
    page.goto(f"{server}/redoc")
    page.wait_for_selector("h2:has-text('Extend an allocation')", state="attached", timeout=30_000)
    assert page.locator("text=Download OpenAPI specification").is_visible()
    page.screenshot(path=str(_shots(tmp_path) / "redoc-1280.png"), full_page=False)
    assert blocked == []


@pytest.mark.parametrize("width", [390, 1280])
def test_extend_shows_the_price_and_charges_only_after_confirming(browser: Any, open_page: Any, server: str, tmp_path: Path,
                                                                  width: int) -> None:
    context, page = open_page(browser, width)
    try:
        _sign_up(page, server, f"extender {width}")
        page.goto(f"{server}/quote?offering=h100-sxm-1x-vm")
        page.fill("#f-term", "1month")
        page.click("#quote-submit")
        page.click("#book-submit")
        page.wait_for_url(re.compile(r"/my/allocations/al_[0-9a-f]+$"))
        allocation_url = page.url
        amount = page.inner_text("#amount")
        page.select_option("#extend-form select[name=term]", "1w")
        page.click("#extend-submit")
        page.wait_for_url(re.compile(r"/extend\?term=1w$"))
        total = page.inner_text("#extend-total")
        assert total.startswith("$") and page.inner_text("#extend-confirm").startswith(f"Pay {total}")
        page.screenshot(path=str(_shots(tmp_path) / f"extend-confirm-{width}.png"), full_page=True)
        page.goto(allocation_url)
        assert page.inner_text("#amount") == amount  # seeing the price charged nothing
        page.go_back()
        page.click("#extend-confirm")
        page.wait_for_url(allocation_url)
        assert "Extended" in page.inner_text(".flash")
        assert page.inner_text("#amount") != amount
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_a_plan_that_does_not_fit_shows_no_speed_and_its_fix_is_one_tap(browser: Any, open_page: Any, server: str, tmp_path: Path,
                                                                        width: int) -> None:
    context, page = open_page(browser, width)
    try:
        page.goto(f"{server}/plan?model=llama-3.1-70b&gpu=h100-sxm&gpus=1&context=8192")
        assert page.inner_text("#verdict").startswith("Does not fit")
        assert page.locator("#performance").count() == 0
        assert "Not predicted" in page.inner_text("#performance-absent")
        page.screenshot(path=str(_shots(tmp_path) / f"plan-nofit-{width}.png"), full_page=True)
        page.click("#needed-change")
        assert page.inner_text("#verdict").startswith("Fits")
        assert page.locator("#performance").is_visible()
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_recommendations_keep_the_plans_precision_unless_the_box_is_ticked(browser: Any, open_page: Any, server: str, tmp_path: Path,
                                                                           width: int) -> None:
    context, page = open_page(browser, width)
    try:
        _recommendations_keep_the_precision(page, server, tmp_path, width)
    finally:
        context.close()


def _recommendations_keep_the_precision(page: Any, server: str, tmp_path: Path, width: int) -> None:
    page.goto(f"{server}/recommend?model=llama-3.1-70b&context=8192&top=5")
    weights = page.locator("#recommendations tbody tr td:nth-child(11)").all_inner_texts()
    assert weights and all(w.startswith("bf16 / kv bf16") for w in weights), weights
    page.check("#lower-precision")
    page.click("#recommend-form button[type=submit]")
    page.wait_for_selector("#lower-precision-note")
    assert page.locator(".lower-precision").count() >= 1
    assert "rerun your evaluations" in page.inner_text("#lower-precision-note")
    client_px, scroll_px = page.eval_on_selector(".table-wrap", "e => [e.clientWidth, e.scrollWidth]")
    if width >= 1280:
        assert scroll_px <= client_px, "the badge must not push the memory column off a laptop screen"
    else:  # a phone scrolls the table in its own frame; the page itself never widens
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        badge = page.locator(".lower-precision").first.bounding_box()
        assert badge is not None and badge["height"] < 40  # the badge stays one line, not a column of letters
    page.screenshot(path=str(_shots(tmp_path) / f"recommend-lower-{width}.png"), full_page=True)


@pytest.mark.parametrize("width", [390, 1280])
def test_the_quote_builder_takes_days_that_are_weeks_or_months_and_says_why_not_otherwise(browser: Any, open_page: Any, server: str,
                                                                                         tmp_path: Path, width: int) -> None:
    """Item 8: "7 days" is a week and "30 days" a month, as the catalog defines them; "10 days" gets its reason."""
    context, page = open_page(browser, width)
    try:
        _sign_up(page, server, f"days {width}")
        page.goto(f"{server}/quote?offering=h100-sxm-1x-vm")
        page.fill("#f-term", "7 days")
        page.wait_for_function("() => (document.querySelector('#quote-preview') || {}).innerText?.includes('1 week')")
        page.fill("#f-term", "30 days")
        page.wait_for_function("() => (document.querySelector('#quote-preview') || {}).innerText?.includes('1 month')")
        page.fill("#f-term", "10 days")
        page.wait_for_selector("#preview-error")
        assert "whole weeks (7 days) or whole months (30 days" in page.inner_text("#preview-error")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        page.screenshot(path=str(_shots(tmp_path) / f"builder-days-{width}.png"), full_page=True)
        page.fill("#f-term", "14 days")
        page.click("#quote-submit")
        page.wait_for_url(re.compile(r"/quotes/q_[0-9a-f]+$"))
        assert "for 2 weeks (336 h)" in " ".join(page.inner_text("main").split())
    finally:
        context.close()


@pytest.mark.parametrize("width", [390, 1280])
def test_the_language_switch_turns_the_planner_russian_and_stays(browser: Any, open_page: Any, server: str, tmp_path: Path,
                                                                 width: int) -> None:
    context, page = open_page(browser, width)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    try:
        page.goto(f"{server}/plan?model=llama-3.1-8b&gpu=l4")
        page.click("#language-switch a[hreflang=ru]")
        assert page.inner_text("h1") == "Поместится ли?"
        assert page.inner_text("#verdict").startswith("Помещается")
        page.screenshot(path=str(_shots(tmp_path) / f"plan-ru-{width}.png"), full_page=False)
        page.click("#main-nav a[href='/catalog']")
        assert page.get_attribute("html", "lang") == "ru"
        header_px, viewport_px = page.eval_on_selector("header.top", "e => [e.scrollWidth, window.innerWidth]")
        assert header_px <= viewport_px  # the switch does not push the header off a phone screen
    finally:
        context.close()
    assert errors == []
