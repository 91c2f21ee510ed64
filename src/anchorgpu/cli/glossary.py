"""``anchorgpu glossary [QUERY] [--lang en|ru] [--json]``: the bilingual glossary on the command line.

Without a query it lists every entry; with one it shows the best match in full (a Rich panel) and lists
the other matches. ``--json`` prints a list of entries (best first for a query) with the stable keys of
:func:`anchorgpu.glossary.entry_to_json`; a query's entries also carry ``match`` {score, tier, matched}.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from anchorgpu.cli._app import app, console, emit_json

if TYPE_CHECKING:
    from anchorgpu.glossary import Entry, Lang

_LABELS: dict[str, dict[str, str]] = {
    "en": {
        "aliases": "Also called", "example": "Example", "caveat": "Caveat", "level": "Level", "stages": "Stages",
        "tags": "Tags", "related": "Related", "linking": "Concepts linking here", "tech": "Technologies",
        "try": "Try it", "sources": "Sources", "codes": "Explains codes", "other": "Other matches", "facts": "Facts",
        "list_title": "AnchorGPU glossary", "term": "Term", "short": "In short",
        "detected": "The query is in Cyrillic, so the answer is in Russian (--lang en to override).",
        "foundational": "foundational", "intermediate": "intermediate", "advanced": "advanced",
        "training": "training", "inference": "inference", "deployment": "deployment", "kind": "kind",
        "concept": "concept", "hardware": "hardware", "technology": "technology", "commercial": "product and booking",
    },
    "ru": {
        "aliases": "Другие названия", "example": "Пример", "caveat": "Оговорка", "level": "Уровень", "stages": "Этапы",
        "tags": "Теги", "related": "Связанные понятия", "linking": "Ссылаются сюда", "tech": "Технологии",
        "try": "Попробовать", "sources": "Источники", "codes": "Объясняет коды", "other": "Другие совпадения",
        "facts": "Факты", "list_title": "Глоссарий AnchorGPU", "term": "Термин", "short": "Кратко",
        "detected": "Запрос набран кириллицей, поэтому ответ на русском (--lang en — ответ на английском).",
        "foundational": "базовый", "intermediate": "средний", "advanced": "продвинутый",
        "training": "обучение", "inference": "инференс", "deployment": "развёртывание", "kind": "вид",
        "concept": "понятие", "hardware": "оборудование", "technology": "технология", "commercial": "продукт и бронирование",
    },
}


def _lang(value: str | None, query: str | None = None) -> Lang:
    """``--lang`` when given; otherwise Russian for a query written in Cyrillic, else English."""
    from anchorgpu.errors import InvalidInput
    from anchorgpu.glossary.text import is_cyrillic

    if value is None:
        return "ru" if query and is_cyrillic(query) else "en"
    lang = value.strip().lower()
    if lang not in ("en", "ru"):
        raise InvalidInput(f"--lang must be 'en' or 'ru', not {value!r}")
    return "ru" if lang == "ru" else "en"


def _names(ids: tuple[str, ...] | list[str], lang: Lang) -> str:
    from anchorgpu.glossary import get_entry

    return ", ".join(f"{get_entry(i).term.get(lang)} ({i})" for i in ids)


def _entry_text(entry: Entry, lang: Lang) -> str:
    """The body of the entry's panel, as Rich markup (user text escaped)."""
    from rich.markup import escape

    from anchorgpu.glossary import DEFINITION_CAVEAT, linking_here
    from anchorgpu.glossary.links import try_it_json

    label = _LABELS[lang]
    other: Lang = "en" if lang == "ru" else "ru"
    lines = [f"[bold]{escape(entry.short.get(lang))}[/bold]", "", escape(entry.long.get(lang))]
    if entry.example:
        lines += ["", f"[cyan]{label['example']}:[/cyan] {escape(entry.example.get(lang))}"]
    if entry.caveat:
        lines += [f"[yellow]{label['caveat']}:[/yellow] {escape(entry.caveat.get(lang))}"]
    aliases = [entry.term.get(other), *entry.aliases(lang), *entry.aliases(other)]
    aliases = [a for a in dict.fromkeys(aliases) if a != entry.term.get(lang)]
    lines += ["", f"[dim]{label['aliases']}:[/dim] {escape(', '.join(aliases))}"]
    lines += [f"[dim]{label['level']}:[/dim] {label[entry.level]} · [dim]{label['stages']}:[/dim] "
              f"{', '.join(label[s] for s in entry.stages)}"
              f" · [dim]{label['tags']}:[/dim] {escape(', '.join(entry.tags))}"]
    if entry.facts:
        lines += [f"[dim]{label['facts']}:[/dim] " + escape(", ".join(f"{k} = {v}" for k, v in entry.facts.items()))]
    if entry.related:
        lines += [f"[dim]{label['related']}:[/dim] {escape(_names(entry.related, lang))}"]
    back = linking_here(entry.id)
    if back:
        lines += [f"[dim]{label['linking']}:[/dim] {escape(', '.join(f'{e.term.get(lang)} ({e.id})' for e in back))}"]
    if entry.technologies:
        lines += [f"[dim]{label['tech']}:[/dim] {escape(_names(entry.technologies, lang))}"]
    if entry.codes:
        lines += [f"[dim]{label['codes']}:[/dim] {escape(', '.join(entry.codes))}"]
    try_it = try_it_json(entry.try_it)
    if try_it["commands"]:
        lines += ["", f"[green]{label['try']}:[/green]"]
        lines += [f"  $ {escape(cmd)}" for cmd in try_it["commands"]]
        lines += [f"  {escape(url)}" for url in try_it["preset_urls"] if url]
    lines += ["", f"[dim]{label['sources']}:[/dim] {escape(', '.join(entry.sources))}"]
    lines += ["", f"[italic]{escape(DEFINITION_CAVEAT.get(lang))}[/italic]"]
    return "\n".join(lines)


def _show_entry(entry: Entry, lang: Lang) -> None:
    from rich.markup import escape
    from rich.panel import Panel

    other: Lang = "en" if lang == "ru" else "ru"
    title = f"[bold]{escape(entry.term.get(lang))}[/bold]"
    if entry.term.get(other) != entry.term.get(lang):
        title += f" · {escape(entry.term.get(other))}"
    console().print(Panel(_entry_text(entry, lang), title=title, subtitle=f"{entry.id} · {_LABELS[lang][entry.kind]}", expand=False))


def _list_table(entries: list[Entry], lang: Lang, *, title: str, brief: bool = False) -> None:
    from rich.table import Table

    label = _LABELS[lang]
    table = Table(title=title, show_lines=False)
    table.add_column("id", style="cyan", no_wrap=True)
    table.add_column(label["term"])
    table.add_column(label["kind"], style="dim")
    if not brief:
        table.add_column(label["short"])
    for entry in entries:
        row = [entry.id, entry.term.get(lang), label[entry.kind]]
        table.add_row(*(row if brief else [*row, entry.short.get(lang)]))
    console().print(table)


def _no_match(query: str) -> Exception:
    from anchorgpu.errors import did_you_mean
    from anchorgpu.glossary import UnknownGlossaryEntry, load_glossary

    names = [n for e in load_glossary() for n in e.names()]
    return UnknownGlossaryEntry(query, did_you_mean(query, names))


@app.command("glossary")
def glossary_command(
    query: Annotated[str | None, typer.Argument(help="A term in English or Russian, an alias or an id (typos are fine)")] = None,
    lang: Annotated[str | None, typer.Option("--lang", help="Language of the answer: en or ru (default: ru for a query "
                                                            "written in Cyrillic, else en)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print entries as JSON (stable keys)")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, max=200, help="How many matches to list for a query")] = 10,
) -> None:
    """Look up a GPU/ML/catalog concept in English or Russian: definition, example, caveat and a 'try it' preset."""
    from anchorgpu.glossary import entry_to_json, list_entries, search

    language = _lang(lang, query)
    detected = lang is None and language == "ru"
    if query is None or not query.strip():
        entries = list_entries(language)
        if as_json:
            emit_json([entry_to_json(e) for e in entries])
            return
        _list_table(entries, language, title=f"{_LABELS[language]['list_title']} ({len(entries)})")
        return
    hits = search(query, language, limit=limit)
    if not hits:
        raise _no_match(query)
    if as_json:
        out: list[dict[str, Any]] = []
        for hit in hits:
            item = entry_to_json(hit.entry)
            item["match"] = {"score": round(hit.score, 1), "tier": hit.tier, "matched": hit.matched}
            out.append(item)
        emit_json(out)
        return
    if detected:
        console().print(f"[dim]{_LABELS[language]['detected']}[/dim]")
    _show_entry(hits[0].entry, language)
    if len(hits) > 1:
        _list_table([h.entry for h in hits[1:]], language, title=_LABELS[language]["other"], brief=True)
