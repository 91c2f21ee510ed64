"""Numeric claims of glossary entries, declared in the data with the command that verifies them.

An entry may list ``[[entry.claims]]`` tables::

    [[entry.claims]]
    says = "fits one 48 GB L40S"                       # words of the entry's English text it backs
    run = ["plan", "llama-2-70b", "--task", "qlora", "--gpu", "l40s", "--gpus", "1"]
    expect = { fits = true, "per_gpu.weights_bytes" = { min = 35e9, max = 39e9 } }

``run`` is an ``anchorgpu`` command that only reads (its ``--json`` answer is checked; a ``quote`` is priced
without being stored); a command that is refused answers ``{"exit": CODE, "error": "the one line"}`` instead,
so a claim may also state a refusal. ``expect`` maps a path in that answer (dots between keys, list indexes as
numbers, ``#`` for a list's length, ``a+b`` for a sum; ``*.`` first: any item of a top-level list) to a value
(equal) or a table with ``min``/``max`` (inclusive bounds) and ``contains`` (a substring, case-insensitive).

The test suite runs every claim (``tests/glossary/test_claims.py``), so an entry cannot contradict the planner,
the catalog or the GPU data without a failing test. This module is pure: parsing and evaluation only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CLAIM_COMMANDS", "Claim", "evaluate", "lookup", "parse_expectation"]

#: First words of a claim's command: commands that compute or list, never change anything.
CLAIM_COMMANDS = frozenset({"plan", "recommend", "model", "gpus", "offerings", "quote"})
_BOUND_KEYS = frozenset({"min", "max", "contains"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One checked statement: the words it backs, the command and what its JSON answer must show."""

    says: str
    run: tuple[str, ...]
    expect: tuple[tuple[str, Any], ...]


_MISSING = object()


def lookup(document: Any, path: str) -> Any:
    """The value at ``path`` in a JSON document, or a marker object when the path does not exist.

    >>> lookup({"per_gpu": {"total_bytes": 5}}, "per_gpu.total_bytes"), lookup([{"a": 1}, {"a": 2}], "1.a")
    (5, 2)
    >>> lookup({"rows": [1, 2, 3]}, "rows.#"), lookup([4, 5], "#")
    (3, 2)
    >>> lookup({"a": 1, "b": {"c": 2}}, "a+b.c")
    3
    """
    if "+" in path:  # a sum of numeric paths, e.g. weights + gradients + optimizer state
        parts = [lookup(document, p) for p in path.split("+")]
        if any(not isinstance(v, int | float) or isinstance(v, bool) for v in parts):
            return _MISSING
        return sum(parts)
    value = document
    for part in path.split("."):
        if part == "#" and isinstance(value, list):
            value = len(value)
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, Mapping) and part in value:
            value = value[part]
        else:
            return _MISSING
    return value


def parse_expectation(value: object) -> str | None:
    """Why an ``expect`` value is malformed, or None when it is usable.

    >>> parse_expectation({"min": 1}), parse_expectation({"between": 1}), parse_expectation([1])
    (None, "unknown bound(s) ['between']; use min, max or contains", 'must be a number, string, boolean or a table of bounds')
    """
    if isinstance(value, bool | int | float | str):
        return None
    if isinstance(value, Mapping):
        extra = set(value) - _BOUND_KEYS
        if extra or not value:
            return f"unknown bound(s) {sorted(extra)}; use min, max or contains"
        return None
    return "must be a number, string, boolean or a table of bounds"


def _number(value: Any) -> float | None:
    """A number, or a decimal string such as the JSON contract's money (``"2190.00"``), as a float."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _matches(actual: Any, want: object) -> bool:
    if isinstance(want, Mapping):
        if "contains" in want and (not isinstance(actual, str) or str(want["contains"]).casefold() not in actual.casefold()):
            return False
        number = _number(actual)
        if "min" in want and (number is None or number < float(want["min"])):
            return False
        return not ("max" in want and (number is None or number > float(want["max"])))
    if isinstance(want, bool) or isinstance(actual, bool):
        return actual is want
    if isinstance(want, int | float):
        return _number(actual) == float(want)
    return bool(actual == want)


def evaluate(claim: Claim, document: Any) -> list[str]:
    """Every expectation of ``claim`` that ``document`` (the command's JSON answer) breaks, in words.

    A path starting with ``*.`` applies the rest to each item of a top-level list; one item must match.

    >>> c = Claim(says="x", run=("gpus", "l4"), expect=(("memory_bandwidth_bytes_per_s", {"max": 4e11}),))
    >>> evaluate(c, {"memory_bandwidth_bytes_per_s": 3e11}), len(evaluate(c, {"memory_bandwidth_bytes_per_s": 5e11}))
    ([], 1)
    >>> evaluate(Claim(says="x", run=("offerings",), expect=(("*.gpu", "gb200"),)), [{"gpu": "h100-sxm"}, {"gpu": "gb200"}])
    []
    """
    broken: list[str] = []
    for path, want in claim.expect:
        if path.startswith("*.") and isinstance(document, list):
            values = [lookup(item, path[2:]) for item in document]
            if not any(v is not _MISSING and _matches(v, want) for v in values):
                broken.append(f"no item has {path[2:]} matching {want!r}")
            continue
        actual = lookup(document, path)
        if actual is _MISSING:
            broken.append(f"{path} is missing from the answer")
        elif not _matches(actual, want):
            broken.append(f"{path} = {actual!r}, expected {want!r}")
    return broken
