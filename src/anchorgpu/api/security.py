"""Security headers on every response (pages and API).

Pages get a Content-Security-Policy that allows only our own scripts and styles (no inline script,
no third-party origin), forbids framing and restricts form targets to this origin. The interactive
API docs at ``/docs`` load FastAPI's Swagger UI from its CDN with an inline bootstrap script, so that
one path gets a policy that permits exactly that and nothing else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BODY_TIMEOUT_S", "MAX_BODY_BYTES", "PAGE_CSP", "BodyLimitMiddleware", "SecurityHeadersMiddleware"]

PAGE_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "worker-src 'self' blob:; connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'"
)
"""/docs and /redoc: our scripts only (the assets are served here); Swagger UI and Redoc set inline styles and
Redoc runs its search in a blob: worker."""
_DOCS_PATHS = ("/docs", "/redoc")
_COMMON = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]], Awaitable[None]]


class SecurityHeadersMiddleware:
    """Pure ASGI middleware adding the headers above unless the response already set them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = DOCS_CSP if scope.get("path") in _DOCS_PATHS else PAGE_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                extra = [(b"www-authenticate", b'Bearer realm="anchorgpu"')] if message.get("status") == 401 else []
                for name, value in [*_COMMON, (b"content-security-policy", csp.encode()), *extra]:
                    if name not in present:
                        headers.append((name, value))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


MAX_BODY_BYTES = 1024 * 1024
"""Largest request body accepted (1 MiB): every real request is a few hundred bytes."""


BODY_TIMEOUT_S = 3.0
"""Longest time a request body may take to arrive (every real body is a few hundred bytes, at most 1 MiB): a
client that declares more than it sends, or trickles it, gets 408 instead of holding a worker."""


class BodyLimitMiddleware:
    """Read every request body here, before any handler, and hand it on whole:

    - a declared ``Content-Length`` over ``max_bytes`` is refused at once (413), as is one that is not a
      number (400); a chunked body is refused when it crosses the limit (413);
    - the whole body must arrive within ``timeout_s`` (408, connection closed): a body shorter than its
      declared length, or trickled a byte at a time, cannot hold the connection.

    All answers are problem+json.
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int = MAX_BODY_BYTES, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]) -> None:
        import asyncio

        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                if not value.isdigit():
                    await self._refuse(scope, receive, send, 400, "malformed_request", "the Content-Length header is not a whole number")
                    return
                if len(value) > 12 or int(value) > self.max_bytes:
                    await self._too_large(scope, receive, send)
                    return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=max(deadline - loop.time(), 0.001))
            except TimeoutError:
                await self._refuse(scope, receive, send, 408, "request_timeout",
                                   f"the request body did not arrive within {self.timeout_s:g} s (shorter than its Content-Length?)",
                                   close=True)
                return
            if message["type"] != "http.request":
                await self.app(scope, receive, send)  # a disconnect: let the app see it
                return
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                await self._too_large(scope, receive, send)
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        whole = b"".join(chunks)
        delivered = False

        async def replay() -> Message:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": whole, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]],
                      status: int, code: str, detail: str, *, close: bool = False) -> None:
        from anchorgpu.api.errors import problem

        response = problem(status, code, detail, headers={"Connection": "close"} if close else None)
        await response(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]) -> None:
        from anchorgpu.api.errors import problem

        response = problem(413, "request_too_large", f"the request body is larger than {self.max_bytes:,} bytes")
        await response(scope, receive, send)
