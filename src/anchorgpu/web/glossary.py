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

from anchorgpu.web.templating import render

router = APIRouter()

#: Interface words of the glossary pages in both languages (the entries carry their own texts).
UI: dict[str, dict[str, str]] = {
    "en": {
        "title": "Glossary", "search": "Search", "placeholder": "KV cache, FSDP, кэш KV, nv link …",
        "intro": "GPU, ML-systems and catalog terms in English and Russian. Every entry links into the planner or the catalog.",
        "results": "Results for", "none": "Nothing matched. Try another spelling, or browse the list below.",
        "kinds": "By kind", "concept": "Concepts", "hardware": "Hardware", "technology": "Technologies",
        "commercial": "Product and booking", "aliases": "Also called", "example": "Example", "caveat": "Caveat",
        "level": "Level", "stages": "Stages", "tags": "Tags", "related": "Related", "linking": "Concepts linking here",
        "tech": "Technologies", "try": "Try it", "planner": "Open in the planner", "cli": "On the command line",
        "catalog": "Offerings that match", "open_catalog": "Open the catalog with this filter",
        "compare": "Compare GPUs", "codes": "Explains codes", "facts": "Product facts", "sources": "Sources",
        "english": "English", "russian": "Русский", "errors": "Error and warning codes", "code": "Code",
        "entry": "Entry", "all_codes": "All error and warning codes", "switch": "Русский", "matched": "matched",
        "no_offerings": "No offering in the catalog matches this filter.",
        "open_offerings": "Open the catalog", "open_quote": "Build this quote", "open_recommend": "Open the recommendations",
        "live_quote": "Priced now from the catalog", "total": "total", "effective": "effective per GPU-hour",
        "comparison_rate": "730-h comparison rate", "not_priced": "Not priced", "hours": "h",
    },
    "ru": {
        "title": "Глоссарий", "search": "Найти", "placeholder": "KV-кэш, FSDP, kv cache, nv link …",
        "intro": "Термины GPU, ML-систем и каталога на русском и английском. Каждая статья ведёт в планировщик или каталог.",
        "results": "Результаты по запросу", "none": "Ничего не нашлось. Попробуйте другое написание или посмотрите список ниже.",
        "kinds": "По видам", "concept": "Понятия", "hardware": "Оборудование", "technology": "Технологии",
        "commercial": "Продукт и бронирование", "aliases": "Другие названия", "example": "Пример", "caveat": "Оговорка",
        "level": "Уровень", "stages": "Этапы", "tags": "Теги", "related": "Связанные понятия", "linking": "Ссылаются сюда",
        "tech": "Технологии", "try": "Попробовать", "planner": "Открыть в планировщике", "cli": "В командной строке",
        "catalog": "Подходящие предложения", "open_catalog": "Открыть каталог с этим фильтром",
        "compare": "Сравнить GPU", "codes": "Объясняет коды", "facts": "Факты о продукте", "sources": "Источники",
        "english": "English", "russian": "Русский", "errors": "Коды ошибок и предупреждений", "code": "Код",
        "entry": "Статья", "all_codes": "Все коды ошибок и предупреждений", "switch": "English", "matched": "совпало",
        "no_offerings": "Ни одно предложение каталога не подходит под этот фильтр.",
        "open_offerings": "Открыть каталог", "open_quote": "Собрать это предложение", "open_recommend": "Открыть рекомендации",
        "live_quote": "Цена по каталогу сейчас", "total": "итого", "effective": "фактически за GPU-час",
        "comparison_rate": "ставка для сравнения (730 ч)", "not_priced": "Нет цены", "hours": "ч",
    },
}
KIND_ORDER = ("concept", "hardware", "technology", "commercial")
#: Level and stage values as shown on the pages.
VALUES: dict[str, dict[str, str]] = {
    "en": {"foundational": "foundational", "intermediate": "intermediate", "advanced": "advanced",
           "training": "training", "inference": "inference", "deployment": "deployment"},
    "ru": {"foundational": "базовый", "intermediate": "средний", "advanced": "продвинутый",
           "training": "обучение", "inference": "инференс", "deployment": "развёртывание"},
}


def _fmt(value: Any, unit: str) -> str:
    """One comparison value for display: bytes as GiB, bytes/s as TB/s, FLOP/s as TFLOPS."""
    if value is None:
        return "–"
    scale = {"bytes": (2**30, "GiB"), "bytes/s": (1e12, "TB/s"), "FLOP/s": (1e12, "TFLOPS")}.get(unit)
    if scale is not None:
        return f"{float(value) / scale[0]:,.2f} {scale[1]}".replace(".00 ", " ")
    return f"{value} {unit}".strip()


def comparison_rows(pair: tuple[str, str]) -> dict[str, Any]:
    """The hardware comparison of two GPUs (``anchorgpu gpus compare A B``) as rows for the entry page."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.hardware.compare import compare_gpus

    result = compare_gpus(get_gpu(pair[0]), get_gpu(pair[1]))
    rows = [
        {"label": m.label, "a": _fmt(m.a, m.unit) if m.a_status == "known" else m.a_status,
         "b": _fmt(m.b, m.unit) if m.b_status == "known" else m.b_status,
         "ratio": f"{m.ratio:.2f}×" if m.ratio is not None else "–"}
        for m in result.metrics
        if m.unit != "USD/GPU-hour"
    ]
    return {"a": result.a.display_name, "b": result.b.display_name, "rows": rows, "statements": list(result.statements)}


def _priced(args: tuple[str, ...]) -> dict[str, Any]:
    """A quote preset priced now (pure pricing from the shipped catalog; nothing stored), or why not."""
    from anchorgpu.errors import AnchorError
    from anchorgpu.glossary.links import live_quote

    try:
        quote = live_quote(args)
    except AnchorError as exc:
        return {"error": exc.message}
    return {"total": f"${quote.total_usd:,}", "hours": quote.hours, "gpus": quote.gpus,
            "effective": f"${quote.effective_per_gpu_hour_usd:,}",
            "comparison": f"${quote.per_gpu_hour_usd:,}" if quote.per_gpu_hour_usd is not None else None,
            "statement": quote.statement}


def _language(lang: str | None, request: Request | None = None) -> str:
    """``?lang=`` when given; else the site's choice for this request (the language switch's cookie, then
    ``Accept-Language``), so the glossary follows the rest of the site."""
    if lang is None and request is not None:
        from anchorgpu.web.i18n import locale_for

        return locale_for(request)[0]
    return "ru" if (lang or "").strip().lower() == "ru" else "en"


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
    context: dict[str, Any] = {"ui": UI[language], "lang": language, "q": query, "hits": hits, "groups": groups,
                               "count": len(entries)}
    return render(request, "glossary.html", context)


@router.get("/glossary/errors", response_class=HTMLResponse)
def glossary_errors_page(request: Request, lang: Annotated[str | None, Query(max_length=5)] = None) -> Response:
    """Every code an entry explains, with an anchor per code (``#idempotency_key_reused``)."""
    from anchorgpu.glossary import load_glossary

    language = _language(lang, request)
    glossary = load_glossary()
    rows = sorted((code, glossary.entries[entry_id]) for code, entry_id in glossary.code_index.items())
    return render(request, "glossary_errors.html", {"ui": UI[language], "lang": language, "rows": rows})


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
    presets = [{"command": cmd, "url": preset_url(args), "kind": args[0], "quote": _priced(args) if args[0] == "quote" else None,
                "offerings": listed_offerings(args) if args[0] == "offerings" else None}
               for cmd, args in zip(try_it["commands"], entry.try_it.planner_args, strict=False)]
    context: dict[str, Any] = {
        "ui": UI[language],
        "uis": UI,
        "values": VALUES[language],
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
        "comparison": comparison_rows(entry.try_it.compare) if entry.try_it.compare else None,
    }
    return render(request, "glossary_entry.html", context)
