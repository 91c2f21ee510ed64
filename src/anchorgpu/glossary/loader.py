"""Read and validate the glossary data files (``glossary/data/*.toml``).

Each file holds ``[[entry]]`` tables. Validation names the file and the entry on every error
(:class:`anchorgpu.errors.DataFileError`): unknown keys, a missing language, a Russian text without
Cyrillic letters or an English one with them, unknown level/stage/kind, duplicate ids or names, and
``related``/``technologies`` links that do not resolve. Nothing is read at import.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, cast

from anchorgpu.errors import DataFileError
from anchorgpu.glossary.claims import Claim
from anchorgpu.glossary.model import KINDS, LEVELS, STAGES, Bilingual, Entry, FactValue, Kind, TryIt
from anchorgpu.glossary.text import compact

__all__ = ["CATALOG_FILTER_KEYS", "Glossary", "build_glossary", "load_glossary", "load_glossary_from", "parse_file"]

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_CYRILLIC = re.compile(r"[А-Яа-яЁё]")
_CODE = re.compile(r"^[a-z][a-z0-9_]*$")
_ENTRY_KEYS = frozenset(
    {
        "id", "kind", "term", "aliases", "short", "long", "example", "caveat", "level", "stages", "tags",
        "related", "technologies", "codes", "facts", "sources", "try_it", "claims",
    }
)
_REQUIRED = ("id", "kind", "term", "short", "long", "level", "stages")
_TRY_IT_KEYS = frozenset({"planner_args", "catalog_filter", "compare"})
#: The filter vocabulary an entry may use to point at offerings (see ``links.offering_matches``).
CATALOG_FILTER_KEYS = frozenset({"interconnect", "kind", "vendor", "memory_type", "fp8", "fp4", "min_gpus", "gpu"})
#: First words of a preset: commands of the ``anchorgpu`` CLI that compute, list or price, never book.
_PRESET_COMMANDS = frozenset({"plan", "recommend", "model", "offerings", "quote"})
#: The options a catalog or quote preset may use (those the CLI commands take; checked at load).
_PRESET_FLAGS = {
    "offerings": frozenset({"--gpu", "--min-gpus", "--max-usd-per-gpu-hour", "--region", "--interconnect"}),
    "quote": frozenset({"--term", "--quantity", "--option", "--region"}),
}
_CLAIM_KEYS = frozenset({"says", "run", "expect"})


@dataclass(frozen=True, slots=True)
class Glossary:
    """All entries in load order, with the reverse links computed (never kept by hand)."""

    entries: Mapping[str, Entry]
    linking_here: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    code_index: Mapping[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self) -> Any:
        return iter(self.entries.values())


class _Row:
    """Where we are in a file, so every error names the file and the entry."""

    def __init__(self, file: str, index: int, entry_id: object) -> None:
        self.file = file
        self.label = f"entry {entry_id!r}" if isinstance(entry_id, str) and entry_id else f"entry #{index + 1}"

    def fail(self, reason: str) -> DataFileError:
        return DataFileError(self.file, self.label, reason)


def _text(row: _Row, value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise row.fail(f"{where} must be a non-empty string")
    return " ".join(value.split())


def _bilingual(row: _Row, raw: Mapping[str, Any], key: str, *, required: bool = True) -> Bilingual | None:
    value = raw.get(key)
    if value is None:
        if required:
            raise row.fail(f"{key!r} is missing (it needs both 'en' and 'ru')")
        return None
    if not isinstance(value, dict):
        raise row.fail(f"{key!r} must be a table with 'en' and 'ru'")
    extra = set(value) - {"en", "ru"}
    if extra:
        raise row.fail(f"{key!r} has unknown language(s) {sorted(extra)}")
    for lang in ("en", "ru"):
        if lang not in value:
            raise row.fail(f"{key}.{lang} is missing: every text needs English and Russian")
    en = _text(row, value["en"], f"{key}.en")
    ru = _text(row, value["ru"], f"{key}.ru")
    if key != "term":  # a term may be the same word in both languages (vLLM, CUDA); prose may not
        if not _CYRILLIC.search(ru):
            raise row.fail(f"{key}.ru has no Cyrillic letters: write it in Russian")
        if _CYRILLIC.search(en):
            raise row.fail(f"{key}.en contains Cyrillic letters: write it in English")
    return Bilingual(en=en, ru=ru)


def _strings(row: _Row, value: object, where: str, *, unique: bool = True) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise row.fail(f"{where} must be a list of non-empty strings")
    items = tuple(" ".join(v.split()) for v in value)
    if unique and len(set(items)) != len(items):
        raise row.fail(f"{where} lists the same value twice")
    return items


def _facts(row: _Row, value: object) -> dict[str, FactValue]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise row.fail("'facts' must be a table of scalar values")
    for k, v in value.items():
        if not isinstance(v, int | float | str | bool):
            raise row.fail(f"facts.{k} must be a number, string or boolean")
    return dict(value)


def _try_it(row: _Row, value: object) -> TryIt:
    if value is None:
        return TryIt()
    if not isinstance(value, dict):
        raise row.fail("'try_it' must be a table")
    extra = set(value) - _TRY_IT_KEYS
    if extra:
        raise row.fail(f"try_it has unknown key(s) {sorted(extra)}")
    presets: list[tuple[str, ...]] = []
    raw_presets = value.get("planner_args", [])
    if not isinstance(raw_presets, list):
        raise row.fail("try_it.planner_args must be a list of argument lists")
    for i, args in enumerate(raw_presets):
        items = _strings(row, args, f"try_it.planner_args[{i}]", unique=False) if isinstance(args, list) else None
        if not items or items[0] not in _PRESET_COMMANDS:
            raise row.fail(f"try_it.planner_args[{i}] must be a list starting with one of {sorted(_PRESET_COMMANDS)}")
        _check_preset_flags(row, items, f"try_it.planner_args[{i}]")
        presets.append(items)
    filt = value.get("catalog_filter", {})
    if not isinstance(filt, dict) or set(filt) - CATALOG_FILTER_KEYS:
        raise row.fail(f"try_it.catalog_filter keys must be among {sorted(CATALOG_FILTER_KEYS)}")
    compare = value.get("compare")
    pair: tuple[str, str] | None = None
    if compare is not None:
        items = _strings(row, compare, "try_it.compare")
        if len(items) != 2:
            raise row.fail("try_it.compare must name exactly two GPUs")
        pair = (items[0], items[1])
    return TryIt(planner_args=tuple(presets), catalog_filter=cast(dict[str, FactValue], filt), compare=pair)


def _check_preset_flags(row: _Row, items: tuple[str, ...], where: str) -> None:
    """Catalog and quote presets: only the options their commands take; a quote names an offering and a term."""
    allowed = _PRESET_FLAGS.get(items[0])
    if allowed is None:
        return
    flags = [w for w in items[1:] if w.startswith("--")]
    unknown = sorted(set(flags) - allowed)
    if unknown:
        raise row.fail(f"{where}: {items[0]} takes {sorted(allowed)}, not {unknown}")
    if items[0] == "quote" and (len(items) < 2 or items[1].startswith("--") or "--term" not in flags):
        raise row.fail(f"{where}: a quote preset names an offering and a --term, e.g. ['quote', 'h100-sxm-1x-vm', '--term', '1w']")


def _claims(row: _Row, value: object) -> tuple[Claim, ...]:
    from anchorgpu.glossary.claims import CLAIM_COMMANDS, parse_expectation

    if value is None:
        return ()
    if not isinstance(value, list):
        raise row.fail("'claims' must be a list of [[entry.claims]] tables")
    out: list[Claim] = []
    for i, raw in enumerate(value):
        where = f"claims[{i}]"
        if not isinstance(raw, dict) or set(raw) - _CLAIM_KEYS or not {"says", "run", "expect"} <= set(raw):
            raise row.fail(f"{where} must be a table with exactly {sorted(_CLAIM_KEYS)}")
        says = _text(row, raw["says"], f"{where}.says")
        run = _strings(row, raw["run"], f"{where}.run", unique=False)
        if not run or run[0] not in CLAIM_COMMANDS:
            raise row.fail(f"{where}.run must start with one of {sorted(CLAIM_COMMANDS)}")
        expect = raw["expect"]
        if not isinstance(expect, dict) or not expect:
            raise row.fail(f"{where}.expect must be a non-empty table of path = value")
        for path, want in expect.items():
            problem = parse_expectation(want)
            if problem:
                raise row.fail(f"{where}.expect.{path} {problem}")
        out.append(Claim(says=says, run=run, expect=tuple(expect.items())))
    return tuple(out)


def parse_entry(file: str, index: int, raw: object) -> Entry:
    """One ``[[entry]]`` table → :class:`Entry`, or a :class:`DataFileError` naming file and entry."""
    if not isinstance(raw, dict):
        raise DataFileError(file, f"entry #{index + 1}", "each [[entry]] must be a table")
    row = _Row(file, index, raw.get("id"))
    unknown = set(raw) - _ENTRY_KEYS
    if unknown:
        raise row.fail(f"unknown key(s) {sorted(unknown)}")
    for key in _REQUIRED:
        if key not in raw:
            raise row.fail(f"{key!r} is missing")
    entry_id = _text(row, raw["id"], "id")
    if not _ID.match(entry_id):
        raise row.fail("id must be lowercase words joined by '-', e.g. 'kv-cache'")
    kind = raw["kind"]
    if kind not in KINDS:
        raise row.fail(f"kind {kind!r} is not one of {list(KINDS)}")
    level = raw["level"]
    if level not in LEVELS:
        raise row.fail(f"level {level!r} is not one of {list(LEVELS)}")
    stages = _strings(row, raw["stages"], "stages")
    if not stages or set(stages) - set(STAGES):
        raise row.fail(f"stages must be a non-empty subset of {list(STAGES)}")
    aliases = raw.get("aliases", {})
    if not isinstance(aliases, dict) or set(aliases) - {"en", "ru"}:
        raise row.fail("'aliases' must be a table with 'en' and/or 'ru' lists")
    term = _bilingual(row, raw, "term")
    short = _bilingual(row, raw, "short")
    long = _bilingual(row, raw, "long")
    assert term is not None and short is not None and long is not None
    example = _bilingual(row, raw, "example", required=kind != "technology")
    codes = _strings(row, raw.get("codes"), "codes")
    for code in codes:
        if not _CODE.match(code):
            raise row.fail(f"code {code!r} must be snake_case")
    sources = _strings(row, raw.get("sources"), "sources")
    if not sources:
        raise row.fail("'sources' must name at least one source")
    claims = _claims(row, raw.get("claims"))
    english = " ".join(t.en for t in (short, long, example, _bilingual(row, raw, "caveat", required=False)) if t)
    for claim in claims:
        if claim.says not in english:
            raise row.fail(f"claim {claim.says!r} does not quote the entry's English text")
    return Entry(
        id=entry_id,
        kind=cast(Kind, kind),
        term=term,
        aliases_en=_strings(row, aliases.get("en"), "aliases.en"),
        aliases_ru=_strings(row, aliases.get("ru"), "aliases.ru"),
        short=short,
        long=long,
        example=example,
        caveat=_bilingual(row, raw, "caveat", required=False),
        level=level,
        stages=stages,
        tags=_strings(row, raw.get("tags"), "tags"),
        related=_strings(row, raw.get("related"), "related"),
        technologies=_strings(row, raw.get("technologies"), "technologies"),
        codes=codes,
        facts=_facts(row, raw.get("facts")),
        sources=sources,
        try_it=_try_it(row, raw.get("try_it")),
        file=file,
        claims=claims,
    )


def parse_file(file: str, text: str) -> list[Entry]:
    """Parse one TOML data file's text; ``file`` is the name used in error messages."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(file, "?", f"not valid TOML: {exc}") from exc
    extra = set(data) - {"entry"}
    if extra:
        raise DataFileError(file, "top level", f"unknown key(s) {sorted(extra)}; expected only [[entry]] tables")
    raw_entries = data.get("entry", [])
    if not isinstance(raw_entries, list) or not raw_entries:
        raise DataFileError(file, "top level", "expected at least one [[entry]] table")
    return [parse_entry(file, i, raw) for i, raw in enumerate(raw_entries)]


def _fail(entry: Entry, reason: str) -> DataFileError:
    return DataFileError(entry.file, f"entry {entry.id!r}", reason)


def build_glossary(entries: Iterable[Entry]) -> Glossary:
    """Check the cross-entry rules and compute reverse links and the error/warning code index."""
    by_id: dict[str, Entry] = {}
    names: dict[str, str] = {}
    codes: dict[str, str] = {}
    for entry in entries:
        if entry.id in by_id:
            raise _fail(entry, f"duplicate id (also in {by_id[entry.id].file})")
        by_id[entry.id] = entry
        for name in entry.names():
            key = compact(name)
            owner = names.setdefault(key, entry.id)
            if owner != entry.id:
                raise _fail(entry, f"name {name!r} is already used by entry {owner!r}")
        for code in entry.codes:
            owner = codes.setdefault(code, entry.id)
            if owner != entry.id:
                raise _fail(entry, f"code {code!r} is already explained by entry {owner!r}")
    reverse: dict[str, list[str]] = {entry_id: [] for entry_id in by_id}
    for entry in by_id.values():
        for target in entry.related:
            if target == entry.id:
                raise _fail(entry, "an entry cannot be related to itself")
            if target not in by_id:
                raise _fail(entry, f"related entry {target!r} does not exist")
            reverse[target].append(entry.id)
        for target in entry.technologies:
            if target not in by_id:
                raise _fail(entry, f"technology {target!r} does not exist")
            if by_id[target].kind != "technology":
                raise _fail(entry, f"technology link {target!r} points at an entry of kind {by_id[target].kind!r}")
            if target == entry.id:
                raise _fail(entry, "an entry cannot list itself as a technology")
            reverse[target].append(entry.id)
    linking = {k: tuple(dict.fromkeys(v)) for k, v in reverse.items()}
    return Glossary(entries=by_id, linking_here=linking, code_index=codes)


def load_glossary_from(paths: Iterable[Path]) -> Glossary:
    """Load and validate the given TOML files (used by tests on purpose-made bad files)."""
    entries: list[Entry] = []
    for path in sorted(paths):
        entries.extend(parse_file(path.name, path.read_text(encoding="utf-8")))
    return build_glossary(entries)


@cache
def load_glossary() -> Glossary:
    """The shipped glossary (package data ``anchorgpu/glossary/data/*.toml``), loaded once per process."""
    folder = resources.files("anchorgpu.glossary").joinpath("data")
    entries: list[Entry] = []
    for item in sorted(folder.iterdir(), key=lambda p: p.name):
        if item.name.endswith(".toml"):
            entries.extend(parse_file(f"glossary/data/{item.name}", item.read_text(encoding="utf-8")))
    return build_glossary(entries)
