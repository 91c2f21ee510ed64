"""Interactive API documentation that works offline, and what the OpenAPI document says about auth.

``/docs`` (Swagger UI 5) and ``/redoc`` (Redoc) load their scripts and styles from the pinned
``fastapi-offline`` package, served here under :data:`ASSETS_URL`: no CDN, no inline script (our own
``/static/docs.js`` starts Swagger UI), so the docs work on an air-gapped machine under a strict
Content-Security-Policy.

:func:`document_auth_and_headers` completes FastAPI's document: the HTTP bearer scheme is declared by
:data:`anchorgpu.api.deps.BEARER_SCHEME`; here every 401 gets its ``WWW-Authenticate`` header, every
operation that takes an ``Idempotency-Key`` documents the ``Idempotent-Replayed`` header of its answers,
and the ``Problem`` schema lists every problem type (``code``) with the page that explains it.
"""

from __future__ import annotations

from html import escape
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS_URL", "DOCS_FALLBACK", "document_auth_and_headers", "install_docs", "problem_types"]

ASSETS_URL = "/docs-assets"
"""Where the files of the installed ``fastapi-offline`` package (swagger-ui-bundle.js, swagger-ui.css,
redoc.standalone.js) are served."""

DOCS_FALLBACK = """
<div id="docs-fallback" hidden>
  <h1>AnchorGPU API</h1>
  <p>The interactive documentation did not start (its script was blocked or JavaScript is off).
  The same description is at <a href="/openapi.json">/openapi.json</a> (OpenAPI 3); every route is under
  <code>/v1</code>, errors are <code>application/problem+json</code> explained at <a href="/glossary/errors">/glossary/errors</a>.
  <a href="/">Back to the page</a>.</p>
</div>
<noscript><p>Swagger UI needs JavaScript: read <a href="/openapi.json">/openapi.json</a> or <a href="/redoc">/redoc</a> instead.</p></noscript>
"""
"""Shown by ``/docs`` when Swagger UI did not start: never a blank page."""

_SWAGGER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="/static/favicon.svg">
<link rel="stylesheet" href="{assets}/swagger-ui.css">
</head><body>
<div id="swagger-ui" data-openapi-url="/openapi.json"></div>
{fallback}
<script src="{assets}/swagger-ui-bundle.js"></script>
<script src="/static/docs.js"></script>
</body></html>
"""

_REDOC = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="icon" href="/static/favicon.svg">
</head><body>
<redoc spec-url="/openapi.json"></redoc>
<noscript><p>Redoc needs JavaScript: read <a href="/openapi.json">/openapi.json</a> instead.</p></noscript>
<script src="{assets}/redoc.standalone.js"></script>
</body></html>
"""


def _assets_dir() -> str:
    return str(resources.files("fastapi_offline") / "static")


def install_docs(app: FastAPI) -> None:
    """``/docs``, ``/redoc`` and their assets on ``app`` (FastAPI's own CDN pages stay off)."""
    title = escape(f"{app.title} API")

    def swagger_page() -> HTMLResponse:
        return HTMLResponse(_SWAGGER.format(title=title, assets=ASSETS_URL, fallback=DOCS_FALLBACK))

    def redoc_page() -> HTMLResponse:
        return HTMLResponse(_REDOC.format(title=title, assets=ASSETS_URL))

    app.add_api_route("/docs", swagger_page, include_in_schema=False, response_class=HTMLResponse)
    app.add_api_route("/redoc", redoc_page, include_in_schema=False, response_class=HTMLResponse)
    app.mount(ASSETS_URL, StaticFiles(directory=_assets_dir()), name="docs-assets")


_WWW_AUTHENTICATE = {
    "description": "The scheme to authenticate with: `Bearer realm=\"anchorgpu\"` (send `Authorization: Bearer <api key>`)",
    "schema": {"type": "string"},
}
_REPLAYED = {
    "description": "`true` when this answer replays the first answer to the same `Idempotency-Key` and body "
                   "(nothing was done again); absent on a first answer",
    "schema": {"type": "string", "enum": ["true"]},
}


def problem_types() -> list[tuple[str, str]]:
    """(code, glossary entry id) of every problem type the API can answer with, sorted by code.

    The glossary's code index lists every error code (a test checks that each ``AnchorError`` subclass and
    each code the HTTP layer sends has its entry); planner warning codes are not problems and are left out.
    """
    from anchorgpu.glossary import load_glossary
    from anchorgpu.planner.warnings import WARNING_CODES

    index = load_glossary().code_index
    return sorted((code, entry) for code, entry in index.items() if code not in WARNING_CODES)


def document_auth_and_headers(document: dict[str, Any]) -> dict[str, Any]:
    """Add the headers and problem types described in the module docstring to ``document`` (in place)."""
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            responses = operation.get("responses", {})
            if "401" in responses:
                responses["401"].setdefault("headers", {})["WWW-Authenticate"] = dict(_WWW_AUTHENTICATE)
            idempotent = any(p.get("in") == "header" and p.get("name", "").lower() == "idempotency-key"
                             for p in operation.get("parameters", []))
            if idempotent:
                for status, response in responses.items():
                    if status.startswith("2") or status in ("404", "409", "422"):  # first answers are replayed
                        response.setdefault("headers", {})["Idempotent-Replayed"] = dict(_REPLAYED)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    problem = schemas.get("Problem")
    if problem is not None:
        types = problem_types()
        code = problem.setdefault("properties", {}).setdefault("code", {})
        code["description"] = (
            "Stable machine-readable code; `type` is `/glossary/errors#<code>`, where each code is explained. "
            "Problem types: " + ", ".join(f"`{c}`" for c, _ in types))
        code["examples"] = [c for c, _ in types]
        problem["x-problem-types"] = [{"code": c, "type": f"/glossary/errors#{c}", "glossary": f"/glossary/{e}"}
                                      for c, e in types]
    return document
