"""One error tree for the whole of AnchorGPU.

Every error a user can cause is an :class:`AnchorError` with a stable ``code`` (used by the API's
problem+json bodies and by the glossary) and a one-line message that names the offending field or
value. Faces map the three families to their own vocabulary in one table each:

    AnchorError
    ├── InvalidInput        (CLI exit 2, HTTP 422)   bad values, malformed files, impossible layouts
    │   ├── InvalidConfig       a model config.json that is malformed, truncated or missing a field
    │   ├── InvalidWorkload     a planner request that cannot be evaluated (zero GPUs, TP not dividing heads …)
    │   ├── InvalidTerm         a rental term that is not N hours, N weeks or N months
    │   ├── PartialGpuRequested MIG / vGPU / time-slicing or fractional GPU counts
    │   ├── DataFileError       a shipped data file with a bad row (names file and row)
    │   └── HubUnavailable      a Hub id that could not be fetched (offline, unknown repo)
    ├── NotFound            (CLI exit 3, HTTP 404)
    │   ├── UnknownGpu          with "did you mean" suggestions
    │   ├── UnknownModel        with "did you mean" suggestions
    │   └── UnknownEntity       any other named thing (offering, quote, allocation, glossary entry …)
    └── Conflict            (CLI exit 4, HTTP 409)   the request is well formed but the state forbids it

Areas add subclasses beside the ones here; they never define a second root.

A message may be :func:`said`: the English line (the CLI's and the API's words, unchanged) that also carries its
message id (a ``str.format`` template) and the values put into it, so a face in another language renders the same
refusal through its own message catalogue (the web pages: ``anchorgpu.web.refusals``) without parsing the English.
``said`` is a keyword of the catalogue's extraction (``src/anchorgpu/web/babel.cfg``): its template must be a literal.
"""

from __future__ import annotations

import keyword
import re
import string
from collections.abc import Callable, Iterable, Sequence
from difflib import get_close_matches
from typing import Any

__all__ = [
    "AnchorError",
    "Said",
    "Conflict",
    "DataFileError",
    "HubUnavailable",
    "InvalidConfig",
    "InvalidInput",
    "InvalidTerm",
    "InvalidWorkload",
    "NotFound",
    "PartialGpuRequested",
    "UnknownEntity",
    "UnknownGpu",
    "UnknownModel",
    "did_you_mean",
    "said",
    "said_joined",
    "said_template",
]


class Said(str):
    """An English sentence (itself, as a ``str``: every face that prints it prints exactly this) with its message id
    ``template`` and the ``values`` formatted into it; a value may itself be :class:`Said` (a clause a helper wrote).

    >>> line = said("--tp {tp} does not divide {heads:,} heads", tp=3, heads=1000)
    >>> line, line.template, line.values
    ('--tp 3 does not divide 1,000 heads', '--tp {tp} does not divide {heads:,} heads', {'tp': 3, 'heads': 1000})
    """

    template: str
    values: dict[str, object]

    def __new__(cls, template: str, values: dict[str, object]) -> Said:
        compiled = _COMPILED.get(template, _UNSEEN)
        if compiled is _UNSEEN:
            compiled = _COMPILED[template] = _compile(template)
        try:
            english = compiled(**values) if compiled is not None else template.format(**values)
        except TypeError:  # a value missing: str.format's own KeyError, as before
            english = template.format(**values)
        line = str.__new__(cls, english)  # str's own, not super(): the same object, fewer calls
        line.template = template
        line.values = values
        return line

    def __reduce__(self) -> tuple[object, ...]:  # pickles (the sweep's worker processes) keep the id and values
        return (Said, (self.template, self.values))


_SAFE_SPEC = re.compile(r"[0-9A-Za-z,._%<>^=+\- #]*")
_UNSEEN = object()
_COMPILED: dict[str, Any] = {}
"""Each template's English as a compiled f-string (:func:`_compile`), or None where it is formatted by ``str.format``."""


def _compile(template: str) -> Callable[..., str] | None:
    """``template`` as a function of its values that writes exactly ``template.format(**values)``, compiled once as an
    f-string (about twice as fast as parsing the template on every line a plan writes), or None where a field is not a
    plain name with a plain format spec (``{a.b}``, ``{a[k]}``, nested specs: left to ``str.format``, whose reading of
    them an f-string does not share). Templates are string literals of the source, never user input.

    >>> _compile("{n:,} GPUs of {gpu!r}")(n=1024, gpu="h100", unused=1)
    "1,024 GPUs of 'h100'"
    >>> _compile("{a.b}") is None, _compile("{x:{w}}") is None
    (True, True)
    """
    names: list[str] = []
    try:
        for _, name, spec, conversion in string.Formatter().parse(template):
            if name is None:
                continue
            if (not name.isidentifier() or keyword.iskeyword(name) or not _SAFE_SPEC.fullmatch(spec or "")
                    or conversion not in (None, "r", "s", "a")):
                return None
            names.append(name)
        if "\\" in template or '"""' in template or template.endswith('"'):
            return None
        params = ", ".join(dict.fromkeys(names))
        fn = eval(f'lambda {params + ", " if params else ""}**_: f"""{template}"""', {})  # noqa: S307
    except (ValueError, SyntaxError):
        return None
    return fn  # type: ignore[no-any-return]


def said(template: str, /, **values: object) -> Said:
    """``template.format(**values)`` that remembers ``template`` and ``values`` (see :class:`Said`). The template is
    the catalogue's message id: a string literal, so the extraction finds it."""
    return Said(template, values)


def said_joined(parts: Sequence[Said]) -> Said | str:
    """``parts`` joined by ", ", said clause by clause (a page translates each); "" for none.

    >>> said_joined([said("a"), said("b {n}", n=1), said("c")])
    'a, b 1, c'
    """
    if not parts:
        return ""
    joined = parts[-1]
    for head in reversed(parts[:-1]):
        joined = said("{head}, {tail}", head=head, tail=joined)
    return joined


def said_template(template: str) -> str:
    """Mark a template for the catalogue where it is kept in a table and :func:`said` later (a no-op)."""
    return template


class AnchorError(Exception):
    """Root of every error AnchorGPU raises on purpose.

    ``code`` is stable (API clients and the glossary rely on it); ``message`` is one line.
    """

    code: str = "anchor_error"
    exit_code: int = 1
    http_status: int = 500

    def __init__(self, message: str, *, code: str | None = None) -> None:
        one_line = " ".join(str(message).split())
        super().__init__(one_line)
        self.message = one_line
        self.said = message if isinstance(message, Said) else None
        """The message with its id and values (:func:`said`), for a face in another language; None when the
        message was written without one (that face then shows the English line)."""
        if code is not None:
            self.code = code


class InvalidInput(AnchorError, ValueError):
    """The request or a file it names is malformed; nothing was changed."""

    code = "invalid_input"
    exit_code = 2
    http_status = 422


class InvalidConfig(InvalidInput):
    code = "invalid_config"


class InvalidWorkload(InvalidInput):
    code = "invalid_workload"


class InvalidTerm(InvalidInput):
    code = "invalid_term"


class PartialGpuRequested(InvalidInput):
    code = "partial_gpu_not_offered"


class DataFileError(InvalidInput):
    """A shipped or user-supplied data file has a bad row; the message names file and row."""

    code = "data_file_error"

    def __init__(self, file: str, row: int | str, reason: str) -> None:
        super().__init__(f"{file}, row {row}: {reason}")
        self.file = file
        self.row = row


class HubUnavailable(InvalidInput):
    code = "hub_unavailable"


class NotFound(AnchorError, LookupError):
    code = "not_found"
    exit_code = 3
    http_status = 404


def did_you_mean(name: str, candidates: Iterable[str], *, n: int = 3) -> list[str]:
    """Closest candidate names to ``name`` (case-insensitive), best first.

    >>> did_you_mean("h10", ["h100", "h200", "a100"])
    ['h100', 'h200', 'a100']
    """
    pool = {c.lower(): c for c in candidates}
    return [pool[m] for m in get_close_matches(name.lower(), list(pool), n=n, cutoff=0.5)]


ECHO_MAX_CHARACTERS = 100
"""Most characters of an unknown name a message repeats (a 5,000-character name was echoed whole)."""


_UNKNOWN = {
    "GPU": said_template("unknown GPU {name}{hint}"),
    "model": said_template("unknown model {name}{hint}"),
    "offering": said_template("unknown offering {name}{hint}"),
    "option": said_template("unknown option {name}{hint}"),
    "region": said_template("unknown region {name}{hint}"),
    "interconnect": said_template("unknown interconnect {name}{hint}"),
    "allocation": said_template("unknown allocation {name}{hint}"),
    "quote": said_template("unknown quote {name}{hint}"),
    "account": said_template("unknown account {name}{hint}"),
    "glossary entry": said_template("unknown glossary entry {name}{hint}"),
}
"""The "unknown ..." line of each kind of thing looked up by name (its own id, since languages agree the adjective
with the noun: "неизвестная модель", "неизвестный GPU"); a kind not listed here is still said in English."""


def _with_suggestions(kind: str, name: str, suggestions: Sequence[str]) -> str:
    hint = said("; did you mean {choices}?", choices=", ".join(repr(s) for s in suggestions)) if suggestions else ""
    shown = repr(name) if len(name) <= ECHO_MAX_CHARACTERS else \
        said("{start}… ({count:,} characters)", start=repr(name[:ECHO_MAX_CHARACTERS]), count=len(name))
    template = _UNKNOWN.get(kind)
    if template is None:
        return f"unknown {kind} {shown}{hint}"
    return said(template, name=shown, hint=hint)


class UnknownGpu(NotFound):
    code = "unknown_gpu"

    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(_with_suggestions("GPU", name, suggestions))
        self.name = name
        self.suggestions = list(suggestions)


class UnknownModel(NotFound):
    code = "unknown_model"

    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(_with_suggestions("model", name, suggestions))
        self.name = name
        self.suggestions = list(suggestions)


class UnknownEntity(NotFound):
    """Any other named thing that does not exist (or is not visible to this account)."""

    def __init__(self, kind: str, name: str, suggestions: Sequence[str] = (), *, code: str | None = None) -> None:
        super().__init__(_with_suggestions(kind, name, suggestions), code=code or f"unknown_{kind.replace(' ', '_')}")
        self.kind = kind
        self.name = name
        self.suggestions = list(suggestions)


class Conflict(AnchorError):
    code = "conflict"
    exit_code = 4
    http_status = 409
