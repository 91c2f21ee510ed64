"""``evolve``: :func:`dataclasses.replace` for the planner's frozen, slotted inputs, without its per-call cost.

``dataclasses.replace`` lists the fields and runs the generated ``__init__`` (one ``object.__setattr__`` per
field behind a frozen check); for a 24-field :class:`~anchorgpu.planner.inputs.Workload` that is several
times the cost of copying the slots. A class with a ``__post_init__``, an ``InitVar`` or a field outside
``__init__`` goes through ``dataclasses.replace`` unchanged, and so does a name that is not a field (which
it refuses). Pure.
"""

from __future__ import annotations

import dataclasses
from operator import attrgetter
from typing import Any, TypeVar

__all__ = ["evolve"]

T = TypeVar("T")

_PLANS: dict[type, tuple[tuple[str, ...], frozenset[str], attrgetter[Any]] | None] = {}


def _plan_for(cls: type) -> tuple[tuple[str, ...], frozenset[str], attrgetter[Any]] | None:
    if cls in _PLANS:
        return _PLANS[cls]
    fields = dataclasses.fields(cls)
    simple = (len(fields) > 1 and not hasattr(cls, "__post_init__") and "__slots__" in cls.__dict__
              and all(f.init for f in fields) and len(fields) == len(getattr(cls, "__dataclass_fields__", {})))
    names = tuple(f.name for f in fields)
    plan = (names, frozenset(names), attrgetter(*names)) if simple else None
    _PLANS[cls] = plan
    return plan


def evolve(obj: T, **changes: Any) -> T:
    """A copy of the frozen dataclass ``obj`` with ``changes``, equal to ``dataclasses.replace(obj, **changes)``.

    >>> from anchorgpu.planner.inputs import Workload
    >>> w = Workload(context_tokens=8192)
    >>> evolve(w, concurrency=4) == Workload(context_tokens=8192, concurrency=4)
    True
    """
    plan = _plan_for(type(obj))
    if plan is None or not changes.keys() <= plan[1]:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    names, _, values = plan
    new = object.__new__(type(obj))
    setattr_ = object.__setattr__
    for name, value in zip(names, values(obj), strict=True):
        setattr_(new, name, changes[name] if name in changes else value)
    return new
