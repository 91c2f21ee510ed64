"""One validation path for what people type, shared by the CLI, the API and the page. Pure; stdlib only.

Every face refuses the same things with the same one-line reason before any computation or query:

- **ids** (quotes, allocations) are short ASCII tokens: :func:`is_valid_id` / :data:`ID_PATTERN`. A NUL byte
  or any other odd character can never name a stored row, so such an id is "not found" without asking the
  database (PostgreSQL refuses NUL in text outright);
- **text** is free of control characters (NUL included) and bounded in length: :func:`check_text`;
- **numbers** are finite and inside stated bounds (:data:`LIMITS`): :func:`whole_number` parses the CLI's
  ``1e12`` / ``8k`` spellings, :func:`finite_number` checks a float. The API's schema fields take their
  bounds from the same :data:`LIMITS`, so ``--tokens 1e309`` on the command line and ``"tokens": 1e309``
  in a request are refused by one rule;
- **money** is exact: :func:`~anchorgpu.money_rules.usd_amount` takes a number or a plain decimal string (ASCII
  digits, one dot) inside :data:`~anchorgpu.money_rules.MONEY`, on every face (the API's money fields call it too).

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

from anchorgpu.errors import InvalidInput, said
from anchorgpu.units import fmt_given

__all__ = [
    "BINARY_SUFFIXES",
    "ID_MAX_LENGTH",
    "ID_PATTERN",
    "LIMITS",
    "Limit",
    "CONTROL_CHARACTER_REASON",
    "check_text",
    "comma_list",
    "control_character",
    "ascii_int",
    "bounded_int",
    "finite_number",
    "fraction_typed",
    "iso_instant",
    "pattern_reason",
    "is_valid_id",
    "is_valid_idempotency_key",
    "whole_number",
]

PIXEL_SIZE_REASON = "expected WIDTHxHEIGHT in pixels, e.g. 1024x1024"
_PIXEL_SIZE_PATTERN = re.compile(r"\^\[0-9\]\{\d+,\d+\}x\[0-9\]\{\d+,\d+\}\$")
CONTROL_CHARACTER_REASON = "must not contain control characters (a NUL, a tab, a line break)"
_NO_CONTROL_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""The text fields' pattern (``api.schemas_base.TEXT_PATTERN``, the allocation route's ``model``): no control character."""


def pattern_reason(pattern: object) -> str | None:
    """What a schema field's ``pattern`` asks for, in words, where pydantic's refusal would show the regular
    expression itself ("String should match pattern '^[0-9]{1,5}x[0-9]{1,5}$'", or a NUL typed in a page's field:
    "'^[^\\x00-\\x1f\\x7f]*$'"); None for a pattern without words.

    >>> pattern_reason("^[0-9]{1,5}x[0-9]{1,5}$"), pattern_reason("^[a-z]+$")
    ('expected WIDTHxHEIGHT in pixels, e.g. 1024x1024', None)
    >>> pattern_reason(_NO_CONTROL_PATTERN)
    'must not contain control characters (a NUL, a tab, a line break)'
    """
    if not isinstance(pattern, str):
        return None
    if pattern == _NO_CONTROL_PATTERN:
        return CONTROL_CHARACTER_REASON
    return PIXEL_SIZE_REASON if _PIXEL_SIZE_PATTERN.fullmatch(pattern) else None


ID_MAX_LENGTH = 100
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
"""Quote and allocation ids (``q_…``, ``al_…``): ASCII letters, digits, ``_`` and ``-``, at most 100."""
_ID_RE = re.compile(ID_PATTERN, re.ASCII)


def is_valid_id(text: object) -> bool:
    """Whether ``text`` can be the id of a stored quote or allocation (no query needed to say no)."""
    return isinstance(text, str) and _ID_RE.fullmatch(text) is not None


def is_valid_idempotency_key(text: object) -> bool:
    """Whether ``text`` can be an idempotency key: 1-255 printable ASCII characters (the API's header, the CLI's
    ``--idempotency-key``).

    >>> is_valid_idempotency_key("order-42"), is_valid_idempotency_key(""), is_valid_idempotency_key("a\\x00b")
    (True, False, False)
    """
    return isinstance(text, str) and 1 <= len(text) <= 255 and all(" " <= ch <= "~" for ch in text)


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
        raise InvalidInput(said("{field}: control characters such as {bad} are not allowed", field=field, bad=bad))
    if not min_length <= len(value) <= max_length:
        raise InvalidInput(said("{field}: expected {min_length}-{max_length} characters, got {len}", field=field,
                                min_length=min_length, max_length=max_length, len=len(value)))
    return value


def comma_list(text: str | None, *, flag: str) -> tuple[str, ...]:
    """The entries of a comma list such as ``bf16,fp8`` (trimmed, lower-case, each once, in order); () for None (the
    default). A list given with no entry (``''``, ``','``) is refused: plan refuses ``--weights ''``, and taking it
    as the default answered a question the user did not ask.

    >>> comma_list(" BF16, fp8,bf16 ", flag="--weights"), comma_list(None, flag="--weights")
    (('bf16', 'fp8'), ())
    """
    if text is None:
        return ()
    entries = tuple(dict.fromkeys(x.strip().lower() for x in text.split(",") if x.strip()))
    if not entries:
        raise InvalidInput(said("{flag} {text!r}: no entry listed; give one or more, comma-separated (e.g. "
                                "bf16,fp8), or leave the option out for the default", flag=flag, text=text))
    return entries


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
    "tp": Limit(1, 1024),  # the layout's counts; the GPUs they make together stay within "gpus" (planner)
    "pp": Limit(1, 1024),
    "dp": Limit(1, 65_536),
    "ep": Limit(1, 1024),
    "cp": Limit(1, 1024),
    "virtual_stages": Limit(1, 1024),
    "max_usd": Limit(0, 10**9),
    "min_tokens_per_s_per_user": Limit(0, 1e7),  # above 0 (positive_number): a floor of 0 is no floor
    "max_ttft_s": Limit(0, 86_400),  # above 0; a day at most
    "concurrency": Limit(1, 1_000_000),
    "micro_batch": Limit(1, 100_000),
    "lora_rank": Limit(1, 65_536),
    "max_num_batched_tokens": Limit(1, 10_000_000),
    "max_num_seqs": Limit(1, 1_000_000),
    "images": Limit(1, 10_000),
    "top": Limit(1, 100),
    "min_memory_gb": Limit(0, 1_000_000),
}
"""Bounds of the numbers the CLI parses from text and the API receives as JSON (same names, no dashes)."""

BINARY_SUFFIXES: dict[str, int] = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
"""Token counts: ``8k`` = 8,192, ``1m`` = 1,048,576 (binary, as context lengths are written)."""
DECIMAL_SUFFIXES: dict[str, int] = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
"""Training-token totals: ``300B`` = 3 x 10^11, ``15T`` = 1.5 x 10^13 (decimal, as datasets and papers count them)."""
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
    >>> whole_number("1.1k", field="prompt", suffixes={"k": 1024}, example="8192 or 8k")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: --prompt '1.1k' is 1,126.4 (k = 1,024), not a whole number; expected a whole number such as 8192 or 8k
    """
    flag = f"--{field.replace('_', '-')}"
    match = _NUMBER_RE.match(text) if isinstance(text, str) else None
    scale = (suffixes or {"": 1}).get(match.group(2).lower()) if match else None
    if match is None or scale is None:
        raise InvalidInput(said("{flag} {text!r}: expected {noun} such as {example}", flag=flag, text=text, noun=noun,
                                example=example))
    mantissa = match.group(1)
    if len(mantissa) > 40:  # far beyond any bound; also keeps int() away from its digit limit
        raise InvalidInput(said("{flag} {text!r}: expected {noun} such as {example}", flag=flag, text=text, noun=noun,
                                example=example))
    if "e" in mantissa.lower() or "." in mantissa:
        value = float(mantissa) * scale
        if not math.isfinite(value):
            raise InvalidInput(said("{flag} {text!r}: expected {noun} such as {example}", flag=flag, text=text,
                                    noun=noun, example=example))
        if not value.is_integer():  # say why a well-formed count is refused: 1.1k is 1,126.4 (k = 1,024)
            unit = match.group(2)
            raise InvalidInput(f"{flag} {text!r} is {value:,}" + (f" ({unit} = {scale:,})" if unit else "")
                               + f", not a whole number; expected {noun} such as {example}")
        number = int(value)
    else:
        number = int(mantissa) * scale
    limit = LIMITS.get(field)
    if limit is not None and not limit.low <= number <= limit.high:
        raise InvalidInput(said("{flag} {text!r}: expected a whole number from {low:,.0f} to {high:,.0f}", flag=flag,
                                text=text, low=limit.low, high=limit.high))
    if number < 1:
        raise InvalidInput(said("{flag} {text!r}: expected a whole number of at least 1", flag=flag, text=text))
    return number


def fraction_typed(text: object, suffixes: dict[str, int] | None = None) -> tuple[float, str, int] | None:
    """(value, suffix as typed, its scale) of a count written well but not whole, as :func:`whole_number` reads it
    (``'4.2M'`` with binary suffixes is 4,404,019.2 tokens, M = 1,048,576), so every face gives the same reason;
    None for anything else (a whole count, a typo, an unknown suffix, an infinite value).

    >>> fraction_typed("4.2M", {"": 1, "m": 1_048_576}), fraction_typed("1.5"), fraction_typed("4M", {"m": 1_048_576})
    ((4404019.2, 'M', 1048576), (1.5, '', 1), None)
    """
    match = _NUMBER_RE.match(text) if isinstance(text, str) else None
    scale = (suffixes or {"": 1}).get(match.group(2).lower()) if match else None
    if match is None or scale is None or len(match.group(1)) > 40:
        return None
    value = float(match.group(1)) * scale
    if not math.isfinite(value) or value.is_integer():
        return None
    return value, match.group(2), scale


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
        raise InvalidInput(said("{value} {shown}: expected a whole number from {low:,.0f} to {high:,.0f}",
                                value=flag or '--' + field.replace('_', '-'), shown=shown, low=limit.low,
                                high=limit.high))
    return value


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
        raise InvalidInput(said("{value} {fmt_given}: expected a finite number from {lo} to {hi}",
                                value=flag or '--' + field.replace('_', '-'), fmt_given=fmt_given(value),
                                lo=fmt_given(lo), hi=fmt_given(hi)))
    return float(value)


def positive_number(value: float, *, field: str, flag: str | None = None) -> float:
    """``value`` when finite, above 0 and at most ``LIMITS[field].high``, else :class:`InvalidInput` naming it.

    >>> positive_number(20.0, field="min_tokens_per_s_per_user")
    20.0
    >>> positive_number(0.0, field="max_ttft_s")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: --max-ttft-s 0: expected a finite number above 0, at most 86,400
    """
    high = LIMITS[field].high
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
            or not 0 < value <= high):
        raise InvalidInput(said("{value} {fmt_given}: expected a finite number above 0, at most {high}",
                                value=flag or '--' + field.replace('_', '-'), fmt_given=fmt_given(value),
                                high=fmt_given(high)))
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
        raise InvalidInput(said("{flag} {shown}: expected an ISO 8601 instant with a time zone, {example}", flag=flag,
                                shown=shown, example=example))
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError as exc:
        raise InvalidInput(said("{flag} {text!r}: expected an ISO 8601 instant with a time zone, {example}",
                                flag=flag, text=text, example=example)) from exc
    if value.tzinfo is None:
        raise InvalidInput(said("{flag} {text!r}: give a time zone, {example}", flag=flag, text=text, example=example))
    return value

