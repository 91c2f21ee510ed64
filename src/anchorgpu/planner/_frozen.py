"""``evolve`` and ``fast_init``: the planner's frozen, slotted values copied and built without the per-field cost
of a frozen dataclass.

``dataclasses.replace`` lists the fields and runs the generated ``__init__`` (one ``object.__setattr__`` per
field behind a frozen check); for a 24-field :class:`~anchorgpu.planner.inputs.Workload` that is several
times the cost of copying the slots. A class with a ``__post_init__``, an ``InitVar`` or a field outside
``__init__`` goes through ``dataclasses.replace`` unchanged, and so does a name that is not a field (which
it refuses). Pure.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (a global lookup,
an attribute lookup and a call by name per field): a 12-field value costs about three times a mutable one.
:func:`fast_init` gives a frozen, slotted, keyword-only dataclass an ``__init__`` with the same signature
that stores each field through its slot's descriptor instead; the class stays a frozen dataclass (equality,
hash, ``replace``, ``FrozenInstanceError`` on assignment are untouched).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from operator import is_
from typing import Any, TypeVar

__all__ = ["evolve", "fast_init", "memo_on_frozen"]

T = TypeVar("T")
C = TypeVar("C", bound=type)
R = TypeVar("R")

_COPIERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any] | None] = {}  # per class and names changed
_UNSEEN: Any = object()


def _simple(cls: type) -> bool:
    """Slotted, no ``__post_init__``, every field in ``__init__`` and no ``InitVar``/``ClassVar`` pseudo-fields."""
    fields = dataclasses.fields(cls)
    return (len(fields) > 1 and not hasattr(cls, "__post_init__") and "__slots__" in cls.__dict__
            and all(f.init for f in fields) and len(fields) == len(getattr(cls, "__dataclass_fields__", {})))


def _copier(cls: type, changed: tuple[str, ...]) -> Callable[..., Any] | None:
    """``copy(obj, *new_values)``: a new ``cls`` with ``obj``'s fields and the ``changed`` ones (in that order) given
    by position, each stored through its slot; None where ``dataclasses.replace`` must do it (a class
    :func:`_simple` refuses, a name that is not a field)."""
    if not dataclasses.is_dataclass(cls) or not _simple(cls):
        return None
    names = tuple(f.name for f in dataclasses.fields(cls))
    if not set(changed) <= set(names) or len(set(changed)) != len(changed):
        return None
    namespace: dict[str, Any] = {"_cls": cls, "_new": object.__new__}
    body = ["    new = _new(_cls)"]
    for i, name in enumerate(names):
        namespace[f"_set{i}"] = cls.__dict__[name].__set__
        value = f"v{changed.index(name)}" if name in changed else f"obj.{name}"
        body.append(f"    _set{i}(new, {value})")
    params = "".join(f", v{j}" for j in range(len(changed)))
    exec(f"def copy(obj{params}):\n" + "\n".join(body) + "\n    return new", namespace)  # as dataclasses does
    copy: Callable[..., Any] = namespace["copy"]
    return copy


_NO_VALUE: Any = object()  # a field with a default_factory not given to __init__


def fast_init(cls: C) -> C:
    """``cls`` (a frozen, slotted, keyword-only dataclass) with an ``__init__`` that stores through the slots.

    Same parameters, defaults and default factories as the generated one; a class it cannot handle (not
    slotted or keyword-only, a ``__post_init__``, a field outside ``__init__``) is returned unchanged.

    >>> @fast_init
    ... @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    ... class Pair:
    ...     a: int
    ...     b: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    >>> Pair(a=1), Pair(a=1) == Pair(a=1, b=())
    (Pair(a=1, b=()), True)
    """
    params = getattr(cls, "__dataclass_params__", None)
    fields = dataclasses.fields(cls)
    if params is None or not params.frozen or not _simple(cls) or not all(f.kw_only for f in fields):
        return cls
    namespace: dict[str, Any] = {"_NO_VALUE": _NO_VALUE}
    args, body = [], []
    for f in fields:
        namespace[f"_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            args.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            args.append(f"{f.name}=_NO_VALUE")
            body.append(f"    if {f.name} is _NO_VALUE: {f.name} = _factory_{f.name}()")
        else:
            args.append(f.name)
        body.append(f"    _set_{f.name}(self, {f.name})")
    exec(f"def __init__(self, *, {', '.join(args)}) -> None:\n" + "\n".join(body), namespace)  # as dataclasses does
    init = namespace["__init__"]
    generated = cls.__dict__["__init__"]
    init.__qualname__, init.__module__ = generated.__qualname__, generated.__module__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    type.__setattr__(cls, "__init__", init)
    return cls


def evolve(obj: T, **changes: Any) -> T:
    """A copy of the frozen dataclass ``obj`` with ``changes``, equal to ``dataclasses.replace(obj, **changes)``.

    >>> from anchorgpu.planner.inputs import Workload
    >>> w = Workload(context_tokens=8192)
    >>> evolve(w, concurrency=4) == Workload(context_tokens=8192, concurrency=4)
    True
    """
    key = (type(obj), tuple(changes))
    copy = _COPIERS.get(key, _UNSEEN)
    if copy is _UNSEEN:
        if len(_COPIERS) >= 1024:
            _COPIERS.clear()
        copy = _COPIERS[key] = _copier(*key)
    if copy is None:
        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    new: T = copy(obj, *changes.values())
    return new


def memo_on_frozen(fn: Callable[..., R], *, frozen: int = 1) -> Callable[..., R]:
    """``fn(spec, *values)`` memoised on the identity of its first argument (a frozen spec: a model, a GPU, a
    weight format, held by the memo so its id cannot be reused) and the plain, hashable values after it, passed by
    position. With ``frozen=n`` the first ``n`` arguments are such specs (a model, a GPU and a calibration), each
    held and checked by identity. For a pure function of them whose answer is a number or a frozen value; bounded
    (cleared at 1,024). A refusal (an exception) is raised each time, never kept.

    >>> calls = []
    >>> @memo_on_frozen
    ... def twice(spec: object, n: int) -> int:
    ...     calls.append(n)
    ...     return 2 * n
    >>> spec = object()
    >>> twice(spec, 3), twice(spec, 3), calls
    (6, 6, [3])
    >>> both = memo_on_frozen(lambda a, b, n: calls.append(n) or n, frozen=2)
    >>> both(spec, calls, 4), both(spec, calls, 4), both(spec, object(), 4), calls[-2:]
    (4, 4, 4, [4, 4])
    """
    memoised = _memo_one(fn) if frozen == 1 else _memo_held(fn, frozen)
    memoised.__doc__, memoised.__name__, memoised.__qualname__ = fn.__doc__, fn.__name__, fn.__qualname__
    memoised.__wrapped__ = fn  # type: ignore[attr-defined]
    return memoised


def _memo_one(fn: Callable[..., R]) -> Callable[..., R]:
    """:func:`memo_on_frozen` of one spec (the usual case: one identity check, no tuple of specs)."""
    cache: dict[tuple[Any, ...], tuple[object, R]] = {}

    def memoised(first: object, *values: Any) -> R:
        key = (id(first), *values)
        hit = cache.get(key)
        if hit is not None and hit[0] is first:
            return hit[1]
        answer = fn(first, *values)
        if len(cache) >= 1024:
            cache.clear()
        cache[key] = (first, answer)
        return answer

    return memoised


def _memo_held(fn: Callable[..., R], frozen: int) -> Callable[..., R]:
    """:func:`memo_on_frozen` of the first ``frozen`` arguments, each held and checked by identity."""
    cache: dict[tuple[Any, ...], tuple[tuple[object, ...], R]] = {}

    def memoised(*args: Any) -> R:
        specs = args[:frozen]
        key = (*map(id, specs), *args[frozen:])
        hit = cache.get(key)
        if hit is not None and all(map(is_, hit[0], specs)):
            return hit[1]
        answer = fn(*args)
        if len(cache) >= 1024:
            cache.clear()
        cache[key] = (specs, answer)
        return answer

    return memoised
