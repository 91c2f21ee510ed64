"""The API's request bodies are JSON objects sent as JSON, each key once.

FastAPI reads a body as JSON only when its ``Content-Type`` says so; any other body became the value of the
whole model and was answered 422 "Input should be a valid dictionary" (``curl -d`` without ``-H`` sends
``application/x-www-form-urlencoded``). And ``json.loads`` keeps the last of two equal keys, so
``{"quantity": 1, "quantity": 2}`` quoted two servers. This middleware, inside the body limit (it sees the
whole body), answers before any route:

* 415 ``unsupported_media_type`` for a non-empty body under ``/v1`` whose media type is not ``application/json``
  (or another ``…+json``);
* 400 ``malformed_body`` for a JSON body that repeats a key anywhere in it, naming the key.

Any other unreadable body is left to FastAPI, whose 400 says why (``anchorgpu.api.errors``). Pages (paths
outside ``/v1``) post HTML forms and are not touched.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["JsonBodyMiddleware", "body_refusal"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]

_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


def body_refusal(content_type: str | None, body: bytes) -> tuple[int, str, str] | None:
    """``(status, code, detail)`` for a body the API refuses before any route, or None.

    >>> body_refusal("application/json", b'{"a": 1, "a": 2}')
    (400, 'malformed_body', "the request body's JSON repeats the key 'a'; send each key once")
    >>> body_refusal("text/plain", b'{"a": 1}')[:2]
    (415, 'unsupported_media_type')
    >>> body_refusal(None, b""), body_refusal("application/json; charset=utf-8", b'{"a": 1}')
    (None, None)
    """
    if not body.strip():
        return None
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not (media.startswith("application/") and media.endswith("+json")):
        shown = repr(content_type[:60]) if content_type else "none"
        return (415, "unsupported_media_type",
                f"the request body must be JSON sent with 'Content-Type: application/json' (the request's is {shown}; "
                "curl: add -H 'Content-Type: application/json')")
    try:
        json.loads(body, object_pairs_hook=_no_repeats)
    except _RepeatedKey as repeated:
        return 400, "malformed_body", f"the request body's JSON repeats the key {repeated.key[:60]!r}; send each key once"
    except (ValueError, RecursionError):
        return None  # unreadable: FastAPI's 400 says why
    return None


class JsonBodyMiddleware:
    """Pure ASGI: refuse an API body by :func:`body_refusal`, else hand it on unchanged."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]],
                      send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http" or scope.get("method") not in _METHODS or not str(scope.get("path", "")).startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        chunks: list[bytes] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        content_type = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"content-type"), None)
        refusal = body_refusal(content_type, b"".join(chunks)) if messages[-1]["type"] == "http.request" else None
        if refusal is not None:
            from anchorgpu.api.errors import problem

            status, code, detail = refusal
            await problem(status, code, detail)(scope, receive, send)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
