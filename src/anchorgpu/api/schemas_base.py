"""What every schema of the HTTP API shares: the response and request bases, request text and choice rules, the
money type, and the problem+json error with the ``responses=`` entries a route gives for it.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import InitErrorDetails, PydanticCustomError, ValidationError

from anchorgpu.errors import InvalidInput
from anchorgpu.money_rules import MONEY, MONEY_TEXT_PATTERN, usd_amount

__all__ = ["TEXT_PATTERN", "TOKENS_ALIAS", "Money", "Problem", "StrictChoice", "WholeTokens", "one_spelling", "problems"]


class _Schema(BaseModel):
    """Responses: keys other areas add to their JSON later pass through (the JSON contract grows freely)."""

    model_config = ConfigDict(extra="allow")


class _Request(BaseModel):
    """Requests: unknown fields are refused (a typo in an option must not be silently ignored), and types are
    strict: ``true`` or ``"3"`` is not a number, ``1`` is not a boolean (pydantic's strict mode; the page, whose
    form values are all text, validates the same models with ``strict=False``)."""

    model_config = ConfigDict(extra="forbid", strict=True)


TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""Request text: no control characters (NUL included). Lengths are bounded field by field."""


def _whole_choice(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number here")
    if isinstance(value, float):  # as every strict int field refuses it ("context": 1000.0)
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


StrictChoice = BeforeValidator(_whole_choice)
"""For ``Literal[0, 1, …]`` fields, where pydantic would otherwise take ``true`` or ``1.0`` as 1 even in strict mode
(a literal matches by equality): they refuse a boolean and a float, as the strict ``int`` fields beside them do."""


def _exact_integer(value: Any) -> Any:
    """A token count written as a JSON number with an exponent or a fraction part (``1e10``, ``4194304.0``) as the
    integer it is exactly; any other number is refused in one line that says how to write it, and a finite one
    what it is, as the CLI and the page say it ("4,404,019.2 is not a whole number of tokens")."""
    if not isinstance(value, float):
        return value  # an integer as it is; anything else to the strict int check (a boolean, a string: refused)
    if math.isfinite(value) and value.is_integer():
        return int(value)  # exact: a float holds every integer to 2**53, the bounds (LIMITS) stop at 10**15
    if math.isfinite(value):
        raise PydanticCustomError("int_type", "{value} is not a whole number of tokens; write a whole count, e.g. "
                                  "4194304 or 1e10", {"value": f"{value:,}"})
    raise PydanticCustomError("int_type", "Input should be a whole number of tokens, e.g. 10000000000 or 1e10")


WholeTokens = BeforeValidator(_exact_integer)
"""For the token counts (``tokens``, ``train_tokens``, ``global_batch``), written in exponent form as often as not:
a JSON number that is an exact integer is that integer (JSON has one number type, and JSON Schema's ``integer``,
which the OpenAPI document gives these fields, is "any number with a zero fractional part", so ``1e10`` is one),
as ``--tokens 1e10`` and the page's form take it (``2.5e9`` too); a fraction (``1000.5``) is refused in one line
that says how to write the count. The other integer fields stay strict (``"context": 1000.0`` is refused: no one writes a context that way)."""


TOKENS_ALIAS = "train_tokens"
"""The second spelling of the training tokens (the CLI's ``--tokens``): ``/v1/plan`` named the field ``tokens`` and
``/v1/recommend`` ``train_tokens``; both routes now take ``tokens`` and accept ``train_tokens`` as its alias."""


def _shown(value: Any) -> str:
    """A value as a refusal quotes it: a whole JSON number as the count it is (``5e6``: 5,000,000), else as sent.

    >>> _shown(5e6), _shown(6_000_000), _shown(2.5), _shown("1e9")
    ('5,000,000', '6,000,000', '2.5', "'1e9'")
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value == int(value):
        return f"{int(value):,}"
    return repr(value)


def one_spelling(data: Any, name: str, alias: str) -> Any:
    """A request body with the field ``name`` given once: ``alias`` (its other accepted spelling) alone is kept for
    the field's ``validation_alias`` to read; both with one value are that value; both with different values are a
    422 naming the field, never a silent pick of either.

    >>> one_spelling({"tokens": 5, "train_tokens": 5}, "tokens", "train_tokens"), one_spelling({"train_tokens": 5}, "tokens", "train_tokens")
    ({'tokens': 5}, {'train_tokens': 5})
    >>> one_spelling({"tokens": 5, "train_tokens": 6}, "tokens", "train_tokens")
    Traceback (most recent call last):
    ...
    pydantic_core._pydantic_core.ValidationError: 1 validation error for request
    tokens
      'tokens' 5 and its alias 'train_tokens' 6 are the same field given twice with different values: send one [type=alias_conflict, input_value=5, input_type=int]
    """
    if not (isinstance(data, dict) and name in data and alias in data):
        return data
    if data[name] != data[alias]:
        reason = PydanticCustomError(
            "alias_conflict", "'{name}' {value} and its alias '{alias}' {other} are the same field given twice with "
            "different values: send one", {"name": name, "alias": alias, "value": _shown(data[name]),
                                           "other": _shown(data[alias])})
        raise ValidationError.from_exception_data("request", [InitErrorDetails(type=reason, loc=(name,),
                                                                                input=data[name])])
    return {key: value for key, value in data.items() if key != alias}


def Money(field: str) -> Any:  # noqa: N802  (a type, as pydantic's constrained types are spelt)
    """The type of a money field of a request: a JSON number or a plain decimal string, read exactly by the one
    rule every face uses (:func:`anchorgpu.money_rules.usd_amount`, bounds in ``MONEY[field]``); anything else
    (``" 100 "``, ``"1e3"``, ``"+5"``, ``"1,5"``, non-ASCII digits, a boolean) is a 422 naming the field."""
    rule = MONEY[field]

    def check(value: Any) -> Any:
        if value is None:
            return None
        try:
            return usd_amount(value, field=field, flag="")
        except InvalidInput as exc:
            # the line with its message id (errors.said), so a page in another language says it in its own words
            raise PydanticCustomError("money", "{reason}", {"reason": exc.said or exc.message}) from None

    number: dict[str, Any] = {"type": "number", "maximum": float(rule.high)}
    number["exclusiveMinimum" if rule.low_exclusive else "minimum"] = float(rule.low)
    text = {"type": "string", "maxLength": 31,
            "pattern": MONEY_TEXT_PATTERN if rule.low < 0 else MONEY_TEXT_PATTERN.replace("^-?", "^")}
    return Annotated[Decimal, BeforeValidator(check), WithJsonSchema({"anyOf": [number, text]})]


class Problem(BaseModel):
    """An error (RFC 9457 problem+json). ``code`` is stable; ``detail`` is one line for people."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(description="URI reference naming the problem type")
    title: str = Field(description="HTTP reason phrase")
    status: int = Field(description="HTTP status code")
    detail: str = Field(description="One-line reason, naming the offending field or value")
    code: str = Field(description="Stable machine-readable code, e.g. 'unknown_gpu', 'idempotency_key_reused'")


_PROBLEM_TEXT = {
    400: "Malformed request (e.g. a missing or invalid Idempotency-Key header)",
    401: "Missing or invalid API key",
    404: "Not found (or not visible to this account)",
    409: "Conflict with the current state (expired quote, no capacity, request in progress …)",
    422: "Invalid input, or an idempotency key reused with a different request",
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses=`` entries for the problem+json answers a route can give."""
    return {s: {"model": Problem, "description": _PROBLEM_TEXT.get(s, "Error"), "content": {"application/problem+json": {}}} for s in statuses}
