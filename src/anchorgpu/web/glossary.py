"""Glossary pages (written by the glossary area; WEB's app includes ``router``).

- ``/glossary?q=&lang=``: search in English or Russian (best match first), or the A–Z list by kind;
- ``/glossary/errors``: every error and planner-warning code with the entry that explains it (the
  ``type`` URIs of the API's problem+json bodies point here, ``/glossary/errors#<code>``);
- ``/glossary/{id}?lang=``: one entry in both languages, with related entries, "concepts linking here",
  technologies and "try it" links into the planner, the catalog and the GPU comparison.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import HTMLResponse, Response

from anchorgpu.web.i18n import PageText
from anchorgpu.web.refusals import refusal_words
from anchorgpu.web.templating import environment, render

router = APIRouter()

KIND_ORDER = ("concept", "hardware", "technology", "commercial")


def kind_names(text: PageText) -> dict[str, str]:
    """The entry kinds as the pages name them."""
    return {"concept": text.gettext("Concepts"), "hardware": text.gettext("Hardware"),
            "technology": text.gettext("Technologies"), "commercial": text.gettext("Product and booking")}


def value_names(text: PageText) -> dict[str, str]:
    """An entry's level and stage values as the pages name them."""
    return {"foundational": text.pgettext("glossary level", "foundational"),
            "intermediate": text.pgettext("glossary level", "intermediate"),
            "advanced": text.pgettext("glossary level", "advanced"),
            "training": text.pgettext("glossary stage", "training"),
            "inference": text.pgettext("glossary stage", "inference"),
            "deployment": text.pgettext("glossary stage", "deployment")}


def section_words(code: str) -> dict[str, str]:
    """The labels inside an entry's text in language ``code`` (an entry page shows both languages, each section
    labelled in its own language, whatever the page's language)."""
    text = PageText(code)
    return {"example": text.gettext("Example"), "caveat": text.gettext("Caveat"), "aliases": text.gettext("Also called")}


def _fmt(value: Any, unit: str, locale: str = "en") -> str:
    """One comparison value for display: bytes as GiB, bytes/s as TB/s, FLOP/s as TFLOPS, in the locale's digits.

    >>> _fmt(3.35e12, "bytes/s"), _fmt(3.35e12, "bytes/s", "ru"), _fmt(80 * 2**30, "bytes")
    ('3.35 TB/s', '3,35 TB/s', '80 GiB')
    """
    if value is None:
        return "–"
    scale = {"bytes": (2**30, "GiB"), "bytes/s": (1e12, "TB/s"), "FLOP/s": (1e12, "TFLOPS")}.get(unit)
    if scale is not None:
        digits = environment(locale).filters["num"](float(value) / scale[0], 2)
        return f"{digits.removesuffix('.00').removesuffix(',00')} {scale[1]}"
    return f"{value} {unit}".strip()


def comparison_rows(pair: tuple[str, str], text: PageText | None = None) -> dict[str, Any]:
    """The hardware comparison of two GPUs (``anchorgpu gpus compare A B``) as rows for the entry page, in the page's
    language (the same words as the GPU comparison page)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.hardware.compare import compare_gpus
    from anchorgpu.web.gpus import ComparisonWords

    text = text or PageText("en")
    words = ComparisonWords(text)
    result = compare_gpus(get_gpu(pair[0]), get_gpu(pair[1]))
    ratio = environment(text.locale).filters["num"]
    rows = [
        {"label": words.label(m), "a": _fmt(m.a, m.unit, text.locale) if m.a_status == "known" else words.status(m.a_status),
         "b": _fmt(m.b, m.unit, text.locale) if m.b_status == "known" else words.status(m.b_status),
         "ratio": f"{ratio(m.ratio, 2)}×" if m.ratio is not None else "–"}
        for m in result.metrics
        if m.unit != "USD/GPU-hour"
    ]
    return {"a": result.a.display_name, "b": result.b.display_name, "rows": rows, "statements": list(result.statements)}


def _priced(args: tuple[str, ...], locale: str = "en") -> dict[str, Any]:
    """A quote preset priced now (pure pricing from the shipped catalog; nothing stored), or why not; money in the
    page's format."""
    from anchorgpu.errors import AnchorError
    from anchorgpu.glossary.links import live_quote

    try:
        quote = live_quote(args)
    except AnchorError as exc:
        return {"error": refusal_words(exc, PageText(locale))}
    money = environment(locale).filters["money"]
    return {"total": money(quote.total_usd), "hours": quote.hours, "gpus": quote.gpus,
            "effective": money(quote.effective_per_gpu_hour_usd),
            "comparison": money(quote.per_gpu_hour_usd) if quote.per_gpu_hour_usd is not None else None,
            "statement": quote.statement}


def _language(lang: str | None, request: Request | None = None) -> str:
    """The page's language, as for every page (:func:`anchorgpu.web.i18n.locale_for`: ``?lang=``, then the language
    switch's cookie, then ``Accept-Language``), so the glossary's texts and the site's words always agree."""
    from anchorgpu.web.i18n import locale_for

    if request is not None:
        return locale_for(request)[0]
    return "ru" if (lang or "").strip().lower().startswith("ru") else "en"


@router.get("/glossary", response_class=HTMLResponse)
def glossary_page(
    request: Request,
    q: Annotated[str | None, Query(max_length=200)] = None,
    lang: Annotated[str | None, Query(max_length=5)] = None,
) -> Response:
    """Search box, results (best first) and the list of every entry grouped by kind."""
    from anchorgpu.glossary import list_entries, search

    language = _language(lang, request)
    query = (q or "").strip()
    hits = search(query, "ru" if language == "ru" else "en", limit=20) if query else []
    entries = list_entries("ru" if language == "ru" else "en")
    groups = [(kind, [e for e in entries if e.kind == kind]) for kind in KIND_ORDER]
    context: dict[str, Any] = {"kinds": kind_names(PageText(language)), "lang": language, "q": query, "hits": hits,
                               "groups": groups, "count": len(entries)}
    return render(request, "glossary.html", context)


@router.get("/glossary/errors", response_class=HTMLResponse)
def glossary_errors_page(request: Request, lang: Annotated[str | None, Query(max_length=5)] = None) -> Response:
    """Every code an entry explains, with an anchor per code (``#idempotency_key_reused``)."""
    from anchorgpu.glossary import load_glossary

    language = _language(lang, request)
    glossary = load_glossary()
    rows = sorted((code, glossary.entries[entry_id]) for code, entry_id in glossary.code_index.items())
    return render(request, "glossary_errors.html", {"lang": language, "rows": rows})


@router.get("/glossary/{entry_id}", response_class=HTMLResponse)
def glossary_entry_page(
    request: Request,
    entry_id: Annotated[str, Path(max_length=100)],
    lang: Annotated[str | None, Query(max_length=5)] = None,
) -> Response:
    """One entry: both languages, links in and out, and 'try it' presets; unknown ids get a 404 page."""
    from anchorgpu.glossary import DEFINITION_CAVEAT, get_entry, linking_here
    from anchorgpu.glossary.links import catalog_url, listed_offerings, matching_offerings, preset_url, try_it_json

    language = _language(lang, request)
    entry = get_entry(entry_id)
    try_it = try_it_json(entry.try_it)
    presets = [{"command": cmd, "url": preset_url(args), "kind": args[0], "quote": _priced(args, language) if args[0] == "quote" else None,
                "offerings": listed_offerings(args) if args[0] == "offerings" else None}
               for cmd, args in zip(try_it["commands"], entry.try_it.planner_args, strict=False)]
    context: dict[str, Any] = {
        "kinds": kind_names(PageText(language)),
        "sections": {code: section_words(code) for code in ("en", "ru")},
        "values": value_names(PageText(language)),
        "lang": language,
        "other": "en" if language == "ru" else "ru",
        "entry": entry,
        "disclaimer": DEFINITION_CAVEAT,
        "related": [get_entry(i) for i in entry.related],
        "technologies": [get_entry(i) for i in entry.technologies],
        "linking": list(linking_here(entry.id)),
        "presets": presets,
        "commands": try_it["commands"][len(presets):],
        "offerings": matching_offerings(entry.try_it.catalog_filter),
        "catalog_url": catalog_url(entry.try_it.catalog_filter) if entry.try_it.catalog_filter else None,
        "compare": entry.try_it.compare,
        "comparison": comparison_rows(entry.try_it.compare, PageText(language)) if entry.try_it.compare else None,
    }
    return render(request, "glossary_entry.html", context)
