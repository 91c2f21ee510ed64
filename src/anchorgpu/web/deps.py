"""Dependencies of the page routes: CSRF check on every POST, and the signed-in account.

The page authenticates with the signed session cookie (set at sign-in with an API key); the JSON API
never reads that cookie. Every POST form carries the session's CSRF token in a hidden ``csrf_token``
field, compared in constant time.
"""

from __future__ import annotations

import hmac
from typing import Annotated
from urllib.parse import quote

from fastapi import Depends, Request

from anchorgpu.api.deps import ClockDep, UowFactoryDep
from anchorgpu.errors import AnchorError
from anchorgpu.web.templating import web_session

__all__ = ["CsrfFailed", "SignInRequired", "SignedInAccountId", "require_csrf", "signed_in_account_id"]


class CsrfFailed(AnchorError):
    """A page form came without this session's CSRF token (an old tab, or another site posting)."""

    code = "csrf_failed"
    exit_code = 2
    http_status = 403


class SignInRequired(Exception):
    """The page needs a signed-in session; the handler in ``anchorgpu.api.errors`` redirects to /signin."""

    def __init__(self, next_path: str) -> None:
        super().__init__(next_path)
        self.location = f"/signin?next={quote(next_path, safe='')}"


async def require_csrf(request: Request) -> None:
    """Refuse a POST whose form does not echo the session's CSRF token."""
    if request.method != "POST":
        return
    form = await request.form()
    token = form.get("csrf_token")
    expected = web_session(request).csrf_token
    if not isinstance(token, str) or not hmac.compare_digest(token.encode(), expected.encode()):
        raise CsrfFailed("the form's security token did not match this session; reload the page and try again")


def signed_in_account_id(request: Request, uow_factory: UowFactoryDep, clock: ClockDep) -> str:
    """The account id of the page session, or a redirect to the sign-in page. A session signed in with a
    key that has since been revoked or has expired is ended here (the key row is read on every page)."""
    from anchorgpu.accounts.keys import key_usable

    session = web_session(request)
    account_id = session.account_id
    if account_id is not None and session.key_id is not None and not key_usable(uow_factory(), account_id, session.key_id, clock()):
        session.sign_out()
        account_id = None
    if account_id is None:
        raise SignInRequired(request.url.path + (f"?{request.url.query}" if request.url.query and request.method == "GET" else ""))
    return account_id


SignedInAccountId = Annotated[str, Depends(signed_in_account_id)]
