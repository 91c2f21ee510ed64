"""Issue 13, web: session fixation and cross-account access through the pages (CSRF on every form post is
checked by tests/reliability/test_web_hardening.py; here: what a session may reach).

The page session is a signed cookie (anchorgpu.web.session). Signing in issues a NEW cookie with a new CSRF
token; the anonymous cookie an attacker may have planted before stays anonymous. A signed-in session reaches
only its own account's quotes and allocations: another account's ids are 404 on every page and action.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.web.session import COOKIE_NAME
from app_helpers import Caller
from hardening.conftest import Served


def _token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


def _browser(served: Served) -> TestClient:
    browser = TestClient(served.app, raise_server_exceptions=False, follow_redirects=False)
    return browser


def _sign_in(browser: TestClient, caller: Caller) -> None:
    response = browser.post("/signin", data={"csrf_token": _token(browser.get("/signin").text), "api_key": caller.api_key})
    assert response.status_code == 303, response.text[:300]


def test_signing_in_issues_a_new_session_and_the_planted_one_stays_anonymous(sqlite_served: Served) -> None:
    victim = _browser(sqlite_served)
    planted_page = victim.get("/signin")
    planted_cookie = victim.cookies[COOKIE_NAME]  # what an attacker would have fixed in the victim's browser
    planted_token = _token(planted_page.text)
    alice = sqlite_served.caller("alice")
    _sign_in(victim, alice)
    assert victim.cookies[COOKIE_NAME] != planted_cookie
    assert victim.get("/my/allocations").status_code == 200
    assert _token(victim.get("/my/allocations").text) != planted_token  # the CSRF token is renewed too

    attacker = _browser(sqlite_served)
    attacker.cookies.set(COOKIE_NAME, planted_cookie)
    response = attacker.get("/my/allocations")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")


def test_a_session_cookie_edited_to_name_another_account_is_ignored(sqlite_served: Served) -> None:
    alice, bob = sqlite_served.caller("alice"), sqlite_served.caller("bob")
    browser = _browser(sqlite_served)
    _sign_in(browser, bob)
    payload, _, signature = browser.cookies[COOKIE_NAME].partition(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    data["account_id"] = alice.account_id
    forged = base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")
    intruder = _browser(sqlite_served)
    intruder.cookies.set(COOKIE_NAME, f"{forged}.{signature}")
    response = intruder.get("/my/allocations")
    assert response.status_code == 303 and response.headers["location"].startswith("/signin")


def test_signing_out_ends_the_session_in_that_browser(sqlite_served: Served) -> None:
    browser = _browser(sqlite_served)
    _sign_in(browser, sqlite_served.caller("alice"))
    token = _token(browser.get("/my/allocations").text)
    assert browser.post("/signout", data={"csrf_token": token}).status_code == 303
    assert browser.get("/my/allocations").status_code == 303


@pytest.fixture
def alice_things(sqlite_served: Served) -> dict[str, Any]:
    alice = sqlite_served.caller("alice")
    allocation = sqlite_served.book(alice, "alice-1")
    spare = sqlite_served.quote(alice)
    return {"caller": alice, "allocation": allocation, "quote": spare}


def test_another_accounts_quotes_and_allocations_are_404_on_every_page(sqlite_served: Served, alice_things: dict[str, Any]) -> None:
    bob = _browser(sqlite_served)
    _sign_in(bob, sqlite_served.caller("bob"))
    allocation_id, quote_id = alice_things["allocation"]["id"], alice_things["quote"]["id"]
    for path in (f"/quotes/{quote_id}", f"/my/allocations/{allocation_id}", f"/quotes/{alice_things['allocation']['quote_id']}"):
        response = bob.get(path)
        assert response.status_code == 404, f"GET {path} as bob: {response.status_code}"
        assert "unknown" in response.text and alice_things["allocation"]["starts_at"][:10] not in response.text
    listing = bob.get("/my/allocations")
    assert listing.status_code == 200 and allocation_id not in listing.text


def test_another_accounts_allocation_cannot_be_acted_on_or_its_quote_bought_through_the_pages(
    sqlite_served: Served, alice_things: dict[str, Any]
) -> None:
    alice: Caller = alice_things["caller"]
    allocation_id, quote_id = alice_things["allocation"]["id"], alice_things["quote"]["id"]
    bob = _browser(sqlite_served)
    _sign_in(bob, sqlite_served.caller("bob"))
    token = _token(bob.get("/my/allocations").text)  # bob's own, valid CSRF token
    for action in ("stop", "terminate", "extend", "start"):
        response = bob.post(f"/my/allocations/{allocation_id}/{action}",
                            data={"csrf_token": token, "idempotency_key": f"bob-{action}", "term": "1w"})
        assert response.status_code in (303, 404), f"{action}: {response.status_code}"
        followed = bob.get(response.headers["location"]) if response.status_code == 303 else response
        assert followed.status_code in (303, 404)
    booked = bob.post(f"/quotes/{quote_id}/book", data={"csrf_token": token, "idempotency_key": "bob-book"})
    assert booked.status_code == 404, booked.status_code
    mine = sqlite_served.client.get(f"/v1/allocations/{allocation_id}", headers=alice.auth).json()
    assert mine["state"] == "active" and mine["ends_at"] == alice_things["allocation"]["ends_at"]
    assert [e["kind"] for e in mine["events"]] == [e["kind"] for e in alice_things["allocation"]["events"]]
    assert sqlite_served.client.get(f"/v1/quotes/{quote_id}", headers=alice.auth).json()["used"] is False


@pytest.mark.parametrize("name", ["bad\x00name", "line\nbreak", "x" * 101])
def test_signup_refuses_names_with_control_characters_or_too_long(sqlite_served: Served, name: str) -> None:
    browser = _browser(sqlite_served)
    response = browser.post("/signup", data={"csrf_token": _token(browser.get("/signin").text), "name": name})
    assert response.status_code == 422, response.status_code


def test_sign_in_next_path_stays_on_this_site_and_bounded(sqlite_served: Served) -> None:
    alice = sqlite_served.caller("alice")
    for target, expected in (("https://evil.example/", "/my/allocations"), ("//evil.example", "/my/allocations"),
                             ("/\x00evil", "/my/allocations"), ("/" + "a" * 3000, None)):
        browser = _browser(sqlite_served)
        response = browser.post("/signin", data={"csrf_token": _token(browser.get("/signin").text), "api_key": alice.api_key,
                                                 "next": target})
        if expected is None:
            assert response.status_code == 422
        else:
            assert response.status_code == 303 and response.headers["location"] == expected, (target, response.headers.get("location"))


@pytest.mark.parametrize("quantity", ["١", "３", "1e0", " "])
def test_the_quote_form_takes_ascii_digits_only(sqlite_served: Served, quantity: str) -> None:
    """The page's quote form reads numbers by the same rule as the API (Python's int() would read '١' as 1)."""
    browser = _browser(sqlite_served)
    _sign_in(browser, sqlite_served.caller("alice"))
    page = browser.get("/quote", params={"offering": "h100-sxm-1x-vm"})
    response = browser.post("/quote", data={"csrf_token": _token(page.text), "offering": "h100-sxm-1x-vm", "term": "1w",
                                            "quantity": quantity})
    assert response.status_code == 422, (quantity, response.status_code)


@pytest.mark.parametrize(("value", "refused"), [("8k", False), ("١k", True), ("١٢٨", True), ("１２８", True)])
def test_the_planner_page_reads_token_counts_as_the_cli_does(sqlite_served: Served, value: str, refused: bool) -> None:
    response = sqlite_served.client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100", "context": value})
    assert response.status_code == (422 if refused else 200), (value, response.status_code)


def test_the_pages_keep_their_cookie_session_while_the_api_checks_every_key_it_is_sent(sqlite_served: Served) -> None:
    """A key sent to the API is checked on every route, public ones too (401 when not valid); the pages read no
    Authorization header (their credential is the session cookie, ended at the next page when its key is revoked),
    and the API reads no cookie: a signed-in browser keeps its pages and the API's public routes."""
    alice = sqlite_served.caller("alice")
    browser = _browser(sqlite_served)
    _sign_in(browser, alice)
    stale = {"Authorization": "Bearer agpu_revoked-long-ago"}
    assert browser.get("/my/allocations", headers=stale).status_code == 200
    assert browser.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100"}, headers=stale).status_code == 200
    assert browser.get("/v1/gpus").status_code == 200  # the cookie is not a key: the public route stays public
    refused = browser.get("/v1/gpus", headers=stale)
    assert refused.status_code == 401 and refused.headers["www-authenticate"] == 'Bearer realm="anchorgpu"'
    assert browser.get("/my/allocations").status_code == 200  # the session is untouched by the API's 401
