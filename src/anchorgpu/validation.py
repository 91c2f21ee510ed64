"""One validation path for what people type, shared by the CLI, the API and the page. Pure; stdlib only.

Every face refuses the same things with the same one-line reason before any computation or query:

- **ids** (quotes, allocations) are short ASCII tokens: :func:`is_valid_id` / :data:`ID_PATTERN`. A NUL byte
  or any other odd character can never name a stored row, so such an id is "not found" without asking the
  database (PostgreSQL refuses NUL in text outright);
- **text** is free of control characters (NUL included) and bounded in length: :func:`check_text`;
- **numbers** are finite and inside stated bounds (:data:`LIMITS`): :func:`whole_number` parses the CLI's
  ``1e12`` / ``8k`` spellings, :func:`finite_number` checks a float. The API's schema fields take their
  bounds from the same :data:`LIMITS`, so ``--tokens 1e309`` on the command line and ``"tokens": 1e309``
  in a request are refused by one rule.

>>> is_valid_id("al_0123abcd"), is_valid_id("q_\\x00")
(True, False)
>>> whole_number("8k", field="context", suffixes=BINARY_SUFFIXES)
8192
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from anchorgpu.errors import InvalidInput

__all__ = [
    "BINARY_SUFFIXES",
    "ID_MAX_LENGTH",
    "ID_PATTERN",
    "LIMITS",
    "Limit",
    "check_text",
    "control_character",
    "ascii_int",
    "bounded_int",
    "finite_number",
    "iso_instant",
    "usd_amount",
    "is_valid_id",
    "whole_number",
]

ID_MAX_LENGTH = 100
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
"""Quote and allocation ids (``q_…``, ``al_…``): ASCII letters, digits, ``_`` and ``-``, at most 100."""
_ID_RE = re.compile(ID_PATTERN, re.ASCII)


def is_valid_id(text: object) -> bool:
    """Whether ``text`` can be the id of a stored quote or allocation (no query needed to say no)."""
    return isinstance(text, str) and _ID_RE.fullmatch(text) is not None


def control_character(text: str) -> str | None:
    """The first control character (NUL, escapes, lone surrogates) in ``text``, shown escaped, or None.

    >>> control_character("ok"), control_character("a\\x00b")
    (None, "'\\\\x00'")
    """
    for ch in text:
        if unicodedata.category(ch) in ("Cc", "Cs"):
            return ascii(ch)
    return None


def check_text(value: str, *, field: str, max_length: int, min_length: int = 0) -> str:
    """``value`` unchanged, or :class:`InvalidInput` when too long, too short or holding a control character."""
    bad = control_character(value)
    if bad is not None:
        raise InvalidInput(f"{field}: control characters such as {bad} are not allowed")
    if not min_length <= len(value) <= max_length:
        raise InvalidInput(f"{field}: expected {min_length}-{max_length} characters, got {len(value)}")
    return value


@dataclass(frozen=True, slots=True)
class Limit:
    """Inclusive bounds of one number every face accepts."""

    low: float
    high: float


LIMITS: dict[str, Limit] = {
    "context": Limit(1, 10_000_000),
    "seq": Limit(1, 10_000_000),
    "prompt": Limit(1, 10_000_000),
    "output_tokens": Limit(1, 10_000_000),
    "tokens": Limit(1, 10**15),
    "train_tokens": Limit(1, 10**15),
    "global_batch": Limit(1, 10**12),
    "gpus": Limit(1, 65_536),
    "max_usd": Limit(0, 10**9),
    "min_tokens_per_s_per_user": Limit(0, 1e7),
    "concurrency": Limit(1, 1_000_000),
    "micro_batch": Limit(1, 100_000),
    "lora_rank": Limit(1, 65_536),
    "max_num_batched_tokens": Limit(1, 10_000_000),
    "images": Limit(1, 10_000),
}
"""Bounds of the numbers the CLI parses from text and the API receives as JSON (same names, no dashes)."""

BINARY_SUFFIXES: dict[str, int] = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
"""Token counts: ``8k`` = 8,192, ``1m`` = 1,048,576 (binary, as context lengths are written)."""
_NUMBER_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]?)\s*$", re.ASCII)


def whole_number(text: str, *, field: str, suffixes: dict[str, int] | None = None, example: str = "1000000",
                 noun: str = "a whole number") -> int:
    """A whole count typed as ``1000000``, ``1e12``, ``2.5e9`` or (with ``suffixes``) ``8k``, inside ``LIMITS[field]``.

    ASCII digits only; ``nan``, ``inf``, ``1e309``, negative, fractional and out-of-range values are refused.

    >>> whole_number("1e12", field="tokens")
    1000000000000
    >>> whole_number("nan", field="tokens")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: --tokens 'nan': expected a whole number such as 1000000
    """
    flag = f"--{field.replace('_', '-')}"
    match = _NUMBER_RE.match(text) if isinstance(text, str) else None
    scale = (suffixes or {"": 1}).get(match.group(2).lower()) if match else None
    if match is None or scale is None:
        raise InvalidInput(f"{flag} {text!r}: expected {noun} such as {example}")
    mantissa = match.group(1)
    if len(mantissa) > 40:  # far beyond any bound; also keeps int() away from its digit limit
        raise InvalidInput(f"{flag} {text!r}: expected {noun} such as {example}")
    if "e" in mantissa.lower() or "." in mantissa:
        value = float(mantissa) * scale
        if not math.isfinite(value) or not value.is_integer():
            raise InvalidInput(f"{flag} {text!r}: expected {noun} such as {example}")
        number = int(value)
    else:
        number = int(mantissa) * scale
    limit = LIMITS.get(field)
    if limit is not None and not limit.low <= number <= limit.high:
        raise InvalidInput(f"{flag} {text!r}: expected a whole number from {limit.low:,.0f} to {limit.high:,.0f}")
    if number < 1:
        raise InvalidInput(f"{flag} {text!r}: expected a whole number of at least 1")
    return number


def ascii_int(text: str) -> int:
    """``int(text)`` for ASCII digits only (Python's ``int`` also reads ``'١٢'`` or ``'１２'``); ``ValueError`` otherwise.

    >>> ascii_int(" 12 ")
    12
    """
    cleaned = text.strip()
    if not re.fullmatch(r"-?[0-9]{1,12}", cleaned, re.ASCII):
        raise ValueError(f"{text!r} is not a whole number written in ASCII digits")
    return int(cleaned)


def bounded_int(value: int | None, *, field: str, flag: str | None = None) -> int | None:
    """``value`` (or None) when inside ``LIMITS[field]``, else :class:`InvalidInput` naming the option.

    >>> bounded_int(8, field="concurrency")
    8
    """
    if value is None:
        return None
    limit = LIMITS[field]
    if isinstance(value, bool) or not isinstance(value, int) or not limit.low <= value <= limit.high:
        shown = str(value) if len(str(value)) <= 30 else str(value)[:30] + "…"
        raise InvalidInput(f"{flag or '--' + field.replace('_', '-')} {shown}: expected a whole number from {limit.low:,.0f} to {limit.high:,.0f}")
    return value


def usd_amount(text: str, *, field: str = "max_usd") -> Decimal:
    """An amount in USD typed as ``20000``, ``20,000`` or ``$20000.50``: finite, above 0, inside ``LIMITS[field]``.

    >>> usd_amount("$20,000")
    Decimal('20000')
    """
    flag = f"--{field.replace('_', '-')}"
    cleaned = text.replace(",", "").strip().lstrip("$") if isinstance(text, str) else ""
    if not re.fullmatch(r"[0-9]{1,12}(\.[0-9]{1,12})?", cleaned, re.ASCII):
        raise InvalidInput(f"{flag} {text!r}: expected an amount in USD such as 20000")
    amount = Decimal(cleaned)
    limit = LIMITS[field]
    if not limit.low < amount <= limit.high:
        raise InvalidInput(f"{flag} {text!r}: expected an amount above {limit.low:,.0f} and at most {limit.high:,.0f} USD")
    return amount


def finite_number(value: float, *, field: str, low: float | None = None, high: float | None = None,
                  flag: str | None = None) -> float:
    """``value`` when finite and inside ``[low, high]`` (default: ``LIMITS[field]``), else :class:`InvalidInput`.

    >>> finite_number(0.5, field="fragmentation", low=0, high=0.5)
    0.5
    """
    limit = LIMITS.get(field)
    lo = low if low is not None else (limit.low if limit else -math.inf)
    hi = high if high is not None else (limit.high if limit else math.inf)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not lo <= value <= hi:
        raise InvalidInput(f"{flag or '--' + field.replace('_', '-')} {value!r}: expected a finite number from {lo:g} to {hi:g}")
    return float(value)


_INSTANT_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9:.,]+(Z|[+-][0-9]{2}:?[0-9]{2})?$", re.ASCII)


def iso_instant(text: object, *, flag: str) -> datetime:
    """An instant written in ISO 8601 with its time zone (``2027-01-31T00:00:00Z``, ``…+02:00``), for every face.

    A Unix timestamp, a date without a time, a week date or non-ASCII digits are refused: the CLI refused
    ``1893456000`` while the API read it as 2030 (pydantic's datetime takes numbers and digit strings).

    >>> iso_instant("2027-01-31T00:00:00Z", flag="--expires-at").isoformat()
    '2027-01-31T00:00:00+00:00'
    >>> iso_instant("1893456000", flag="expires_at")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: expires_at '1893456000': expected an ISO 8601 instant with a time zone, e.g. 2027-01-31T00:00:00Z
    """
    example = "e.g. 2027-01-31T00:00:00Z"
    if not isinstance(text, str) or len(text) > 40 or _INSTANT_RE.fullmatch(text.strip()) is None:
        shown = repr(text[:40]) if isinstance(text, str) else repr(text)
        raise InvalidInput(f"{flag} {shown}: expected an ISO 8601 instant with a time zone, {example}")
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidInput(f"{flag} {text!r}: expected an ISO 8601 instant with a time zone, {example}") from exc
    if value.tzinfo is None:
        raise InvalidInput(f"{flag} {text!r}: give a time zone, {example}")
    return value

