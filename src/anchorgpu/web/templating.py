"""Jinja2 rendering for every page (ours and the glossary's).

Pages call :func:`render`; it adds what ``base.html`` needs to every template: the signed-in
account, the CSRF token for forms, a one-time flash message and the current path for the nav.
Templates live in ``anchorgpu/web/templates`` (package data, read through Jinja2's PackageLoader);
autoescaping is on for every template.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from anchorgpu.planner.speed.evidence import ENGINE_NAMES
from anchorgpu.planner.speed.figures import MODEL_FLOP_FIGURES, TIME_FIGURES
from anchorgpu.web.filters import (
    _gib,
    _localized_gib,
    _localized_money,
    _localized_usd_rate,
    _localized_when,
    duration,
    duration_scale,
    figure,
    money,
    number,
    percent,
    plain_decimal,
    significant,
    usd_rate,
    when,
)
from anchorgpu.web.session import WebSession

__all__ = ["environment", "render", "web_session"]


@lru_cache(maxsize=4)
def environment(locale: str = "en") -> Environment:
    """The Jinja2 environment of ``locale`` (one per locale, built on first use, not at import), with
    Jinja2's i18n extension over that locale's message catalogue (:mod:`anchorgpu.web.i18n`) and the
    locale's number, money, date and term formats as filters."""
    from anchorgpu.web.i18n import translations
    from anchorgpu.web.wording import Wording

    env = Environment(
        loader=PackageLoader("anchorgpu.web", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(translations(locale), newstyle=True)  # type: ignore[attr-defined]
    env.filters["gib"] = _gib if locale == "en" else _localized_gib(locale)
    env.filters["money"] = money if locale == "en" else _localized_money(locale)
    env.filters["usd_rate"] = usd_rate if locale == "en" else _localized_usd_rate(locale)
    env.filters["when"] = when if locale == "en" else _localized_when(locale)
    env.filters["num"] = number(locale)
    env.filters["figure"] = figure(locale)
    env.filters["duration_scale"] = duration_scale(locale)
    env.filters["dec"] = plain_decimal(locale)
    env.filters["sig3"] = significant(locale)
    env.filters["pct"] = percent(locale)
    env.filters["duration"] = duration(locale)
    words = Wording(locale)
    env.filters["term_words"] = words.term
    env.filters["state_words"] = words.state
    env.filters["event_words"] = words.event
    env.filters["quote_lines"] = words.quote_lines
    env.filters["quote_statement"] = words.quote_statement
    env.globals["option_words"] = words.option
    env.globals["engine_names"] = ENGINE_NAMES
    env.globals["time_figures"] = TIME_FIGURES  # a time's roofline figure is a floor, a rate's a ceiling
    env.globals["model_flop_figures"] = MODEL_FLOP_FIGURES  # shown with their bands, without a ceiling
    from anchorgpu.web.i18n import English

    env.tests["english"] = lambda value: isinstance(value, English)
    return env


def web_session(request: Request) -> WebSession:
    """The request's page session (set by :class:`anchorgpu.web.session.SessionMiddleware`)."""
    session = request.scope.get("state", {}).get("web_session")
    if not isinstance(session, WebSession):  # a page mounted without the middleware: anonymous
        session = WebSession(None)
        request.scope.setdefault("state", {})["web_session"] = session
    return session


def render(request: Request, template: str, context: Mapping[str, Any] | None = None, *, status_code: int = 200) -> HTMLResponse:
    """Render ``template`` with ``context`` plus ``request``, ``account_name``, ``csrf_token``, ``flash`` and the
    request's ``locale`` (``?lang=``, remembered in a cookie, else ``Accept-Language``), with links to switch it."""
    from urllib.parse import urlencode

    from anchorgpu.web.i18n import LANG_COOKIE, LANGUAGE_NAMES, locale_for

    session = web_session(request)
    locale, chosen_now = locale_for(request)
    others = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
    # the switch reloads this page; a page answering a form (POST /signup, a refused booking) is not there to GET
    # again, so its switch opens the start page instead of a "method not allowed"
    from anchorgpu.api.errors import allowed_methods

    switch_path = request.url.path if request.method == "GET" or "GET" in allowed_methods(request) else "/"
    language_links = [(code, name, f"{switch_path}?{urlencode([*(others if switch_path == request.url.path else []), ('lang', code)])}")
                      for code, name in LANGUAGE_NAMES.items()]
    # the header's "Sign in" brings the visitor back to this page afterwards (sign-in and sign-up both follow ``next``)
    here = request.url.path + (f"?{urlencode(others)}" if others else "")
    signin_url = "/signin" if request.url.path in ("/signin", "/signup", "/signout") else f"/signin?{urlencode({'next': here})}"
    full = {
        "locale": locale,
        "language_links": language_links,
        "signin_url": signin_url,
        "request": request,
        "account_name": session.account_name,
        "signed_in": session.account_id is not None,
        "csrf_token": session.csrf_token,
        "flash": session.pop_flash(),
        "path": request.url.path,
        # on a page in another language, the attribute that marks English text from the planner, the catalog and the
        # API (assumptions, checks, statements: the same words as the CLI and the JSON) as English
        "en_lang": Markup(' lang="en"') if locale != "en" else "",
        **(context or {}),
    }
    html = environment(locale).get_template(template).render(full)
    response = HTMLResponse(html, status_code=status_code, headers={"Vary": "Accept-Language, Cookie",
                                                                    "Content-Language": locale})
    if chosen_now:
        response.set_cookie(LANG_COOKIE, locale, max_age=365 * 24 * 3600, samesite="lax", httponly=True)
    return response


def _status_titles() -> dict[int, str]:
    from anchorgpu.web.i18n import N_

    return {400: N_("Bad request"), 401: N_("Sign-in required"), 403: N_("Forbidden"), 404: N_("Not found"),
            405: N_("Method not allowed"), 409: N_("Conflict"), 410: N_("Gone"), 413: N_("Request too large"),
            422: N_("Cannot use this input"), 429: N_("Too many requests"), 500: N_("Internal error"),
            503: N_("Service unavailable")}


def render_error(request: Request, status: int, code: str, detail: str) -> HTMLResponse:
    """The error page of ``status``: its title and the sentence that introduces ``detail`` in the page's language.
    ``detail`` is the one-line reason the API and CLI give too (English, like every domain message); a missing path,
    and a reason :func:`~anchorgpu.errors.said` whose words the catalogue has (an unknown glossary entry), is explained in
    the page's language instead."""
    from http import HTTPStatus

    from anchorgpu.web.i18n import page_text

    text = page_text(request)
    titles = _status_titles()
    if status in titles:
        title = text.gettext(titles[status])
    else:
        try:
            title = HTTPStatus(status).phrase
        except ValueError:
            title = text.gettext("Error")
    localized_detail = None
    if code == "not_found" and detail == f"no such path: {request.url.path}":
        localized_detail = text.gettext("There is no page at %(path)s.", path=request.url.path)
    elif code == "csrf_failed":
        localized_detail = text.gettext("The form's security token did not match this session; reload the page and try again.")
    elif text.locale != "en":
        from anchorgpu.web.refusals import said_words

        localized_detail = said_words(detail, text)  # None (the English, marked) without an id or its words
    return render(request, "error.html", {"status": status, "title": title, "code": code, "detail": detail,
                                          "localized_detail": localized_detail}, status_code=status)
