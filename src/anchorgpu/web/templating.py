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
from markupsafe import Markup

from anchorgpu.planner.speed.evidence import ENGINE_NAMES
from anchorgpu.planner.speed.figures import MODEL_FLOP_FIGURES, TIME_FIGURES
from anchorgpu.units import figure_places
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


def usd_rate(value: Decimal | str | float | None) -> str:
    """A price per unit (USD a million tokens) with every digit it carries, at least cents: Decimal('0.006527') ->
    '$0.006527' (``money`` would show $0.01).

    >>> usd_rate("0.006527"), usd_rate("0.2"), usd_rate(None)
    ('$0.006527', '$0.20', 'unpriced')
    """
    if value is None or value == "":
        return "unpriced"
    amount = Decimal(str(value))
    exponent = amount.as_tuple().exponent
    return money(amount) if not isinstance(exponent, int) or exponent >= -2 else f"${amount:,f}"


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
    """``_gib`` with the locale's digit grouping and decimal sign (ru: '36,3 GiB', '1 234,6 GiB'), rounded as ``_gib``
    rounds (:func:`number`)."""
    localized = number(locale)

    def gib(value: int | float | None) -> str:
        return "–" if value is None else f"{localized(value / 2**30, 1)} GiB"

    return gib


def _localized_money(locale: str) -> Any:
    """``money`` in the locale's currency format (ru: '2 190,00 $'); ``None`` is the catalogue's 'unpriced'."""
    from babel.numbers import format_currency

    from anchorgpu.web.i18n import PageText

    unpriced = PageText(locale).gettext("unpriced")

    def localized(value: Decimal | str | float | None) -> str:
        if value is None or value == "":
            return unpriced
        return str(format_currency(Decimal(str(value)), "USD", locale=locale))

    return localized


def _localized_usd_rate(locale: str) -> Any:
    """``usd_rate`` in the locale's currency format, every digit kept (ru: '0,006527 $')."""
    from babel.numbers import format_currency

    from anchorgpu.web.i18n import PageText

    unpriced = PageText(locale).gettext("unpriced")

    def localized(value: Decimal | str | float | None) -> str:
        if value is None or value == "":
            return unpriced
        return str(format_currency(Decimal(str(value)), "USD", locale=locale, decimal_quantization=False))

    return localized


def _localized_when(locale: str) -> Any:
    """``when`` in the locale's own patterns (Babel: its medium date and short time, joined as the locale joins them;
    ru: '29 дек. 2026 г., 17:07 UTC'), always in UTC and saying so."""
    from babel.dates import format_date, format_time, get_datetime_format

    joined = str(get_datetime_format("medium", locale=locale))

    def localized(value: str | datetime | None) -> str:
        if value is None or value == "":
            return "–"
        moment = datetime.fromisoformat(value) if isinstance(value, str) else value
        moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
        day = format_date(moment.date(), "medium", locale=locale)
        clock = format_time(moment, "short", tzinfo=UTC, locale=locale)
        return f"{joined.replace('{1}', day).replace('{0}', clock)} UTC"

    return localized


def number(locale: str) -> Any:
    """A number with ``digits`` decimals in the locale's format: en '1,234.5' (as Python's ``{:,.1f}``), ru '1 234,5'.
    ``None`` shows as '–'. Every locale rounds as Python's format does (the float's own value, so the JSON's 16.95,
    the binary 16.9499…, is '16.9' in each, as the API's ``:.1f`` writes it); Babel only writes the digits (its own
    rounding, half-even on the float's shortest decimal, gave ru '17,0').

    >>> number("en")(1234.5, 1), number("ru")(1234.5, 1), number("ru")(None)
    ('1,234.5', '1\xa0234,5', '–')
    >>> number("en")(16.95, 1), number("ru")(16.95, 1), number("ru")(2.5), number("ru")(Decimal("0.125"), 2)
    ('16.9', '16,9', '2', '0,12')
    """
    from babel.numbers import format_decimal

    def formatted(value: int | float | Decimal | None, digits: int = 0) -> str:
        if value is None:
            return "–"
        if locale == "en":
            return f"{value:,.{digits}f}"
        rounded = Decimal(f"{value:.{digits}f}")  # Python's rounding, as the en branch; Babel only localizes
        return str(format_decimal(rounded, format="#,##0" + ("." + "0" * digits if digits else ""), locale=locale))

    return formatted


def figure(locale: str) -> Any:
    """A speed or time figure as :func:`number` writes it with ``digits`` decimals, or with two significant digits
    where those would show fewer (``units.figure_places``, as the CLI's lines): a rate of 0.039 tokens/s is not '0.0'.

    >>> figure("en")(1818.4), figure("en")(0.0393, 1), figure("ru")(0.0393), figure("en")(None)
    ('1,818', '0.039', '0,039', '–')
    """
    shown = number(locale)

    def formatted(value: int | float | None, digits: int = 0) -> str:
        return str(shown(value, digits if value is None else figure_places(float(value), digits)))

    return formatted


def plain_decimal(locale: str) -> Any:
    """An exact decimal as written, up to 3 decimals, in the locale's format: '4.666' (en, as given), '4,666' (ru)."""
    from babel.numbers import format_decimal

    def formatted(value: Decimal | str | float | None) -> str:
        if value is None or value == "":
            return "–"
        if locale == "en":
            return str(value)
        return str(format_decimal(Decimal(str(value)), format="#,##0.###", locale=locale))

    return formatted


def significant(locale: str) -> Any:
    """A number to 3 significant figures, never in exponent form, as the CLI writes a step and its parts: from 100
    up whole ('1,504'; ru '1\xa0504'), below it three figures ('43.6', '0.0603'; ru '0,0603'), below 0.001 '<0.001'.

    >>> en, ru = significant("en"), significant("ru")
    >>> en(3957.2), en(43.62), en(0.060274), en(0.00002), ru(0.060274)
    ('3,957', '43.6', '0.0603', '<0.001', '0,0603')
    """
    from math import floor, log10

    from babel.numbers import format_decimal

    def formatted(value: float | None) -> str:
        if value is None:
            return "–"
        if 0 < abs(value) < 0.001:
            return "<" + str(format_decimal(0.001, format="0.###", locale=locale))
        rounded = float(f"{value:.3g}")
        decimals = 0 if abs(value) >= 100 or value == 0 else max(0, 2 - floor(log10(abs(rounded))))
        return str(format_decimal(round(value, decimals), format="#,##0." + "#" * decimals if decimals else "#,##0",
                                  locale=locale))

    return formatted


def percent(locale: str) -> Any:
    """A fraction as a percentage with one decimal: en '45.3%', ru '45,3%', rounded in each as Python's ``{:.1%}``
    (as :func:`number`; Babel's own half-even rounding gave ru '1,0%' for en's '1.1%').

    >>> percent("en")(0.453), percent("ru")(0.453), percent("en")(0.0105), percent("ru")(0.0105)
    ('45.3%', '45,3%', '1.1%', '1,1%')
    """
    from babel.numbers import format_percent

    def formatted(value: float | None) -> str:
        if value is None:
            return "–"
        if locale == "en":
            return f"{value:.1%}"
        rounded = Decimal(f"{value:.1%}"[:-1]) / 100  # Python's rounding, as the en branch; Babel only localizes
        return str(format_percent(rounded, format="#,##0.0%", locale=locale))

    return formatted


def duration(locale: str) -> Any:
    """A time in seconds in the unit a person reads it in, as the CLI writes it (:func:`anchorgpu.units.duration_in_unit`:
    years from 365 days, days from 24 h, hours from an hour, minutes from a minute, else seconds), with one decimal
    (two significant digits where that shows fewer, :func:`figure`) and the unit in the page's words: en '16.2 days',
    '1.2 min', ru '16,2\xa0дн.', '52,1\xa0ч', '22\xa0254,0\xa0г.'.

    >>> duration("en")(1_382_400), duration("en")(72), duration("ru")(187_560), duration("en")(None)
    ('16.0\xa0days', '1.2\xa0min', '2,2\xa0дн.', '–')
    >>> duration("en")(701_803_479_600), duration("ru")(701_803_479_600)
    ('22,254.0\xa0years', '22\xa0254,0\xa0г.')
    """
    from anchorgpu.units import duration_in_unit
    from anchorgpu.web.i18n import PageText

    text = PageText(locale)
    units = {"years": text.gettext("years"), "days": text.gettext("days"), "h": text.gettext("h"),
             "min": text.gettext("min"), "s": text.gettext("s")}
    shown = figure(locale)

    def formatted(seconds: float | None) -> str:
        if seconds is None:
            return "–"
        value, unit = duration_in_unit(float(seconds))
        return f"{shown(value, 1)}\xa0{units[unit]}"

    return formatted


def duration_scale(locale: str) -> Any:
    """The scale and the unit word that write a time (seconds) as :func:`duration` writes it: a table cell's band
    and floor under its figure in the figure's own unit (``11.3 min`` over ``10.1–12.7 min``), en and ru.

    >>> duration_scale("en")(676), duration_scale("ru")(9_863_000)
    ((0.016666666666666666, 'min'), (1.1574074074074073e-05, 'дн.'))
    """
    from anchorgpu.units import duration_unit
    from anchorgpu.web.i18n import PageText

    text = PageText(locale)

    def scale(seconds: float) -> tuple[float, str]:
        unit, size = duration_unit(float(seconds))
        return 1.0 / size, text.gettext(unit)

    return scale


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
