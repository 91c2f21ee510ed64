"""Money as every face takes it (the CLI's text, the API's body and query, the page's forms): an exact amount in
USD, a number or a plain decimal string (ASCII digits, one dot) inside the bounds of its field (:data:`MONEY`), else
one line naming the option. Pure; stdlib only. The other typed values are :mod:`anchorgpu.validation`'s."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal

from anchorgpu.errors import InvalidInput, said

__all__ = ["MONEY", "MONEY_TEXT_PATTERN", "MoneyRule", "usd_amount"]


@dataclass(frozen=True, slots=True)
class MoneyRule:
    """Bounds of one amount of money every face accepts: ``low`` (excluded when ``low_exclusive``) to ``high``, at
    most ``places`` decimals (None: any). A negative amount passes only where ``low`` is negative."""

    low: Decimal
    high: Decimal
    low_exclusive: bool = False
    places: int | None = None


MONEY: dict[str, MoneyRule] = {
    "max_usd": MoneyRule(Decimal(0), Decimal(10**9), low_exclusive=True),
    "expected_total_usd": MoneyRule(Decimal(0), Decimal(10**12), places=2),
    "max_usd_per_gpu_hour": MoneyRule(Decimal(0), Decimal(10**6)),
}
"""The money fields of requests and options (same names on every face; the CLI's flags with dashes)."""

MONEY_TEXT_PATTERN = r"^-?[0-9]{1,15}(\.[0-9]{1,15})?$"
"""An amount written as text: ASCII digits, at most one dot with digits on both sides, a leading minus only
where negatives make sense (:class:`MoneyRule`). No spaces, exponent, plus sign, separators or currency sign."""
_MONEY_TEXT_RE = re.compile(MONEY_TEXT_PATTERN, re.ASCII)


def usd_amount(value: object, *, field: str = "max_usd", flag: str | None = None) -> Decimal:
    """An exact amount in USD for ``MONEY[field]``, from a number (a JSON number, read as written) or a plain
    decimal string, for every face: the CLI's text, the API's body and query, the page's forms.

    ``" 100 "``, ``"1e3"``, ``"+5"``, ``"1,5"`` (a decimal comma to some readers, a thousands separator to others),
    ``"$20"``, ``"１００"`` or ``"١٠٠"``, a boolean, NaN or infinity are refused in one line naming ``flag`` (default:
    the option, ``--max-usd``; ``""`` leaves it to the caller, as the API's field errors do).

    >>> usd_amount("20000.50"), usd_amount(100, field="max_usd_per_gpu_hour")
    (Decimal('20000.50'), Decimal('100'))
    >>> usd_amount("1e3")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: --max-usd '1e3': expected an amount in USD written with ASCII digits and at most one dot, e.g. 20000.50 (no spaces, exponent, sign or separators)
    """
    rule = MONEY[field]
    label = f"--{field.replace('_', '-')}" if flag is None else flag
    shown = repr(value[:40] + ("…" if len(value) > 40 else "")) if isinstance(value, str) else repr(value)
    where = f"{label} {shown}" if label else shown
    written = said("an amount in USD written with ASCII digits and at most one dot, e.g. 20000.50 (no spaces, "
                   "exponent, sign or separators)")
    amount: Decimal | None = None
    if isinstance(value, bool):
        pass
    elif isinstance(value, Decimal | int):
        amount = Decimal(value)
    elif isinstance(value, float):
        amount = Decimal(repr(value)) if math.isfinite(value) else None  # the shortest decimal that reads back
    elif isinstance(value, str) and _MONEY_TEXT_RE.fullmatch(value):
        amount = Decimal(value)  # a minus where negatives make no sense is refused by the bounds below
    if amount is None or not amount.is_finite():
        raise InvalidInput(said("{where}: expected {written}", where=where, written=written))
    above = (rule.low < amount) if rule.low_exclusive else (rule.low <= amount)
    if not (above and amount <= rule.high):
        if rule.low_exclusive:
            raise InvalidInput(said("{where}: expected an amount above {low:,} and at most {high:,} USD", where=where,
                                    low=rule.low, high=rule.high))
        raise InvalidInput(said("{where}: expected an amount from {low:,} to {high:,} USD", where=where, low=rule.low,
                                high=rule.high))
    if rule.places is not None and amount.as_tuple().exponent < -rule.places:  # type: ignore[operator]
        raise InvalidInput(said("{where}: at most {places} decimal places", where=where, places=rule.places))
    return amount
