"""The memo shared by :func:`~anchorgpu.planner.validate.resolve_format` and
:func:`~anchorgpu.planner.layout_resolution.resolve_layout`: a value computed once per frozen model and key,
with the assumption lines it appended. Pure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["memo_with_lines"]


def memo_with_lines(table: dict[Any, tuple[Any, Any, tuple[str, ...]]], key: Any, model: object,
                    assumptions: list[str], compute: Callable[..., Any], *args: Any, checked: bool = True) -> Any:
    """``compute(*args, lines)`` memoised in ``table`` on ``key`` for the frozen ``model`` (held by identity), with the
    assumption lines it appended, which every later hit appends again; a refusal is raised each time, never kept.
    ``compute`` and its arguments come apart, so a hit makes no closure.
    With ``checked=False`` the key may hold a value no dict can (a list given for a count): it is then computed
    (and refused) each time."""
    try:
        hit = table.get(key)
    except TypeError:
        if checked:
            raise
        hit = key = None
    if hit is not None and hit[0] is model:
        assumptions += hit[2]
        return hit[1]
    lines: list[str] = []
    value = compute(*args, lines)
    if key is not None:
        if len(table) >= 1024:
            table.clear()
        table[key] = (model, value, tuple(lines))
    assumptions += lines
    return value
