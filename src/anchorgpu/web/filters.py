"""The Jinja2 filters every page's numbers, money, rates, dates, percentages and durations go through, in English
and in each locale's own formats (:mod:`anchorgpu.web.i18n`'s catalogues);
:func:`~anchorgpu.web.templating.environment` installs them."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from anchorgpu.units import figure_places

__all__ = ["duration", "duration_scale", "figure", "money", "number", "percent", "plain_decimal", "significant",
           "usd_rate", "when"]


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
