"""Home page and sign-in (with an API key), sign-up on the embedded default, sign-out."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from anchorgpu.api.deps import ClockDep, UowFactoryDep
from anchorgpu.api.schemas import TEXT_PATTERN
from anchorgpu.validation import control_character
from anchorgpu.web.deps import require_csrf
from anchorgpu.web.i18n import PageText, page_text
from anchorgpu.web.templating import render, web_session

router = APIRouter(dependencies=[Depends(require_csrf)])


def _safe_next(next_path: str | None) -> str:
    """Only same-site paths are followed after sign-in (no open redirect)."""
    if (next_path and next_path.startswith("/") and not next_path.startswith("//") and "\\" not in next_path
            and control_character(next_path) is None):
        return next_path
    return "/my/allocations"


def sign_in_refusal(reason: str, text: PageText) -> str:
    """Why a key did not sign in, in the page's language (the accounts service's reasons are the API's English).

    >>> sign_in_refusal("the API key agpu_ab… (laptop) was revoked", PageText("en"))
    'The API key agpu_ab… (laptop) was revoked.'
    """
    import re

    if "not valid" in reason:
        return text.gettext("That API key matches no account.")
    revoked = re.fullmatch(r"the API key (.+) was revoked", reason)
    if revoked:
        return text.gettext("The API key %(key)s was revoked.", key=revoked.group(1))
    expired = re.fullmatch(r"the API key (.+) expired at (\S+)", reason)
    if expired:
        from anchorgpu.web.templating import environment

        when = environment(text.locale).filters["when"](expired.group(2))
        return text.gettext("The API key %(key)s expired at %(when)s.", key=expired.group(1), when=when)
    return f"{reason[:1].upper()}{reason[1:]}."


@router.get("/", response_class=HTMLResponse)
def home(request: Request) -> Response:
    """The three journeys: plan a workload, rent capacity, learn a concept."""
    return render(request, "home.html")


@router.get("/signin", response_class=HTMLResponse)
def signin_form(request: Request, next: str | None = None) -> Response:
    return render(request, "signin.html", {"next": _safe_next(next), "allow_signup": request.app.state.allow_signup})


@router.post("/signin")
def signin(request: Request, uow_factory: UowFactoryDep, clock: ClockDep, api_key: Annotated[str, Form(max_length=512)],
           next: Annotated[str, Form(max_length=2000)] = "") -> Response:
    from anchorgpu.accounts import authenticate

    try:
        account: Any = authenticate(uow_factory(), api_key.strip(), now=clock())
    except LookupError as exc:
        reason = sign_in_refusal(str(exc), page_text(request))
        context = {"next": _safe_next(next), "allow_signup": request.app.state.allow_signup, "error": reason}
        return render(request, "signin.html", context, status_code=401)
    web_session(request).sign_in(str(account.id), str(account.name), account.key_id)
    return RedirectResponse(_safe_next(next), status_code=303)


@router.post("/signup")
def signup(request: Request, uow_factory: UowFactoryDep, clock: ClockDep, name: Annotated[str, Form(min_length=1, max_length=100, pattern=TEXT_PATTERN)],
           next: Annotated[str, Form(max_length=2000)] = "") -> Response:
    """Create an account and show its key once (embedded default only), with a link back to where the visitor
    was (``next``, kept only when it is a same-site path, like sign-in's)."""
    if not request.app.state.allow_signup:
        error = page_text(request).gettext("Accounts are created by the operator here: %(command)s", command="anchorgpu accounts create NAME")
        return render(request, "signin.html", {"next": "/", "allow_signup": False, "error": error}, status_code=403)
    from anchorgpu.accounts import authenticate, create_account

    account_id, api_key = create_account(uow_factory(), name.strip(), clock=clock)
    web_session(request).sign_in(str(account_id), name.strip(), authenticate(uow_factory(), api_key, now=clock()).key_id)
    continue_to = _safe_next(next) if next else None
    return render(request, "signup_done.html", {"api_key": api_key, "name": name.strip(), "continue_to": continue_to}, status_code=201)


@router.post("/signout")
def signout(request: Request) -> Response:
    web_session(request).sign_out()
    return RedirectResponse("/", status_code=303)
