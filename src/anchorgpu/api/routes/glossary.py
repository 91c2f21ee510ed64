"""``/v1/glossary``: the bilingual glossary (public). Written by the glossary area; WEB's app includes it.

``GET /glossary?q=&lang=`` searches (best first) or, without ``q``, lists every entry sorted by term in
``lang``; ``GET /glossary/{id}`` returns one entry. Entries have the keys of ``anchorgpu glossary --json``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, ConfigDict, Field

from anchorgpu.api.schemas import problems

router = APIRouter(prefix="/glossary", tags=["glossary"])

Language = Literal["en", "ru"]


class BilingualOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    en: str = Field(description="English text")
    ru: str = Field(description="Russian text")


class AliasesOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    en: list[str] = Field(description="Other English names (and names written in Latin script)")
    ru: list[str] = Field(description="Other Russian names")


class TryItOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    planner_args: list[list[str]] = Field(description="Argument lists for `anchorgpu` that demonstrate the concept (compare them side by side)")
    catalog_filter: dict[str, Any] | None = Field(description="Glossary filter over offerings (interconnect, kind, vendor, memory_type, fp8, fp4, min_gpus, gpu)")
    compare: list[str] | None = Field(description="Two GPU names for `anchorgpu gpus compare A B`")
    commands: list[str] = Field(description="The same presets as ready shell commands")
    planner_urls: list[str] = Field(description="Planner page URLs with the preset filled in")
    preset_urls: list[str | None] = Field(default_factory=list, description="For each preset, the page that runs it: planner, "
                                          "recommendations, catalog filter (`offerings`) or quote builder (`quote`); null for `model`")


class ClaimOut(BaseModel):
    says: str = Field(description="Words of the entry's English text that the claim backs")
    run: list[str] = Field(description="The read-only `anchorgpu` command whose --json answer verifies it")
    expect: dict[str, Any] = Field(description="Path in that answer -> value, or bounds {min, max, contains}")


class MatchOut(BaseModel):
    score: float = Field(description="Higher is better; bands: exact ≥ 950, prefix 800–900, words 500–780, fuzzy 440–500, text 100–250")
    tier: Literal["exact", "prefix", "tokens", "fuzzy", "text"] = Field(description="How the query matched")
    matched: str = Field(description="The name that matched ('' for a match in the text)")


class GlossaryEntryOut(BaseModel):
    """One entry, with the stable keys of `anchorgpu glossary --json`."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(description="Stable id, e.g. 'kv-cache'")
    kind: Literal["concept", "hardware", "technology", "commercial"] = Field(description="What the entry describes")
    term: BilingualOut = Field(description="The term in English and Russian")
    aliases: AliasesOut = Field(description="Other names it is found by, in each language")
    short: BilingualOut = Field(description="One-sentence definition")
    long: BilingualOut = Field(description="Longer explanation")
    example: BilingualOut | None = Field(description="A worked example (null for some technologies)")
    caveat: BilingualOut | None = Field(description="What to watch out for, where it matters")
    level: Literal["foundational", "intermediate", "advanced"] = Field(description="How much background the entry assumes")
    stages: list[Literal["training", "inference", "deployment"]] = Field(description="Where in the work the term comes up")
    tags: list[str] = Field(description="Topic tags")
    related: list[str] = Field(description="Ids of related entries")
    technologies: list[str] = Field(description="Ids of technology entries connected to this one")
    linking_here: list[str] = Field(description="Ids of entries whose related/technologies point here (computed)")
    codes: list[str] = Field(description="Error and planner-warning codes this entry explains")
    facts: dict[str, Any] = Field(description="Product facts stated as data (e.g. egress_tb_per_month_single_gpu)")
    try_it: TryItOut = Field(description="Planner presets, commands and pages that show the concept")
    sources: list[str] = Field(description="Where the entry's facts come from: URLs, or seed:NAME for the glossary it was seeded from")
    claims: list[ClaimOut] = Field(default_factory=list, description="Numeric claims of the entry with the command that checks "
                                   "each against the planner, the catalog, the pricing or the GPU data")
    disclaimer: BilingualOut | None = Field(default=None, description="Shown with every entry: a definition does not promise "
                                            "that a particular workload, library version or topology runs on an allocation")
    match: MatchOut | None = Field(default=None, description="Present in search results: how the entry matched")


class GlossaryList(BaseModel):
    data: list[GlossaryEntryOut] = Field(description="Matching entries, best first (the whole glossary without a query)")
    count: int = Field(description="Number of entries in data")
    query: str | None = Field(description="The search query, or null for the full list")
    lang: Language = Field(description="Language used to order the list and break ties")


def _entry_out(entry: Any, hit: Any | None = None) -> GlossaryEntryOut:
    from anchorgpu.glossary import entry_to_json

    data = entry_to_json(entry)
    if hit is not None:
        data["match"] = {"score": round(hit.score, 1), "tier": hit.tier, "matched": hit.matched}
    return GlossaryEntryOut.model_validate(data)


@router.get("", response_model=GlossaryList, summary="Search or list the glossary", responses=problems(422))
def glossary_route(
    q: Annotated[str | None, Query(max_length=200, description="Term, alias or id in English or Russian; typos and spacing variants are tolerated")] = None,
    lang: Annotated[Language | None, Query(description="en or ru: orders the list and breaks ties in search (default: ru "
                                                        "for a query written in Cyrillic, else en)")] = None,
    limit: Annotated[int | None, Query(ge=1, le=500, description="Most results to return (default: 20 for a search, all for the list)")] = None,
) -> GlossaryList:
    """Search in both languages (best match first), or list every entry when `q` is empty."""
    from anchorgpu.glossary import list_entries, search
    from anchorgpu.glossary.text import is_cyrillic

    language: Language = lang or ("ru" if q and is_cyrillic(q) else "en")
    if q is None or not q.strip():
        rows = [_entry_out(e) for e in list_entries(language)[:limit]]  # limit None = all
        return GlossaryList(data=rows, count=len(rows), query=None, lang=language)
    rows = [_entry_out(h.entry, h) for h in search(q, language, limit=limit or 20)]
    return GlossaryList(data=rows, count=len(rows), query=q, lang=language)


@router.get("/{entry_id}", response_model=GlossaryEntryOut, summary="Get one glossary entry", responses=problems(404, 422))
def glossary_entry_route(entry_id: str = Path(max_length=100, description="Entry id, e.g. 'kv-cache'")) -> GlossaryEntryOut:
    """One entry by id; 404 `unknown_glossary_entry` with the closest ids as suggestions."""
    from anchorgpu.glossary import get_entry

    return _entry_out(get_entry(entry_id))
