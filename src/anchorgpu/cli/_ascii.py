"""Numbers typed on the command line are read with ASCII digits only, as in the API (issue 13).

Click converts ``--quantity`` or ``--concurrency`` with Python's ``int()``/``float()``, which also read
``'３'`` or ``'١٢'`` (Unicode digits) as numbers. :func:`ascii_numbers` gives every integer and float
parameter of the CLI a copy of its type whose class refuses such text in one line (exit 2) before the
command runs; the rest (bounds, help, messages) is the original type's.
"""

from __future__ import annotations

import copy
from typing import Any

import click

__all__ = ["ascii_numbers"]

_CLASSES: dict[type, type] = {}


def _ascii_class(cls: type[Any]) -> type:
    """``cls`` with a ``convert`` that first refuses non-ASCII text (one subclass per click number type)."""
    if cls not in _CLASSES:

        def convert(self: Any, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
            if isinstance(value, str) and not value.isascii():
                self.fail(f"{value!r} is not a number written with ASCII digits 0-9", param, ctx)
            return cls.convert(self, value, param, ctx)

        _CLASSES[cls] = type(cls.__name__, (cls,), {"convert": convert, "__module__": cls.__module__})
    return _CLASSES[cls]


def ascii_numbers(command: click.Command) -> click.Command:
    """Apply the ASCII rule to every int/float parameter of ``command`` and its subcommands; returns it."""
    for param in command.params:
        kind = type(param.type)
        if issubclass(kind, click.types.IntParamType | click.types.FloatParamType) and kind not in _CLASSES.values():
            own = copy.copy(param.type)  # click.INT is a shared instance: never change it in place
            own.__class__ = _ascii_class(kind)
            param.type = own
    for sub in getattr(command, "commands", {}).values():
        ascii_numbers(sub)
    return command
