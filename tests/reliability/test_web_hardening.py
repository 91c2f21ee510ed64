"""CSRF on every web form, security headers on every page, API keys checked by hash in constant time."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import pytest
from fastapi.routing import APIRoute
from sqlalchemy import func, select

from anchorgpu.store.tables import metadata

HEADERS = {
    "content-security-policy": "default-src 'self'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


def _counts(engine: Any) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in metadata.sorted_tables}


def _routes(app: Any) -> list[tuple[str, set[str]]]:
    """(path, methods) of every route, also those inside included routers (FastAPI >= 0.16x wraps them)."""
    out: list[tuple[str, set[str]]] = []
    for route in app.routes:
        if isinstance(route, APIRoute):
            out.append((route.path, set(route.methods)))
        elif hasattr(route, "effective_route_contexts"):
            out += [(ctx.path, set(ctx.methods or ())) for ctx in route.effective_route_contexts()]
    return out


def _page_routes(app: Any, method: str) -> list[str]:
    return sorted({path for path, methods in _routes(app) if method in methods
                   and not path.startswith(("/v1", "/static", "/openapi", "/docs", "/redoc"))})  # API docs: own CSP, tests/api/test_docs_offline.py


def _token(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "the page has no CSRF field"
    return match.group(1)


@pytest.fixture
def page_user(sqlite_app: Any) -> dict[str, Any]:
    """A signed-in page session with one quote and one allocation of its own."""
    client = sqlite_app.client
    client.follow_redirects = False
    page = client.get("/signin").text
    signup = client.post("/signup", data={"csrf_token": _token(page), "name": "page user"})
    assert signup.status_code == 201, signup.text[:300]
    key = re.search(r'id="api-key">([^<]+)<', signup.text)
    assert key
    caller = type("C", (), {"auth": {"Authorization": f"Bearer {key.group(1)}"}})
    quote = sqlite_app.quote(caller)
    spare = sqlite_app.quote(caller)
    allocation = client.post("/v1/allocations", json={"quote_id": quote["id"]},
                             headers={**caller.auth, "Idempotency-Key": "page-1"}).json()
    return {"quote_id": spare["id"], "allocation_id": allocation["id"], "action": "stop"}


def test_every_web_form_refuses_a_post_without_the_sessions_csrf_token(sqlite_app: Any, page_user: dict[str, Any]) -> None:
    client = sqlite_app.client
    posts = _page_routes(sqlite_app.app, "POST")
    assert {"/signin", "/signup", "/quote", "/quotes/{quote_id}/book"} <= set(posts)
    valid = _token(client.get("/my/allocations").text)
    before = _counts(sqlite_app.store.engine)
    for template in posts:
        path = template.format(**page_user)
        form = {"offering": "h100-sxm-1x-vm", "term": "1h", "quantity": "1", "name": "intruder",
                "api_key": "agpu_x", "idempotency_key": "csrf-test", "term_added": "1h"}
        for token in (None, "", "forged-token", valid[:-1] + ("A" if valid[-1] != "A" else "B")):
            data = form if token is None else {**form, "csrf_token": token}
            response = client.post(path, data=data)
            assert response.status_code in (400, 403), f"POST {path} with token {token!r}: {response.status_code}"
            assert "security token" in response.text
    assert _counts(sqlite_app.store.engine) == before


def test_every_page_and_api_answer_carries_the_security_headers(sqlite_app: Any, page_user: dict[str, Any]) -> None:
    client = sqlite_app.client
    class Fill(dict[str, str]):
        def __missing__(self, name: str) -> str:
            return "unknown-id"  # a 404 page must carry the headers too

    paths = [p.format_map(Fill(page_user)) for p in _page_routes(sqlite_app.app, "GET")]
    paths += ["/v1/healthz", "/v1/gpus", "/no/such/page", "/v1/no-such-route", "/static/app.css", "/openapi.json"]
    assert len(paths) > 10
    for path in paths:
        response = client.get(path)
        assert response.status_code < 500, f"GET {path}: {response.status_code}"
        for name, value in HEADERS.items():
            assert value in response.headers.get(name, ""), f"GET {path}: {name} is {response.headers.get(name)!r}"
        if response.headers.get("content-type", "").startswith("text/html"):
            assert "'unsafe-inline'" not in response.headers["content-security-policy"]
            assert "<script>" not in response.text  # no inline script: the policy would block it anyway


def test_the_session_cookie_is_http_only_and_same_site(sqlite_app: Any) -> None:
    response = sqlite_app.client.get("/signin")
    cookie = response.headers.get("set-cookie", "")
    assert cookie, "the sign-in page sets the session cookie"
    assert "httponly" in cookie.lower() and re.search(r"samesite=(lax|strict)", cookie.lower())


def test_api_keys_are_stored_only_as_a_hash_and_compared_in_constant_time(sqlite_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import anchorgpu.accounts as accounts
    from anchorgpu.store.api_keys import ApiKeyRepository

    alice = sqlite_app.caller("alice")
    key = alice.api_key
    # 1. only the hash is kept: the key appears in no column of any table
    with sqlite_app.store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(select(table)):
                assert key not in repr(tuple(row))
    # 2. the account is found by the key's SHA-256 (an index lookup, no comparison of secrets in SQL) and
    #    the hash is then compared with hmac.compare_digest (constant time)
    looked_up: list[str] = []
    compared: list[tuple[Any, Any]] = []
    original_lookup = ApiKeyRepository.get_by_hash
    real_compare = accounts.hmac.compare_digest

    def spy_lookup(self: Any, digest: str) -> Any:
        looked_up.append(digest)
        return original_lookup(self, digest)

    def spy_compare(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(ApiKeyRepository, "get_by_hash", spy_lookup)
    monkeypatch.setattr(accounts.hmac, "compare_digest", spy_compare)
    assert sqlite_app.client.get("/v1/allocations", headers=alice.auth).status_code == 200
    digest = hashlib.sha256(key.encode()).hexdigest()
    assert looked_up == [digest]
    assert compared == [(digest, digest)]
    # 3. a wrong key never reaches a comparison with a stored hash it could learn from
    looked_up.clear(), compared.clear()
    assert sqlite_app.client.get("/v1/allocations", headers={"Authorization": f"Bearer {key[:-1]}x"}).status_code == 401
    assert looked_up == [hashlib.sha256(f"{key[:-1]}x".encode()).hexdigest()] and compared == []
