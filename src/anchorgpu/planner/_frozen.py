"""``fast_init``, ``builder`` and ``evolve``: the planner's frozen, slotted values built and copied without the
per-field cost of a frozen dataclass; and ``memo_on_frozen``.

A frozen dataclass refuses ``self.x = v`` (its ``__setattr__`` raises), so its generated ``__init__`` (and
``dataclasses.replace``, which runs it) stores each field through ``object.__setattr__``: a C call with an
argument tuple and a lookup by name per field, about three times what a mutable class pays. Here each such
class gets a *filler* (:func:`_filler`): a plain class with the same slots, hence the same layout, whose fields
the interpreter stores in a few instructions; an instance is filled as a filler and then takes its own class by
``__class__`` assignment, once (a new one is made by calling the filler, a class with no ``__init__`` or
``__new__`` of its own: cheaper than ``object.__new__(filler)``, which checks the class it is given). From then on
it is an ordinary instance of the frozen class (equality, hash, ``replace``, pickling, ``FrozenInstanceError`` on
assignment are untouched). Pure.

* :func:`fast_init` gives the class such an ``__init__`` (same signature, defaults and default factories);
* :func:`builder` makes a keyword-only function that returns ``cls(**fields)`` without the class call itself,
  whose keyword arguments the interpreter packs into a dictionary for ``__init__`` and unpacks again (as
  much again as filling the slots): for the values a hot path builds on every call (a plan, a speed estimate);
* :func:`evolve` is ``dataclasses.replace`` for them: the slots copied, the changed ones given (:func:`evolver`
  makes the copy of a fixed set of changed fields once);
* :func:`field_getter` reads a fixed set of fields into a tuple (with their types, for a memo key that tells ``1``,
  ``1.0`` and ``True`` apart) as plain attribute reads, which the interpreter specialises for slots, rather than
  ``operator.attrgetter``'s lookups by name.

A class with a ``__post_init__``, an ``InitVar``, a field outside ``__init__`` or a base class keeps the
dataclass machinery (and ``evolve`` of it goes through ``dataclasses.replace``, which also refuses a name that
is not a field).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["builder", "evolve", "evolver", "fast_init", "field_getter", "memo_on_frozen"]

T = TypeVar("T")
C = TypeVar("C", bound=type)
R = TypeVar("R")
P = ParamSpec("P")

_COPIERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any] | None] = {}  # per class and names changed
_UNSEEN: Any = object()
_NO_VALUE: Any = object()  # a field with a default_factory not given
_SET_CLASS = vars(object)["__class__"].__set__  # the class change a frozen class's own __setattr__ refuses


def _simple(cls: type) -> bool:
    """A frozen, slotted dataclass on no base class, no ``__post_init__``, every field in ``__init__`` and no
    ``InitVar``/``ClassVar`` pseudo-fields."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or cls.__bases__ != (object,) or "__slots__" not in cls.__dict__:
        return False
    fields = dataclasses.fields(cls)
    return (len(fields) > 1 and not hasattr(cls, "__post_init__") and all(f.init for f in fields)
            and len(fields) == len(cls.__dataclass_fields__))  # type: ignore[attr-defined]


_FILLERS: dict[type, type | None] = {}


def _filler(cls: type) -> type | None:
    """The plain class with ``cls``'s slots (the same layout, so that its instance can become a ``cls`` by
    ``__class__`` assignment), made once per class; None for a class :func:`_simple` refuses or with a field named
    like a local of the generated code (``new``, ``obj``, ``of``, ``_by_position``)."""
    if cls not in _FILLERS:
        filler = None
        if _simple(cls) and not {"new", "obj", "of", "_by_position"} & set(cls.__dataclass_fields__):  # type: ignore[attr-defined]
            filler = type(f"{cls.__name__}Filler", (), {"__slots__": cls.__dict__["__slots__"],
                                                        "__module__": cls.__module__})
            probe: Any = object.__new__(filler)
            try:
                probe.__class__ = cls
            except TypeError:  # a layout the interpreter will not swap (not expected for a slotted dataclass)
                filler = None
        _FILLERS[cls] = filler
    return _FILLERS[cls]


def _keyword_source(cls: type, filler: type, namespace: dict[str, Any], positional: int = 0) -> tuple[str, list[str]]:
    """The keyword-only parameters of ``cls``'s ``__init__`` (defaults and factories put in ``namespace``), the first
    ``positional`` of them before the ``*`` instead, and the lines that fill ``new`` (a ``filler``) with them and
    make it a ``cls``."""
    namespace.update(_NO_VALUE=_NO_VALUE, _cls=cls, _filler=filler)
    params, body = [], []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_NO_VALUE")
            body.append(f"    if {f.name} is _NO_VALUE: {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    new.{f.name} = {f.name}")
    body.append("    new.__class__ = _cls")
    return ", ".join([*params[:positional], "*", *params[positional:]]), body


def _compile(source: str, namespace: dict[str, Any], name: str) -> Callable[..., Any]:
    exec(source, namespace)  # generated code, as dataclasses makes its __init__
    fn: Callable[..., Any] = namespace[name]
    return fn


def fast_init(cls: C) -> C:
    """``cls`` (a frozen, slotted, keyword-only dataclass) with an ``__init__`` that fills its instance as the
    class's filler (see the module's docstring). Same parameters, defaults and default factories as the generated
    one; a class it cannot handle is returned unchanged, and a subclass's instance goes through the generated one.

    A class whose every field has a default is built by a ``__new__`` instead (:func:`_defaults_new`), its
    ``__init__`` left to ``object``'s: the new value is made as a filler and takes its class once (the ``__init__``
    route changes the class of the instance ``object.__new__`` made twice), and a field not given takes its default
    from the function's tuple of defaults rather than by name from its dictionary of keyword-only defaults.

    >>> @fast_init
    ... @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    ... class Pair:
    ...     a: int
    ...     b: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    >>> Pair(a=1), Pair(a=1) == Pair(a=1, b=()), type(Pair(a=1)).__name__
    (Pair(a=1, b=()), True, 'Pair')
    """
    filler = _filler(cls)
    if filler is None or not all(f.kw_only for f in dataclasses.fields(cls)):
        return cls
    generated = cls.__dict__["__init__"]
    if all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
           for f in dataclasses.fields(cls)):
        return _defaults_new(cls, filler, generated)
    namespace: dict[str, Any] = {"_generated": generated, "_set_class": _SET_CLASS}
    params, body = _keyword_source(cls, filler, namespace)
    given = ", ".join(f"{f.name}={f.name}" for f in dataclasses.fields(cls))
    source = "\n".join([f"def __init__(new, {params}) -> None:",
                        "    if type(new) is not _cls:  # a subclass's instance, of another layout",
                        f"        return _generated(new, {given})",
                        "    _set_class(new, _filler)", *body])
    init = _compile(source, namespace, "__init__")
    init.__qualname__, init.__module__ = generated.__qualname__, generated.__module__
    init.__annotations__ = dict(generated.__annotations__)
    init.__doc__ = generated.__doc__
    type.__setattr__(cls, "__init__", init)
    return cls


def _refuse_positional(cls: type, *given: Any) -> Any:
    raise TypeError(f"{cls.__qualname__}() takes keyword arguments only")


def _defaults_new(cls: C, filler: type, generated: Callable[..., None]) -> C:
    """:func:`fast_init` of a class whose every field has a default: ``__new__(cls, *, fields)`` fills a filler and
    gives it the class, once; ``__init__`` is ``object``'s (which accepts the arguments ``__new__`` took, as the
    class defines ``__new__``). The fields are declared by position after a guard, so that CPython fills the ones
    not given from the defaults' tuple; a value passed by position lands on the guard and is refused, as the
    generated keyword-only ``__init__`` refuses it. A subclass's instance is made by ``object.__new__`` and filled
    by the generated ``__init__`` (a subclass takes the same fields). ``__new__`` called with the class alone (as
    ``copy`` and ``pickle`` do, before they restore the fields) gives the default value."""
    namespace: dict[str, Any] = {"_generated": generated, "_object_new": object.__new__,
                                 "_refuse": _refuse_positional}
    params, body = _keyword_source(cls, filler, namespace)
    params = params.replace("*, ", "_by_position=_NO_VALUE, ", 1)
    given = ", ".join(f"{f.name}={f.name}" for f in dataclasses.fields(cls))
    source = "\n".join([f"def __new__(of, {params}):",
                        "    if _by_position is not _NO_VALUE:",
                        "        return _refuse(of, _by_position)",
                        "    if of is not _cls:  # a subclass, of another layout",
                        "        obj = _object_new(of)",
                        f"        _generated(obj, {given})",
                        "        return obj",
                        "    new = _filler()", *body, "    return new"])
    new = _compile(source, namespace, "__new__")
    new.__qualname__, new.__module__ = f"{cls.__qualname__}.__new__", cls.__module__
    new.__doc__ = generated.__doc__
    new.__signature__ = inspect.signature(generated)  # type: ignore[attr-defined]  # what inspect.signature(cls) shows
    type.__setattr__(cls, "__new__", staticmethod(new))
    type.__delattr__(cls, "__init__")  # object's: type() calls it after __new__, and it checks nothing here
    return cls


def builder(cls: Callable[P, T], *, positional: int = 0) -> Callable[P, T]:
    """A keyword-only function that returns what ``cls(**fields)`` returns, for a class :func:`fast_init` handles
    (any other class is returned as it is, to be called): a new value filled as the class's filler, without the
    keyword dictionary a class call packs and unpacks.

    ``positional``: the first that many fields are taken by position too, for a class of many fields. CPython 3.11
    compiles a call of more than 30 stack slots (an argument by position takes one, a keyword two:
    ``STACK_USE_GUIDELINE``; 2 by position and 15 keywords are over it) as a dictionary built and unpacked
    (``CALL_FUNCTION_EX``), several times a plain call's cost; passing the leading fields by position keeps such a
    call under it (``tests/planner/test_hot_calls.py`` holds the hot ones to it).

    >>> @fast_init
    ... @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    ... class Pair:
    ...     a: int
    ...     b: int = 2
    >>> new_pair = builder(Pair)
    >>> new_pair(a=1), new_pair(a=1) == Pair(a=1), type(new_pair(a=1, b=3)) is Pair
    (Pair(a=1, b=2), True, True)
    >>> builder(Pair, positional=1)(1, b=3) == Pair(a=1, b=3)
    True
    """
    if not isinstance(cls, type):
        return cls
    filler = _filler(cls)
    if filler is None or not all(f.kw_only for f in dataclasses.fields(cls)):
        return cls
    namespace: dict[str, Any] = {}
    params, body = _keyword_source(cls, filler, namespace, positional)
    build = _compile("\n".join([f"def build({params}):", "    new = _filler()", *body, "    return new"]),
                     namespace, "build")
    build.__qualname__ = build.__name__ = f"new_{cls.__name__}"
    build.__module__ = cls.__module__
    build.__doc__ = f"``{cls.__name__}(**fields)``, built without the class call (planner._frozen.builder)."
    return build


def _copier(cls: type, changed: tuple[str, ...], *, by_name: bool = False) -> Callable[..., Any] | None:
    """``copy(obj, *new_values)``: a new ``cls`` with ``obj``'s fields and the ``changed`` ones (in that order) given
    by position (``by_name``: ``copy(obj, *, name=value, ...)``, each required), filled as its filler; None where
    ``dataclasses.replace`` must do it (a class :func:`_simple` refuses, a name that is not a field)."""
    filler = _filler(cls)
    if filler is None:
        return None
    names = tuple(f.name for f in dataclasses.fields(cls))
    if not set(changed) <= set(names) or len(set(changed)) != len(changed):
        return None
    given = changed if by_name else tuple(f"v{j}" for j in range(len(changed)))
    body = [f"    new.{name} = " + (given[changed.index(name)] if name in changed else f"obj.{name}") for name in names]
    params = (", *, " + ", ".join(changed)) if by_name and changed else "".join(f", {v}" for v in given)
    return _compile("\n".join([f"def copy(obj{params}):", "    new = _filler()", *body,
                               "    new.__class__ = _cls", "    return new"]),
                    {"_cls": cls, "_filler": filler}, "copy")


def evolver(cls: type[T], *names: str) -> Callable[..., T]:
    """:func:`evolve` of a ``cls`` for changes to these fields, made once: ``copy(obj, *, name=value, ...)`` with
    each of them required, for a hot path that always changes the same fields (without ``evolve``'s dictionary of
    changes and its lookup of the copier).

    >>> from anchorgpu.planner.inputs import Workload
    >>> sized = evolver(Workload, "context_tokens", "concurrency")
    >>> sized(Workload(), context_tokens=8192, concurrency=4) == Workload(context_tokens=8192, concurrency=4)
    True
    """
    copy = _copier(cls, names, by_name=True)
    if copy is None:
        return lambda obj, **changes: evolve(obj, **changes)
    return copy


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


def field_getter(*names: str, typed: bool = False) -> Callable[[Any], tuple[Any, ...]]:
    """``get(obj)``: the tuple of ``obj``'s fields ``names``, in that order (``operator.attrgetter(*names)``, for two
    names or more); ``typed``: followed by each one's type, so that a memo keyed on it tells values that are equal but
    of different types apart (``1``, ``1.0`` and ``True``, which compare and hash alike).

    >>> from anchorgpu.planner.inputs import Layout
    >>> field_getter("tp", "fsdp")(Layout(tp=2)), field_getter("tp", "fsdp", typed=True)(Layout(tp=2))
    ((2, False), (2, False, <class 'int'>, <class 'bool'>))
    """
    if not names or not all(name.isidentifier() and name != "obj" for name in names):
        raise ValueError(f"field names expected, not {names!r}")
    lines = [f"    {name} = obj.{name}" for name in names]
    values = [*names, *(f"type({name})" for name in names)] if typed else list(names)
    get: Callable[[Any], tuple[Any, ...]] = _compile(
        "\n".join(["def get(obj):", *lines, f"    return ({', '.join(values)},)"]), {}, "get")
    get.__qualname__ = get.__name__ = "get_" + "_".join(names) if len(names) <= 3 else "get_fields"
    return get


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
    memoised = _memo_held(fn, frozen)
    memoised.__doc__, memoised.__name__, memoised.__qualname__ = fn.__doc__, fn.__name__, fn.__qualname__
    memoised.__module__ = fn.__module__  # so doctest finds its examples where the function is defined
    memoised.__wrapped__ = fn  # type: ignore[attr-defined]
    return memoised


def _value_parameters(fn: Callable[..., Any], frozen: int) -> list[str] | None:
    """The parameters after ``fn``'s first ``frozen``, as the generated memo declares them (``v0``, ``v1=<default>``,
    ...), where every parameter of ``fn`` can be given by position and there are at least ``frozen``; else None
    (``*args``, keyword-only parameters, a callable without a signature)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(params) < frozen or any(p.kind not in positional for p in params):
        return None
    return [f"v{i}" if p.default is p.empty else f"v{i}=_default_{i}" for i, p in enumerate(params[frozen:])]


def _memo_held(fn: Callable[..., R], frozen: int) -> Callable[..., R]:
    """:func:`memo_on_frozen` of the first ``frozen`` arguments, each held and checked by identity: generated for that
    many specs (named parameters, their ids written into the key) and, where :func:`_value_parameters` gives them,
    for ``fn``'s own number of values (with its defaults), so that a call packs no ``*values`` and builds its key as
    one tuple display; else for ``*values``."""
    specs = [f"spec{i}" for i in range(frozen)]
    namespace: dict[str, Any] = {"cache": {}, "fn": fn}
    declared = _value_parameters(fn, frozen)
    if declared is None:
        params, values = [*specs, "*values"], ["*values"]
    else:
        params, values = [*specs, *declared, "/"], [f"v{i}" for i in range(len(declared))]
        defaults = list(inspect.signature(fn).parameters.values())[frozen:]
        namespace.update({f"_default_{i}": p.default for i, p in enumerate(defaults) if p.default is not p.empty})
    args = ", ".join([*specs, *values])
    source = "\n".join([
        f"def memoised({', '.join(params)}):",
        f"    key = ({', '.join([*(f'id({spec})' for spec in specs), *values])},)",
        "    hit = cache.get(key)",
        "    if hit is not None and " + " and ".join(f"hit[{i}] is spec{i}" for i in range(frozen)) + ":",
        f"        return hit[{frozen}]  # the same objects (the memo holds them: their ids are not reused)",
        f"    answer = fn({args})",
        "    if len(cache) >= 1024:",
        "        cache.clear()",
        f"    cache[key] = ({', '.join(specs)}, answer)",
        "    return answer",
    ])
    memoised: Callable[..., R] = _compile(source, namespace, "memoised")
    return memoised
