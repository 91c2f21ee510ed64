"""``create_app(settings)``: the one ASGI application serving the JSON API (``/v1``) and the web page.

Nothing happens at import. ``create_app`` wires routers, error handlers and middleware; the store is
built from the settings on first use (:func:`anchorgpu.api.deps.get_store`). Worker processes import
:mod:`anchorgpu.api.asgi`, the only module that calls ``create_app()`` at import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from datetime import datetime
from importlib import resources
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.staticfiles import StaticFiles

from anchorgpu import __version__
from anchorgpu.api.deps import get_presented_account, system_clock
from anchorgpu.api.docs import DOCS_FALLBACK, document_auth_and_headers, install_docs
from anchorgpu.api.errors import install_error_handlers
from anchorgpu.api.json_body import JsonBodyMiddleware
from anchorgpu.api.query import refuse_unknown_query
from anchorgpu.api.security import BodyLimitMiddleware, SecurityHeadersMiddleware
from anchorgpu.config import Settings, get_settings
from anchorgpu.web.session import SessionMiddleware, session_secret_from_env

__all__ = ["API_PREFIX", "DOCS_FALLBACK", "create_app"]

API_PREFIX = "/v1"

_API_ROUTERS: tuple[str, ...] = ("health", "gpus", "models", "planner", "offerings", "quotes", "allocations", "keys")
"""Our routers under ``/v1`` (``anchorgpu.api.routes.<name>.router``), one per resource."""
_WEB_ROUTERS: tuple[str, ...] = ("pages", "planning", "catalog", "gpus", "booking")
"""Our page routers (``anchorgpu.web.<name>.router``)."""
_GLOSSARY_API = "anchorgpu.api.routes.glossary"
_GLOSSARY_WEB = "anchorgpu.web.glossary"
"""Written by the glossary area (its ``router``), included like ours."""

_DESCRIPTION = """\
AnchorGPU tells you whether an ML workload fits, on which GPUs, how fast and at what cost, then quotes
and books that capacity exactly once.

* Planner, catalog and glossary are public: no key needed. A key that is sent is checked on every route, public
  ones too: an unknown, revoked or expired key (or an `Authorization` header that is not `Bearer <api key>`)
  answers 401, never ignored.
* Quotes and allocations need `Authorization: Bearer <api key>` (get a key with `anchorgpu accounts create NAME`
  or from the page's sign-in screen on the embedded default).
* `POST /v1/allocations` and the allocation actions need an `Idempotency-Key` header: a retry with the same key and
  body replays the first answer (`Idempotent-Replayed: true`); the same key with another body is refused.
* Errors are `application/problem+json` with a stable `code`.
* Stopping an allocation does not pause its paid term: it still ends at `starts_at + term` and costs the same.
"""


def create_app(
    settings: Settings | None = None,
    *,
    clock: Callable[[], datetime] = system_clock,
    session_secret: str | None = None,
    allow_signup: bool | None = None,
    store: Any | None = None,
    rate_limit: bool = False,
) -> FastAPI:
    """Build the application.

    ``allow_signup`` lets the sign-in page create an account and show its key once; by default it is on
    for the embedded SQLite database (a one-machine set-up) and off for PostgreSQL deployments.
    ``store`` is an already built :class:`anchorgpu.bootstrap.Store`; without one it is built on first use.
    ``rate_limit`` adds the per-address limits of :mod:`anchorgpu.api.ratelimit` (``anchorgpu serve`` turns it on
    unless ``ANCHORGPU_RATE_LIMIT=0``; off for apps built in tests).
    """
    settings = settings or get_settings()
    app = FastAPI(
        title="AnchorGPU",
        version=__version__,
        description=_DESCRIPTION,
        openapi_url="/openapi.json",
        docs_url=None,  # /docs and /redoc from the installed assets: anchorgpu.api.docs
        redoc_url=None,
    )
    install_docs(app)
    app.state.settings = settings
    app.state.clock = clock
    if store is not None:
        app.state.store = store
    app.state.allow_signup = settings.database_url.startswith("sqlite") if allow_signup is None else allow_signup

    install_error_handlers(app)
    # a key that is sent is checked on every route (401 when not valid, never ignored); a query parameter no route
    # takes is a 422, not ignored
    strict_query = [Depends(get_presented_account), Depends(refuse_unknown_query)]
    for name in _API_ROUTERS:
        app.include_router(importlib.import_module(f"anchorgpu.api.routes.{name}").router, prefix=API_PREFIX,
                           dependencies=strict_query)
    app.include_router(importlib.import_module(_GLOSSARY_API).router, prefix=API_PREFIX, dependencies=strict_query)
    for name in _WEB_ROUTERS:
        app.include_router(importlib.import_module(f"anchorgpu.web.{name}").router, include_in_schema=False)
    app.include_router(importlib.import_module(_GLOSSARY_WEB).router, include_in_schema=False)
    app.mount("/static", StaticFiles(directory=str(resources.files("anchorgpu.web") / "static")), name="static")

    app.add_middleware(SessionMiddleware, secret=session_secret or session_secret_from_env())
    app.add_middleware(JsonBodyMiddleware)  # inside the body limit: it sees the whole body
    app.add_middleware(BodyLimitMiddleware)
    if rate_limit and settings.rate_limit:
        from anchorgpu.api.ratelimit import PublicRateLimitMiddleware

        app.add_middleware(PublicRateLimitMiddleware)  # outside the body limit: a refused request's body is never read
    app.add_middleware(SecurityHeadersMiddleware)
    app.openapi = _problem_openapi(app, limited=rate_limit and settings.rate_limit)  # type: ignore[method-assign]
    return app


def _problem_openapi(app: FastAPI, *, limited: bool = False) -> Callable[[], dict[str, Any]]:
    """FastAPI's OpenAPI document, with every error answer documented as it is sent: ``application/problem+json``
    with the ``Problem`` schema (FastAPI documents 422 as ``application/json`` ``HTTPValidationError`` and the
    ``problems()`` entries also as ``application/json``; neither is ever sent), the 400/413/415 answers of an
    unreadable, oversized or non-JSON body on operations that take one, and the ``Idempotency-Key`` header as required
    (1-255 printable ASCII characters), as the routes enforce it. Found by schemathesis' conformance checks
    (minimal edit by REL; tests/reliability/test_schema_conformance.py). With the per-address limits on (``limited``),
    their 429 and 503 answers too (:func:`anchorgpu.api.ratelimit.refusals`)."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = original()
        problem = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        for path, path_item in document.get("paths", {}).items():
            for method, operation in path_item.items():
                if limited:
                    from anchorgpu.api.ratelimit import refusals

                    for status, response in refusals(method.upper(), path).items():
                        operation.setdefault("responses", {}).setdefault(status, response)
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "header" and parameter.get("name", "").lower() == "idempotency-key":
                        # required at run time (400 without it): say so, with the accepted form
                        parameter["required"] = True
                        parameter["schema"] = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[ -~]+$",
                                               "title": "Idempotency-Key"}
                responses = operation.setdefault("responses", {})
                if "401" not in responses:  # public: no key needed, but one that is sent is checked (401 if invalid)
                    responses["401"] = {"description": "The Authorization header sent is not a valid key (unknown, "
                                                       "revoked, expired, or not 'Bearer <api key>'); send none here"}
                    operation["security"] = [{}, {"bearerAuth": []}]
                if "requestBody" in operation:
                    responses.setdefault("400", {"description": "The body is not readable JSON (malformed, not UTF-8, too deeply nested)"})
                    responses.setdefault("413", {"description": "The body is larger than the server accepts"})
                    responses.setdefault("415", {"description": "The body is not sent as JSON (Content-Type: application/json)"})
                for status, response in responses.items():
                    if status[:1] in ("4", "5"):
                        response["content"] = dict(problem)
                        if status == "422" and response.get("description") == "Validation Error":
                            response["description"] = "Invalid input (problem+json; the offending fields under 'errors')"
        schemas = document.get("components", {}).get("schemas", {})
        for unused in ("HTTPValidationError", "ValidationError"):
            schemas.pop(unused, None)
        app.openapi_schema = document_auth_and_headers(document)
        return document

    return openapi
