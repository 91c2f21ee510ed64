"""AnchorGPU glossary: bilingual (English/Russian) entries as data, search, and links into the product.

Public API::

    search(query, lang=None, *, limit=10) -> list[SearchHit]   # best match first
    get_entry(entry_id) -> Entry                                # raises UnknownGlossaryEntry (did you mean)
    list_entries(lang="en") -> list[Entry]                      # sorted by term in that language
    linking_here(entry_id) -> tuple[Entry, ...]                 # computed from ``related``/``technologies``
    entry_for_code(code) -> Entry | None                        # which entry explains an error/warning code
    entry_to_json(entry) -> dict                                # the stable JSON shape (CLI --json, API)
    load_glossary() -> Glossary                                 # all entries, validated

Entries live in ``glossary/data/*.toml`` (see ``loader`` for the schema and its checks).
"""

from __future__ import annotations

from typing import Any

from anchorgpu.glossary.errors import UnknownGlossaryEntry
from anchorgpu.glossary.loader import Glossary, load_glossary
from anchorgpu.glossary.model import DEFINITION_CAVEAT, LANGS, Bilingual, Entry, Lang, SearchHit, TryIt

__all__ = [
    "DEFINITION_CAVEAT",
    "LANGS",
    "Bilingual",
    "Entry",
    "Glossary",
    "Lang",
    "SearchHit",
    "TryIt",
    "UnknownGlossaryEntry",
    "entry_for_code",
    "entry_to_json",
    "get_entry",
    "linking_here",
    "list_entries",
    "load_glossary",
    "search",
]


def search(query: str, lang: Lang | None = None, *, limit: int = 10) -> list[SearchHit]:
    """Entries matching ``query`` in either language, best first (see :mod:`anchorgpu.glossary.ranking`)."""
    from anchorgpu.glossary.ranking import search_glossary

    return search_glossary(load_glossary(), query, lang, limit=limit)


def get_entry(entry_id: str) -> Entry:
    """The entry with this id; an unknown id raises :class:`UnknownGlossaryEntry` with the closest ids."""
    from anchorgpu.errors import did_you_mean

    glossary = load_glossary()
    entry = glossary.entries.get(entry_id.strip().lower())
    if entry is None:
        raise UnknownGlossaryEntry(entry_id, did_you_mean(entry_id, glossary.entries))
    return entry


def list_entries(lang: Lang = "en") -> list[Entry]:
    """Every entry, sorted by its term in ``lang`` (case-insensitive)."""
    from anchorgpu.glossary.text import fold

    return sorted(load_glossary().entries.values(), key=lambda e: fold(e.term.get(lang)))


def linking_here(entry_id: str) -> tuple[Entry, ...]:
    """Entries whose ``related`` or ``technologies`` point at ``entry_id``."""
    glossary = load_glossary()
    get_entry(entry_id)
    return tuple(glossary.entries[i] for i in glossary.linking_here[entry_id.strip().lower()])


def entry_for_code(code: str) -> Entry | None:
    """The entry that explains an error or planner-warning ``code`` (entries list them in ``codes``)."""
    glossary = load_glossary()
    entry_id = glossary.code_index.get(code)
    return glossary.entries[entry_id] if entry_id else None


def _bi(value: Bilingual | None) -> dict[str, str] | None:
    return None if value is None else {"en": value.en, "ru": value.ru}


def entry_to_json(entry: Entry) -> dict[str, Any]:
    """The stable JSON shape of one entry (keys never removed; new keys may be added)."""
    from anchorgpu.glossary.links import try_it_json

    return {
        "id": entry.id,
        "kind": entry.kind,
        "term": _bi(entry.term),
        "aliases": {"en": list(entry.aliases_en), "ru": list(entry.aliases_ru)},
        "short": _bi(entry.short),
        "long": _bi(entry.long),
        "example": _bi(entry.example),
        "caveat": _bi(entry.caveat),
        "level": entry.level,
        "stages": list(entry.stages),
        "tags": list(entry.tags),
        "related": list(entry.related),
        "technologies": list(entry.technologies),
        "linking_here": list(load_glossary().linking_here.get(entry.id, ())),
        "codes": list(entry.codes),
        "facts": dict(entry.facts),
        "try_it": try_it_json(entry.try_it),
        "sources": list(entry.sources),
        "claims": [{"says": c.says, "run": list(c.run), "expect": dict(c.expect)} for c in entry.claims],
        "disclaimer": _bi(DEFINITION_CAVEAT),
    }
