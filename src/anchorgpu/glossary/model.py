"""Frozen records of the glossary: one :class:`Entry` per concept, technology, hardware term or product rule.

Every text a reader sees exists in English and Russian (:class:`Bilingual`); the loader refuses an entry
that lacks either language. Links between entries (``related``, ``technologies``) are ids checked at load.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from anchorgpu.glossary.claims import Claim

__all__ = [
    "KINDS",
    "LANGS",
    "LEVELS",
    "STAGES",
    "DEFINITION_CAVEAT",
    "Bilingual",
    "Entry",
    "FactValue",
    "Kind",
    "Lang",
    "SearchHit",
    "TryIt",
]

Lang = Literal["en", "ru"]
LANGS: tuple[Lang, ...] = ("en", "ru")
Kind = Literal["concept", "hardware", "technology", "commercial"]
KINDS: tuple[Kind, ...] = ("concept", "hardware", "technology", "commercial")
LEVELS: tuple[str, ...] = ("foundational", "intermediate", "advanced")
STAGES: tuple[str, ...] = ("training", "inference", "deployment")
FactValue = int | float | str | bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Bilingual:
    """One text in both languages."""

    en: str
    ru: str

    def get(self, lang: Lang) -> str:
        """The text in ``lang``.

        >>> Bilingual(en="KV cache", ru="KV-кэш").get("ru")
        'KV-кэш'
        """
        return self.ru if lang == "ru" else self.en


#: Shown with every entry (page, CLI card, JSON ``disclaimer``): a definition is not a promise of support.
DEFINITION_CAVEAT = Bilingual(
    en="This entry explains an idea; it does not promise that your particular workload, library version or network "
    "layout will run on an AnchorGPU allocation. Check that with the planner and a short trial run.",
    ru="Статья объясняет понятие и не обещает, что именно ваша задача, версия библиотеки или сетевая топология "
    "заработает в аренде AnchorGPU. Проверьте это в планировщике и коротким пробным запуском.",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TryIt:
    """Links from an entry into the product.

    ``planner_args``: one or more argument lists for ``anchorgpu`` (e.g. ``("plan", "llama-3.1-8b", "--gpu",
    "h100", "--context", "8192")``) — several lists are meant to be compared side by side. Besides the planner
    (``plan``, ``recommend``, ``model``) a preset may be a catalog listing (``offerings --gpu l4``) or a live
    quote (``quote h100-sxm-1x-vm --term 1w``), priced on the entry page from the shipped catalog.
    ``catalog_filter``: glossary filter vocabulary over offerings (see :mod:`anchorgpu.glossary.links`).
    ``compare``: two GPU names for ``anchorgpu gpus compare A B``.
    """

    planner_args: tuple[tuple[str, ...], ...] = ()
    catalog_filter: Mapping[str, FactValue] = field(default_factory=dict)
    compare: tuple[str, str] | None = None

    @property
    def empty(self) -> bool:
        return not self.planner_args and not self.catalog_filter and self.compare is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One glossary entry. ``file`` names the data file it came from (for error messages)."""

    id: str
    kind: Kind
    term: Bilingual
    aliases_en: tuple[str, ...]
    aliases_ru: tuple[str, ...]
    short: Bilingual
    long: Bilingual
    example: Bilingual | None
    caveat: Bilingual | None
    level: str
    stages: tuple[str, ...]
    tags: tuple[str, ...]
    related: tuple[str, ...]
    technologies: tuple[str, ...]
    codes: tuple[str, ...]
    facts: Mapping[str, FactValue]
    sources: tuple[str, ...]
    try_it: TryIt
    file: str
    claims: tuple[Claim, ...] = ()

    def aliases(self, lang: Lang) -> tuple[str, ...]:
        return self.aliases_ru if lang == "ru" else self.aliases_en

    def names(self) -> tuple[str, ...]:
        """Every name the entry answers to: id, both terms, all aliases (no duplicates, stable order)."""
        seen: dict[str, None] = {}
        for name in (self.id, self.term.en, self.term.ru, *self.aliases_en, *self.aliases_ru):
            seen.setdefault(name, None)
        return tuple(seen)


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """One search result: the entry, its score (higher is better) and what matched (``tier``, ``matched``)."""

    entry: Entry
    score: float
    tier: Literal["exact", "prefix", "tokens", "fuzzy", "text"]
    matched: str
