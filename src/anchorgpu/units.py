"""Units shared by every area: bytes, money and rental terms. Pure; stdlib only.

Names carry their units (``_bytes``, ``_s``, ``_usd``). Bytes are integers everywhere inside
AnchorGPU; conversion to GB/GiB happens only for display. Money is :class:`decimal.Decimal` USD,
rounded by :func:`round_usd` and nowhere else.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Literal, TypeVar

from anchorgpu.errors import InvalidTerm, PartialGpuRequested, said

__all__ = [
    "GB",
    "GIB",
    "HOURS_PER_COMPARISON_MONTH",
    "HOURS_PER_RENTAL_MONTH",
    "HOURS_PER_WEEK",
    "MAX_TERM_HOURS",
    "KIB",
    "MB",
    "MIB",
    "TB",
    "TIB",
    "Term",
    "at_least",
    "bytes_per_s_to_gbit_per_s",
    "ceil_div",
    "clamp",
    "duration_in_unit",
    "duration_unit",
    "fmt_duration",
    "fmt_bytes",
    "figure_places",
    "fmt_figure",
    "fmt_given",
    "fmt_usd",
    "gbit_per_s_to_bytes_per_s",
    "parse_term",
    "quotable_term",
    "require_whole_gpus",
    "round_figure",
    "round_usd",
    "round_usd_rate",
    "usd",
]

KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12
KIB, MIB, GIB, TIB = 2**10, 2**20, 2**30, 2**40

HOURS_PER_WEEK = 168
"""A rental week is exactly 7 days."""
HOURS_PER_RENTAL_MONTH = 720
"""A rental month is exactly 30 days: what a monthly term lasts and bills."""
HOURS_PER_COMPARISON_MONTH = 730
"""Average hours in a calendar month: used only for the "per GPU-hour" comparison figure."""

CENT = Decimal("0.01")


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling division for non-negative numerator and positive denominator.

    >>> ceil_div(10, 4)
    3
    """
    return -(-numerator // denominator)


N = TypeVar("N", int, float)


def at_least(value: N, low: N) -> N:
    """``max(low, value)`` (the same object, ties included) by one comparison: the builtin takes a tuple and an
    iterator, several times a comparison's cost, which shows on the planner's hot paths.

    >>> at_least(0, 1), at_least(5, 1), at_least(0.5, 1.0)
    (1, 5, 1.0)
    """
    return value if value > low else low


def clamp(value: int, low: int, high: int) -> int:
    """``max(low, min(value, high))`` for whole numbers with ``low <= high``, by two comparisons (:func:`at_least`).

    >>> clamp(0, 1, 8), clamp(5, 1, 8), clamp(9, 1, 8)
    (1, 5, 8)
    """
    return low if value < low else high if value > high else value


def usd(value: str | int | Decimal) -> Decimal:
    """Exact Decimal from a string or integer (never from a float).

    >>> usd("2190")
    Decimal('2190')
    """
    if isinstance(value, float):  # floats cannot carry money exactly
        raise TypeError("money must be given as str, int or Decimal, not float")
    return Decimal(value)


def fmt_usd(amount: Decimal | str) -> str:
    """Money for a sentence, as every face prints it: ``$2,190.00``.

    >>> fmt_usd(Decimal("2190")), fmt_usd("547.5")
    ('$2,190.00', '$547.50')
    """
    return f"${round_usd(Decimal(amount)):,.2f}"


def round_usd(amount: Decimal) -> Decimal:
    """The one rounding rule for money: to the cent, half to even (banker's rounding).

    >>> round_usd(Decimal("2190") / 730)
    Decimal('3.00')
    >>> round_usd(Decimal("0.125"))
    Decimal('0.12')
    """
    return amount.quantize(CENT, rounding=ROUND_HALF_EVEN)


RATE_SIGNIFICANT_DIGITS = 4
"""Significant digits a price per unit (USD a million tokens) keeps: rounded to the cent, $0.0065 would read $0.01."""


def round_usd_rate(amount: Decimal) -> Decimal:
    """A price per unit (not an amount charged): to :data:`RATE_SIGNIFICANT_DIGITS` significant digits, never
    coarser than the cent, half to even. Amounts charged keep :func:`round_usd`.

    >>> round_usd_rate(Decimal("0.0065271")), round_usd_rate(Decimal("0.21519")), round_usd_rate(Decimal("1234.567"))
    (Decimal('0.006527'), Decimal('0.2152'), Decimal('1234.57'))
    """
    if not amount:
        return amount.quantize(CENT)
    places = max(2, RATE_SIGNIFICANT_DIGITS - 1 - amount.adjusted())
    return amount.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


TermUnit = Literal["hour", "week", "month"]
_TERM_HOURS: dict[str, int] = {"hour": 1, "week": HOURS_PER_WEEK, "month": HOURS_PER_RENTAL_MONTH}
_TERM_ALIASES: dict[str, TermUnit] = {
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "w": "week", "wk": "week", "week": "week", "weeks": "week",
    "mo": "month", "mon": "month", "month": "month", "months": "month",
}
_TERM_RE = re.compile(r"^\s*([0-9]{1,9})\s*([a-z]+)\s*$", re.ASCII)
"""ASCII digits only (``١h`` or ``１h`` are refused, not read as 1 h); at most nine of them."""


@dataclass(frozen=True, slots=True)
class Term:
    """A fixed rental term: ``count`` hours, weeks (168 h) or months (720 h)."""

    unit: TermUnit
    count: int

    @property
    def hours(self) -> int:
        return self.count * _TERM_HOURS[self.unit]

    def __str__(self) -> str:
        return f"{self.count}{ {'hour': 'h', 'week': 'w', 'month': 'month'}[self.unit] }"


_DAY_ALIASES = ("d", "day", "days")
DAYS_PER_WEEK = HOURS_PER_WEEK // 24
DAYS_PER_RENTAL_MONTH = HOURS_PER_RENTAL_MONTH // 24


def _days_term(text: str, days: int) -> Term:
    """Days as the catalog's units: a whole number of months (30 days) or else of weeks (7 days)."""
    if days % DAYS_PER_RENTAL_MONTH == 0:
        return Term(unit="month", count=days // DAYS_PER_RENTAL_MONTH)
    if days % DAYS_PER_WEEK == 0:
        return Term(unit="week", count=days // DAYS_PER_WEEK)
    raise InvalidTerm(
        said("term {text!r}: days are priced only as whole weeks (7 days) or whole months (30 days, as the "
             "catalog defines a month); for exactly {days} day{value} ask for {value2}h", text=text, days=days,
             value='' if days == 1 else 's', value2=days * 24))


def parse_term(text: str) -> Term:
    """Parse ``1h``, ``36 hours``, ``2w``, ``1month``, ``3 months``; days when they make whole weeks or months
    (``7 days`` = 1 week, ``30 days`` = 1 month, ``60d`` = 2 months).

    >>> parse_term("2w").hours
    336
    >>> parse_term("1month").hours
    720
    >>> str(parse_term("7 days")), str(parse_term("30 days")), str(parse_term("14d"))
    ('1w', '1month', '2w')
    """
    match = _TERM_RE.match(text.lower()) if isinstance(text, str) else None
    if not match or (match.group(2) not in _TERM_ALIASES and match.group(2) not in _DAY_ALIASES):
        raise InvalidTerm(said("term {text!r}: expected N hours, N weeks or N months, e.g. '8h', '2w', '1month' "
                               "(days as whole weeks or months: '7 days', '30 days')", text=text))
    count = int(match.group(1))
    if count <= 0:
        raise InvalidTerm(said("term {text!r}: the count must be a positive whole number", text=text))
    if match.group(2) in _DAY_ALIASES:
        return _days_term(text, count)
    return Term(unit=_TERM_ALIASES[match.group(2)], count=count)


MAX_TERM_HOURS = 10 * 8_760
"""Longest term one quote, extension or recommendation prices at once: 10 years of hours."""


def quotable_term(term: Term | str) -> Term:
    """``term`` parsed, refusing one longer than :data:`MAX_TERM_HOURS` (what every face prices must be quotable).

    >>> quotable_term("1month").hours
    720
    >>> quotable_term("99999months")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidTerm: term 99999month: at most 87,600 hours (10 years) can be quoted at once
    """
    parsed = term if isinstance(term, Term) else parse_term(term)
    if parsed.hours > MAX_TERM_HOURS:
        raise InvalidTerm(said("term {parsed}: at most {MAX_TERM_HOURS:,} hours (10 years) can be quoted at once",
                               parsed=parsed, MAX_TERM_HOURS=MAX_TERM_HOURS))
    return parsed


def require_whole_gpus(gpus: float | int, *, field: str = "gpus") -> int:
    """Whole GPUs only: AnchorGPU offers no MIG slices, vGPU or time-slicing.

    >>> require_whole_gpus(8)
    8
    """
    if isinstance(gpus, bool) or not isinstance(gpus, int | float) or not math.isfinite(gpus) or gpus != int(gpus):
        raise PartialGpuRequested(
            said("{field}={gpus!r}: only whole GPUs are offered (no MIG slices, vGPU or time-slicing)", field=field,
                 gpus=gpus)
        )
    if gpus < 1:
        raise PartialGpuRequested(said("{field}={gpus!r}: at least one whole GPU is needed", field=field, gpus=gpus))
    return int(gpus)


def fmt_bytes(n_bytes: int | float, *, binary: bool = True) -> str:
    """Human-readable size for display only.

    >>> fmt_bytes(80 * GIB)
    '80.00 GiB'
    >>> fmt_bytes(141 * GB, binary=False)
    '141.00 GB'
    >>> fmt_bytes(1023.01 * 1024 * GIB), fmt_bytes(5000 * 1024**5)  # thousands separated, as every count is
    ('1,023.01 TiB', '5,000.00 PiB')
    """
    step, names = (1024, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"]) if binary else (1000, ["B", "kB", "MB", "GB", "TB", "PB"])
    value = float(n_bytes)
    for name in names:
        if abs(value) < step or name == names[-1]:
            return f"{value:,.2f} {name}" if name != "B" else f"{int(value):,} B"
        value /= step
    raise AssertionError("unreachable")


def gbit_per_s_to_bytes_per_s(gbit_per_s: float) -> float:
    """Bytes a second of a link stated in Gb/s (decimal gigabits, as NICs and fabrics are sold).

    >>> gbit_per_s_to_bytes_per_s(400)
    50000000000.0
    """
    return gbit_per_s * 1e9 / 8


def bytes_per_s_to_gbit_per_s(bytes_per_s: float) -> float:
    """Gb/s of a link carrying ``bytes_per_s`` (the inverse of :func:`gbit_per_s_to_bytes_per_s`).

    >>> bytes_per_s_to_gbit_per_s(50e9)
    400.0
    """
    return bytes_per_s * 8 / 1e9


def figure_places(value: float, places: int) -> int:
    """The decimal places that write ``value`` with at least two significant digits where ``places`` would show fewer:
    ``places`` for 12.5 at 0 places, 1 for 5.37, 3 for 0.0393 (a rate of 0.04 tok/s is not ``0``), ``places`` for 0
    and for what is not finite.

    >>> figure_places(12.5, 0), figure_places(5.37, 0), figure_places(0.0393, 1), figure_places(0.0, 1)
    (0, 1, 3, 1)
    """
    if not math.isfinite(value) or value == 0 or abs(value) >= 10.0 ** (1 - places):
        return places
    return max(places, 1 - math.floor(math.log10(abs(value))))


def round_figure(value: float, places: int) -> float:
    """``value`` rounded to ``places`` decimals, or to two significant digits where that would keep fewer.

    >>> round_figure(1234.56, 1), round_figure(0.0393, 1), round_figure(0.123, 2)
    (1234.6, 0.039, 0.12)
    """
    return round(value, figure_places(value, places))


def fmt_figure(value: float, places: int) -> str:
    """``value`` with thousands separators and ``places`` decimals, or two significant digits where that would show
    fewer.

    >>> fmt_figure(42422.4, 0), fmt_figure(0.0393, 0), fmt_figure(5.37, 0)
    ('42,422', '0.039', '5.4')
    """
    return f"{value:,.{figure_places(value, places)}f}"


def fmt_given(value: object) -> str:
    """A number the user gave, as a refusal names it: a whole value without ``.0`` and with thousands separators (a
    flag typed ``1e9`` or ``10`` arrives as the float ``1e9`` or ``10.0``), any other as Python writes it shortest.

    >>> fmt_given(1e9), fmt_given(10.0), fmt_given(-5.0), fmt_given(33.3), fmt_given(1e-05), fmt_given(float("nan"))
    ('1,000,000,000', '10', '-5', '33.3', '1e-05', 'nan')
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        return repr(value)
    if isinstance(value, int) or (math.isfinite(value) and float(value).is_integer() and abs(value) < 1e21):
        return f"{int(value):,}"
    return f"{value:,}" if abs(value) >= 1000 and math.isfinite(value) else repr(value)


DURATION_UNITS: tuple[tuple[str, float], ...] = (
    ("years", 365 * 86_400.0), ("days", 86_400.0), ("h", 3_600.0), ("min", 60.0))
"""The units a time is shown in, largest first, with their seconds; below a minute, seconds (``"s"``). A year is
365 days, the year of the longest term a quote prices (:data:`MAX_TERM_HOURS`, 87,600 h = 10 of them): a run of
22,254 years reads as such, where "8,122,743.2 days" hid its size in its digits (stop60_qa26, left 3)."""


def duration_in_unit(seconds: float) -> tuple[float, str]:
    """``seconds`` in the largest unit of :data:`DURATION_UNITS` it reaches one of (years from 365 days, days from
    24 h, hours from 60 min, minutes from 60 s, else seconds): the number and the unit's key, for the CLI (``16.2 days``) and the
    pages (ru ``16,2 дн.``) to write alike.

    >>> duration_in_unit(1_382_400), duration_in_unit(72), duration_in_unit(5_400), duration_in_unit(30)
    ((16.0, 'days'), (1.2, 'min'), (1.5, 'h'), (30, 's'))
    """
    unit, size = duration_unit(seconds)
    return (seconds / size if size != 1.0 else seconds), unit


def fmt_duration(seconds: float) -> str:
    """``seconds`` as the CLI writes a time, in :func:`duration_in_unit`'s unit with one decimal.

    >>> fmt_duration(1_397_981), fmt_duration(676), fmt_duration(9_863_000), fmt_duration(701_803_479_600)
    ('16.2 days', '11.3 min', '114.2 days', '22,254.0 years')
    """
    value, unit = duration_in_unit(seconds)
    return f"{value:,.1f} {unit}"


def duration_unit(seconds: float) -> tuple[str, float]:
    """The unit :func:`duration_in_unit` writes ``seconds`` in and its size in seconds: a figure's band and bound
    written beside it in the same unit (``11.3 min (10.1-12.7 min)``), not each in its own.

    >>> duration_unit(676), duration_unit(30), duration_unit(9_863_000), duration_unit(365 * 86_400)
    (('min', 60.0), ('s', 1.0), ('days', 86400.0), ('years', 31536000.0))
    """
    for unit, size in DURATION_UNITS:
        if seconds >= size:
            return unit, size
    return "s", 1.0

