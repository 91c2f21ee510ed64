"""Errors → HTTP, in this one module (RFC 9457 ``application/problem+json``).

Every body has ``type``, ``title``, ``status``, ``detail`` and a stable ``code``:

- an :class:`~anchorgpu.errors.AnchorError` uses its own ``http_status`` and ``code`` (InvalidInput → 422,
  NotFound → 404, Conflict → 409, and whatever a subclass says, e.g. 400 for a missing idempotency key); its
  message names the CLI's flags (``--train-precision fp4: ...``), so each ``--flag-name`` that is a field of the
  request being answered is written as that field (``train_precision fp4: ...``), see
  :func:`anchorgpu.api.words.api_words`;
- a request that fails validation (wrong type, missing field, out-of-range number) → 422 ``invalid_request``
  with the offending fields listed under ``errors``;
- an HTTP error raised by the framework (unknown path 404, wrong method 405, 401) keeps its status;
- a request for a page (any path outside ``/v1``) gets the same status as an HTML page instead, and a page
  that needs a signed-in session redirects to ``/signin``;
- anything else is a bug in AnchorGPU: logged with its traceback and answered 500 ``internal_error``
  without details. No input a client can send should reach that branch; the schema fuzz test checks it.
"""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from anchorgpu.api.words import api_words, field_hint, request_fields
from anchorgpu.errors import AnchorError
from anchorgpu.planner.inputs import task_hint
from anchorgpu.validation import pattern_reason

__all__ = [
    "PROBLEM_JSON",
    "AuthenticationRequired",
    "IdempotencyKeyInvalid",
    "IdempotencyKeyMissing",
    "install_error_handlers",
    "problem",
    "problem_from_error",
]

PROBLEM_JSON = "application/problem+json"
TYPE_BASE = "/glossary/errors#"
"""``type`` URIs point at the error's explanation (relative to the server)."""
_log = logging.getLogger("anchorgpu.api")


class AuthenticationRequired(AnchorError):
    """No API key, or one that matches no account (HTTP 401)."""

    code = "authentication_required"
    exit_code = 2
    http_status = 401


class IdempotencyKeyMissing(AnchorError):
    """A purchase-like POST came without the ``Idempotency-Key`` header (HTTP 400)."""

    code = "idempotency_key_missing"
    exit_code = 2
    http_status = 400


class IdempotencyKeyInvalid(AnchorError):
    """The ``Idempotency-Key`` header is empty, longer than 255 characters or not printable ASCII (HTTP 400)."""

    code = "idempotency_key_invalid"
    exit_code = 2
    http_status = 400


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def problem(status: int, code: str, detail: str, *, headers: dict[str, str] | None = None, **extra: Any) -> JSONResponse:
    """A problem+json response with our stable ``code``."""
    body: dict[str, Any] = {"type": f"{TYPE_BASE}{code}", "title": _title(status), "status": status, "detail": detail, "code": code}
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def problem_from_error(exc: AnchorError, *, fields: frozenset[str] = frozenset()) -> JSONResponse:
    """The response for one of our errors, from its own ``http_status`` and ``code``; ``fields``: the request's
    field names, which the message's CLI flags are written as (:func:`api_words`)."""
    status = exc.http_status if 400 <= exc.http_status < 600 else 500
    headers: dict[str, str] = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="anchorgpu"'
    if getattr(exc, "replayed", False):  # a stored business error of an idempotent request, answered again
        headers["Idempotent-Replayed"] = "true"
    extra: dict[str, Any] = {}
    suggestions = getattr(exc, "suggestions", None)
    if suggestions:
        extra["suggestions"] = list(suggestions)
    return problem(status, exc.code, api_words(exc.message, fields), headers=headers or None, **extra)


def _field_errors(exc: RequestValidationError, fields: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Each failed field and why; a body field the request does not have names the one it may have meant
    (:func:`~anchorgpu.api.words.field_hint`: ``offload_activations`` is ``offload_activation_layers``)."""
    out = []
    for err in exc.errors():
        loc = [str(part) for part in err.get("loc", ())]
        words = pattern_reason((err.get("ctx") or {}).get("pattern")) if err.get("type") == "string_pattern_mismatch" else None
        message = words or str(err.get("msg", "invalid"))
        if err.get("type") == "extra_forbidden" and len(loc) == 2 and loc[0] == "body":
            message += field_hint(loc[1], fields)
        elif err.get("type") == "literal_error" and loc[-1:] == ["task"]:  # "serve": did you mean 'inference'?
            message += task_hint(err.get("input"))
        elif err.get("type") in ("int_type", "float_type") and isinstance(err.get("input"), str) and loc[:1] == ["body"]:
            message += _number_as_text_hint(err["input"])  # "global_batch": "4M", as the CLI's --global-batch 4M
        out.append({"field": ".".join(loc), "message": message})
    return out


def _number_as_text_hint(text: str) -> str:
    """What a JSON string in a number field is missing: the API's bodies take numbers (``"global_batch": 4194304``),
    where the CLI also reads its own spellings (``--global-batch 4M``, ``--context 8k``, ``--tokens 1e12``).

    >>> _number_as_text_hint("4M")
    ": send a JSON number, not the string '4M' (the CLI's spellings such as 4M, 8k or 1e12 are not read here)"
    """
    shown = text if len(text) <= 30 else text[:30] + "…"
    return f": send a JSON number, not the string {shown!r} (the CLI's spellings such as 4M, 8k or 1e12 are not read here)"


def _validation_detail(errors: list[dict[str, Any]]) -> str:
    if not errors:
        return "the request is not valid"
    first = errors[0]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{first['field']}: {first['message']}{more}"


def _is_page(request: Request) -> bool:
    path = request.url.path
    return not (path.startswith("/v1") or path.startswith("/static") or path in ("/openapi.json", "/docs"))


def _page(request: Request, status: int, code: str, detail: str) -> Response:
    from anchorgpu.web.templating import render_error

    return render_error(request, status, code, detail)


async def _on_anchor_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AnchorError)
    if _is_page(request):
        return _page(request, exc.http_status, exc.code, exc.said or exc.message)  # said: a page says it in its words
    return problem_from_error(exc, fields=request_fields(request))


async def _on_sign_in_required(request: Request, exc: Exception) -> Response:
    from anchorgpu.web.deps import SignInRequired

    assert isinstance(exc, SignInRequired)
    return RedirectResponse(exc.location, status_code=303)


async def _on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = _field_errors(exc, request_fields(request))
    if _is_page(request):
        return _page(request, 422, "invalid_request", _validation_detail(errors))
    return problem(422, "invalid_request", _validation_detail(errors), errors=errors)


def _unreadable_body_reason(cause: BaseException | None) -> str:
    """One line on why FastAPI could not read a JSON body (it raises its 400 from the decoder's error)."""
    if isinstance(cause, UnicodeDecodeError):
        return "the request body is not UTF-8 text; send JSON encoded as UTF-8"
    if isinstance(cause, RecursionError):
        return "the request body's JSON is nested too deeply"
    if isinstance(cause, ValueError) and "digits" in str(cause):
        return "the request body holds a number with too many digits"
    return "the request body could not be read as JSON"


# Codes the HTTP layer answers with on its own (outside the AnchorError tree). The glossary explains each one.
_STATUS_CODES = {401: "authentication_required", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}
TRANSPORT_CODES: tuple[str, ...] = (
    *_STATUS_CODES.values(), "invalid_request", "malformed_body", "database_unavailable", "internal_error",
    "malformed_request", "request_timeout",  # anchorgpu.api.server (unparseable HTTP) and security (slow body)
    "unsupported_media_type",  # anchorgpu.api.json_body (a body not sent as JSON)
)


_PROBED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route answers on this path. Starlette's 405 names only the methods of the FIRST
    route whose path matched (``GET /v1/allocations`` and ``POST /v1/allocations`` are two routes), so
    the ``Allow`` header is rebuilt from all of them."""
    from starlette.routing import Match, Mount

    allowed = []
    for method in _PROBED_METHODS:
        scope = {**request.scope, "method": method}
        if any(not isinstance(route, Mount) and route.matches(scope)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    code = _STATUS_CODES.get(exc.status_code, f"http_{exc.status_code}")
    detail = exc.detail if isinstance(exc.detail, str) else _title(exc.status_code)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        allowed = allowed_methods(request)
        if allowed:
            headers["Allow"] = ", ".join(allowed)
            detail = f"{request.method} is not allowed on {request.url.path}; allowed: {', '.join(allowed)}"
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no such path: {request.url.path}"
    if exc.status_code == 400 and detail == "There was an error parsing the body":  # FastAPI's words: say why
        code, detail = "malformed_body", _unreadable_body_reason(exc.__cause__)
    if _is_page(request) and exc.status_code in (404, 405):
        return _page(request, exc.status_code, code, detail)
    return problem(exc.status_code, code, detail, headers=headers or None)


def _database_unavailable(request: Request, exc: Exception) -> JSONResponse | None:
    """503 for a database that went away mid-request (connection dropped, server restarting), logged in ONE
    line: not a bug and not the client's fault; the same request (same Idempotency-Key) may be sent again."""
    from sqlalchemy.exc import DBAPIError, OperationalError

    if not (isinstance(exc, OperationalError) or (isinstance(exc, DBAPIError) and exc.connection_invalidated)):
        return None
    reason = (str(exc.orig) if exc.orig is not None else str(exc)).strip().splitlines()
    _log.warning("database unavailable on %s %s: %s: %s", request.method, request.url.path, type(exc.orig or exc).__name__,
                 reason[0] if reason else "")
    return problem(503, "database_unavailable", "the database connection failed mid-request; retry the same request "
                   "(with the same Idempotency-Key it applies at most once)", headers={"Retry-After": "1"})


async def _on_database_error(request: Request, exc: Exception) -> JSONResponse:
    """Database errors, answered inside the app: Starlette's last-resort handler (``Exception``) re-raises after
    answering, so the server would log each one again with its traceback. 503 in one log line when the
    database is unavailable; any other database error is a bug: logged once with its traceback, 500."""
    unavailable = _database_unavailable(request, exc)
    if unavailable is not None:
        return unavailable
    _log.error("unhandled database error on %s %s", request.method, request.url.path, exc_info=exc)
    return problem(500, "internal_error", "an internal error occurred; it has been logged")


async def _on_unexpected(request: Request, exc: Exception) -> JSONResponse:
    unavailable = _database_unavailable(request, exc)
    if unavailable is not None:
        return unavailable
    _log.exception("unhandled error on %s %s", request.method, request.url.path)
    return problem(500, "internal_error", "an internal error occurred; it has been logged")


def install_error_handlers(app: FastAPI) -> None:
    """Register every handler above on ``app`` (called once by ``create_app``)."""
    from sqlalchemy.exc import DBAPIError

    from anchorgpu.web.deps import SignInRequired

    app.add_exception_handler(DBAPIError, _on_database_error)
    app.add_exception_handler(AnchorError, _on_anchor_error)
    app.add_exception_handler(SignInRequired, _on_sign_in_required)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_exception)
    app.add_exception_handler(Exception, _on_unexpected)
