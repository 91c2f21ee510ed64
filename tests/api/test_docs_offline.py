"""API docs without a network (issue 14, item 4): local Swagger UI and Redoc assets from the pinned package,
HTTP bearer security declared, idempotency headers and every problem type documented, 401 with WWW-Authenticate."""

from __future__ import annotations

import re
from importlib import metadata
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.docs import ASSETS_URL, problem_types


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(method, path, op) for path, item in document["paths"].items() for method, op in item.items()]


def test_the_docs_pages_load_only_assets_served_here(client: TestClient) -> None:
    for page in ("/docs", "/redoc"):
        html = client.get(page).text
        urls = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert urls and all(u.startswith("/") and not u.startswith("//") for u in urls), urls
        for url in urls:
            if url.startswith((ASSETS_URL, "/static/")):
                response = client.get(url)
                assert response.status_code == 200 and len(response.content) > 100, url
        assert "<script>" not in html  # no inline script: the page CSP stays strict
        csp = client.get(page).headers["content-security-policy"]
        assert "script-src 'self';" in csp and "http" not in csp
    bundle = client.get(f"{ASSETS_URL}/swagger-ui-bundle.js").text
    assert "SwaggerUIBundle" in bundle  # Swagger UI 5 from the installed package, not a CDN


def test_the_assets_come_from_a_dependency_pinned_in_pyproject() -> None:
    from pathlib import Path

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    version = metadata.version("fastapi-offline")
    assert f'"fastapi-offline=={version}"' in pyproject


def test_authenticated_operations_declare_http_bearer_and_no_authorization_parameter(document: dict[str, Any]) -> None:
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert scheme["type"] == "http" and scheme["scheme"] == "bearer"
    secured = []
    for method, path, op in _operations(document):
        names = {p["name"].lower() for p in op.get("parameters", []) if p["in"] == "header"}
        assert "authorization" not in names, f"{method} {path} still declares Authorization as a parameter"
        assert "WWW-Authenticate" in op["responses"]["401"]["headers"], f"{method} {path}"  # a key sent is checked
        if op.get("security") == [{"bearerAuth": []}]:
            secured.append(path)
        else:  # public: no key, or a valid one
            assert op.get("security") == [{}, {"bearerAuth": []}], f"{method} {path} is public"
    assert "/v1/allocations/{allocation_id}/extend" in secured and "/v1/quotes" in secured
    assert "/v1/plan" not in secured


def test_every_idempotent_operation_documents_both_headers(document: dict[str, Any]) -> None:
    idempotent = [(m, p, op) for m, p, op in _operations(document)
                  if any(x["name"] == "Idempotency-Key" for x in op.get("parameters", []))]
    assert {p for _, p, _ in idempotent} >= {"/v1/allocations", "/v1/allocations/{allocation_id}/extend",
                                             "/v1/allocations/{allocation_id}/stop"}
    for method, path, op in idempotent:
        success = [r for s, r in op["responses"].items() if s.startswith("2")]
        assert success and all("Idempotent-Replayed" in r.get("headers", {}) for r in success), f"{method} {path}"


def test_every_problem_type_is_listed_with_the_page_that_explains_it(document: dict[str, Any],
                                                                     client: TestClient) -> None:
    listed = document["components"]["schemas"]["Problem"]["x-problem-types"]
    codes = [t["code"] for t in listed]
    assert codes == [c for c, _ in problem_types()]
    for needed in ("authentication_required", "idempotency_key_missing", "idempotency_key_reused", "invalid_term",
                   "unknown_gpu", "request_too_large"):
        assert needed in codes
    assert "precision_below_checkpoint" not in codes  # a planner warning, not a problem
    errors_page = client.get("/glossary/errors").text
    for t in listed:
        assert t["type"] == f"/glossary/errors#{t['code']}"
        assert f'id="{t["code"]}"' in errors_page


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Basic abc"}, {"Authorization": "Bearer nope"},
                                     {"Authorization": "Bearer"}])
def test_a_401_always_carries_www_authenticate(client: TestClient, headers: dict[str, str]) -> None:
    for method, path in (("GET", "/v1/allocations"), ("GET", "/v1/keys"), ("POST", "/v1/quotes")):
        response = client.request(method, path, headers=headers, json={} if method == "POST" else None)
        assert response.status_code == 401, (method, path, headers)
        assert response.headers["www-authenticate"] == 'Bearer realm="anchorgpu"'
        assert response.json()["code"] == "authentication_required"
