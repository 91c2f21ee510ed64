"""The web page's session: a signed, HTTP-only cookie, plus the per-session CSRF token.

The cookie holds a small JSON object (account id and name once signed in, the CSRF token, a flash
message) signed with HMAC-SHA256 under the app's session secret. It is not encrypted: it carries no
secret (never the API key), only what the server itself put there. A cookie whose signature does not
verify, or that is older than ``MAX_AGE_S``, is ignored and a fresh anonymous session starts.

Every page view has a session with a CSRF token; every POST to the web page must echo it in the
hidden ``csrf_token`` field (checked in constant time by :func:`anchorgpu.web.deps.require_csrf`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "COOKIE_NAME",
    "MAX_AGE_S",
    "SESSION_SECRET_ENV",
    "SessionMiddleware",
    "WebSession",
    "decode_cookie",
    "encode_cookie",
    "session_secret_from_env",
]

COOKIE_NAME = "anchorgpu_session"
MAX_AGE_S = 12 * 3600
"""A signed-in page session lasts 12 hours; then the user signs in again with the API key."""
SESSION_SECRET_ENV = "ANCHORGPU_SESSION_SECRET"
"""Shared by every worker process of one ``anchorgpu serve`` (it sets it when unset)."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def session_secret_from_env() -> str:
    """The session secret from ``ANCHORGPU_SESSION_SECRET``, or a random one for this process.

    A random secret only means page sessions do not survive a restart; ``anchorgpu serve`` sets the
    variable once so that all its worker processes accept each other's cookies.
    """
    return os.environ.get(SESSION_SECRET_ENV) or secrets.token_urlsafe(32)


def _sign(secret: bytes, payload: bytes) -> str:
    return base64.urlsafe_b64encode(hmac.new(secret, payload, hashlib.sha256).digest()).decode().rstrip("=")


def encode_cookie(data: dict[str, Any], secret: str, *, now_s: float | None = None) -> str:
    """``<base64 json>.<base64 hmac>``; the issue time is stored inside as ``iat``.

    >>> value = encode_cookie({"csrf": "t"}, "s3cret", now_s=100.0)
    >>> decode_cookie(value, "s3cret", now_s=200.0)["csrf"]
    't'
    >>> decode_cookie(value, "other", now_s=200.0) is None
    True
    """
    body = dict(data)
    body["iat"] = int(time.time() if now_s is None else now_s)
    payload = base64.urlsafe_b64encode(json.dumps(body, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"{payload}.{_sign(secret.encode(), payload.encode())}"


def decode_cookie(value: str, secret: str, *, now_s: float | None = None) -> dict[str, Any] | None:
    """The session data, or ``None`` when the signature is wrong, the value malformed or too old."""
    payload, _, signature = value.partition(".")
    if not payload or not signature:
        return None
    if not hmac.compare_digest(_sign(secret.encode(), payload.encode()), signature):
        return None
    try:
        data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, binascii.Error):
        return None
    if not isinstance(data, dict):
        return None
    now = time.time() if now_s is None else now_s
    iat = data.get("iat")
    if not isinstance(iat, int) or now - iat > MAX_AGE_S or iat - now > 60:
        return None
    return data


class WebSession:
    """The decoded session of one request; ``modified`` sessions are written back as a cookie."""

    def __init__(self, data: dict[str, Any] | None) -> None:
        self._data: dict[str, Any] = dict(data or {})
        self.modified = data is None
        if not isinstance(self._data.get("csrf"), str):
            self._data["csrf"] = secrets.token_urlsafe(24)
            self.modified = True

    @property
    def csrf_token(self) -> str:
        return str(self._data["csrf"])

    @property
    def account_id(self) -> str | None:
        value = self._data.get("account_id")
        return str(value) if value is not None else None

    @property
    def account_name(self) -> str | None:
        value = self._data.get("account_name")
        return str(value) if value is not None else None

    @property
    def key_id(self) -> str | None:
        """The API key the session signed in with: the session ends when that key is revoked or expires."""
        value = self._data.get("key_id")
        return str(value) if value is not None else None

    def sign_in(self, account_id: str, account_name: str, key_id: str | None = None) -> None:
        """Bind the session to an account, with a NEW CSRF token (no session fixation)."""
        self._data = {"account_id": account_id, "account_name": account_name, "csrf": secrets.token_urlsafe(24)}
        if key_id is not None:
            self._data["key_id"] = key_id
        self.modified = True

    def sign_out(self) -> None:
        self._data = {"csrf": secrets.token_urlsafe(24)}
        self.modified = True

    def flash(self, message: str) -> None:
        """A one-time message shown on the next page (e.g. the stop statement)."""
        self._data["flash"] = message
        self.modified = True

    def pop_flash(self) -> str | None:
        message = self._data.pop("flash", None)
        if message is not None:
            self.modified = True
        return str(message) if message is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self._data.items() if k != "iat"}


class SessionMiddleware:
    """Pure ASGI middleware: load the cookie into ``scope["state"]["web_session"]``, write it back if changed.

    Only HTML pages use it; the JSON API under ``/v1`` authenticates with bearer keys and never reads
    the cookie, so it needs no CSRF protection.
    """

    def __init__(self, app: ASGIApp, *, secret: str, https_only: bool = False) -> None:
        self.app = app
        self.secret = secret
        self.https_only = https_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope.get("path", "")).startswith("/v1"):
            await self.app(scope, receive, send)
            return
        data = None
        for name, value in scope.get("headers", []):
            if name == b"cookie":
                for part in value.decode("latin-1").split(";"):
                    key, _, cookie = part.strip().partition("=")
                    if key == COOKIE_NAME:
                        data = decode_cookie(cookie, self.secret)
        session = WebSession(data)
        scope.setdefault("state", {})["web_session"] = session

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start" and session.modified:
                cookie = (
                    f"{COOKIE_NAME}={encode_cookie(session.to_dict(), self.secret)}; Path=/; Max-Age={MAX_AGE_S}; "
                    "HttpOnly; SameSite=Lax" + ("; Secure" if self.https_only else "")
                )
                headers = list(message.get("headers", []))
                headers.append((b"set-cookie", cookie.encode("latin-1")))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_cookie)
