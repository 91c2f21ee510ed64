"""Jinja2 rendering for every page (ours and the glossary's).

Pages call :func:`render`; it adds what ``base.html`` needs to every template: the signed-in
account, the CSRF token for forms, a one-time flash message and the current path for the nav.
Templates live in ``anchorgpu/web/templates`` (package data, read through Jinja2's PackageLoader);
autoescaping is on for every template.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from anchorgpu.web.session import WebSession

__all__ = ["environment", "money", "render", "web_session", "when"]


def _gib(value: int | float | None) -> str:
    """Bytes as GiB with one decimal (display only): 85899345920 -> '80.0 GiB'."""
    if value is None:
        return "–"
    return f"{value / 2**30:,.1f} GiB"


def money(value: Decimal | str | float | None) -> str:
    """USD for display: Decimal('2190.00') -> '$2,190.00'.

    >>> money("2190.00"), money(None)
    ('$2,190.00', 'unpriced')
    """
    if value is None or value == "":
        return "unpriced"
    return f"${Decimal(str(value)):,.2f}"


def when(value: str | datetime | None) -> str:
    """An instant for display, in UTC to the minute.

    >>> when("2026-12-29T17:07:15.717925+00:00")
    '2026-12-29 17:07 UTC'
    """
    if value is None or value == "":
        return "–"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _localized_gib(locale: str) -> Any:
    """``_gib`` with the locale's digit grouping and decimal sign (ru: '36,3 GiB', '1 234,6 GiB')."""
    from babel.numbers import format_decimal

    def gib(value: int | float | None) -> str:
        return "–" if value is None else f"{format_decimal(value / 2**30, format='#,##0.0', locale=locale)} GiB"

    return gib


def _localized_money(locale: str) -> Any:
    """``money`` in the locale's currency format (ru: '2 190,00 $'); ``None`` stays 'unpriced'."""
    from babel.numbers import format_currency

    def localized(value: Decimal | str | float | None) -> str:
        if value is None or value == "":
            return "unpriced"
        return str(format_currency(Decimal(str(value)), "USD", locale=locale))

    return localized


@lru_cache(maxsize=4)
def environment(locale: str = "en") -> Environment:
    """The Jinja2 environment of ``locale`` (one per locale, built on first use, not at import), with
    Jinja2's i18n extension over that locale's message catalogue (:mod:`anchorgpu.web.i18n`)."""
    from anchorgpu.web.i18n import translations

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
    env.filters["when"] = when
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
    language_links = [(code, name, f"{request.url.path}?{urlencode([*others, ('lang', code)])}")
                      for code, name in LANGUAGE_NAMES.items()]
    full = {
        "locale": locale,
        "language_links": language_links,
        "request": request,
        "account_name": session.account_name,
        "signed_in": session.account_id is not None,
        "csrf_token": session.csrf_token,
        "flash": session.pop_flash(),
        "path": request.url.path,
        **(context or {}),
    }
    html = environment(locale).get_template(template).render(full)
    response = HTMLResponse(html, status_code=status_code, headers={"Vary": "Accept-Language, Cookie",
                                                                    "Content-Language": locale})
    if chosen_now:
        response.set_cookie(LANG_COOKIE, locale, max_age=365 * 24 * 3600, samesite="lax", httponly=True)
    return response
