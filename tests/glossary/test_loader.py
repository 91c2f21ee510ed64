"""The loader refuses bad data and names the file and the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchorgpu.errors import DataFileError
from anchorgpu.glossary.loader import load_glossary_from, parse_file

GOOD = '''
[[entry]]
id = "{id}"
kind = "concept"
level = "foundational"
stages = ["inference"]
sources = ["test"]
related = {related}
technologies = {technologies}
term.en = "{term}"
term.ru = "{term_ru}"
aliases.en = {aliases_en}
aliases.ru = ["термин {id}"]
short.en = "A short English text."
short.ru = "{short_ru}"
long.en = "A longer English text."
long.ru = "Длинный русский текст."
example.en = "An example."
example.ru = "Пример."
'''


def entry(**kw: object) -> str:
    values = {"id": "alpha", "related": "[]", "technologies": "[]", "term": "Alpha", "term_ru": "Альфа",
              "aliases_en": "[]", "short_ru": "Короткий русский текст."}
    values.update({k: str(v) for k, v in kw.items()})
    return GOOD.format(**values)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_pair_of_files_loads_and_links_resolve_both_ways(tmp_path: Path) -> None:
    a = write(tmp_path, "a.toml", entry(id="alpha", related='["beta"]'))
    b = write(tmp_path, "b.toml", entry(id="beta", term="Beta", term_ru="Бета"))
    glossary = load_glossary_from([a, b])
    assert list(glossary.entries) == ["alpha", "beta"]
    assert glossary.linking_here["beta"] == ("alpha",)
    assert glossary.linking_here["alpha"] == ()


@pytest.mark.parametrize(
    ("texts", "message"),
    [
        ([entry(related='["ghost"]')], "related entry 'ghost' does not exist"),
        ([entry(technologies='["ghost"]')], "technology 'ghost' does not exist"),
        ([entry(), entry(term="Other", term_ru="Другой")], "duplicate id"),
        ([entry(), entry(id="beta", term="Beta", term_ru="Бета", aliases_en='["Alpha"]')], "already used by entry 'alpha'"),
        ([entry(short_ru="Only Latin letters here.")], "short.ru has no Cyrillic letters"),
        ([entry(related='["alpha"]')], "related to itself"),
    ],
)
def test_cross_entry_errors_name_the_file_and_the_entry(tmp_path: Path, texts: list[str], message: str) -> None:
    paths = [write(tmp_path, f"f{i}.toml", t) for i, t in enumerate(texts)]
    with pytest.raises(DataFileError) as err:
        load_glossary_from(paths)
    assert message in err.value.message
    assert ".toml, row entry '" in err.value.message


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t.replace('short.ru = "Короткий русский текст."\n', ""), "short.ru is missing"),
        (lambda t: t.replace('kind = "concept"', 'kind = "gadget"'), "kind 'gadget'"),
        (lambda t: t.replace('level = "foundational"', 'level = "expert"'), "level 'expert'"),
        (lambda t: t.replace('stages = ["inference"]', 'stages = ["marketing"]'), "stages must be"),
        (lambda t: t.replace('id = "alpha"', 'id = "Alpha Beta"'), "id must be lowercase"),
        (lambda t: t + 'colour = "blue"\n', "unknown key(s) ['colour']"),
        (lambda t: t.replace('example.en = "An example."\n', ""), "example.en is missing"),
        (lambda t: t + 'try_it.planner_args = [["book", "quote-1"]]\n', "must be a list starting with"),
        (lambda t: t + 'try_it.compare = ["h100"]\n', "exactly two GPUs"),
        (lambda t: t + 'try_it.catalog_filter = { colour = "red" }\n', "catalog_filter keys"),
        (lambda t: t.replace('long.en = "A longer English text."', 'long.en = "Текст."'), "long.en contains Cyrillic"),
        (lambda t: t.replace('sources = ["test"]', "sources = []"), "at least one source"),
        (lambda t: t + "codes = [\"Bad-Code\"]\n", "snake_case"),
    ],
)
def test_entry_errors_name_the_file_and_the_entry(mutate, message: str) -> None:
    with pytest.raises(DataFileError) as err:
        parse_file("topic.toml", mutate(entry()))
    assert message in err.value.message
    assert err.value.message.startswith("topic.toml, row entry ")


def test_a_file_that_is_not_toml_is_named() -> None:
    with pytest.raises(DataFileError, match=r"broken\.toml.*not valid TOML"):
        parse_file("broken.toml", "[[entry]\nid = ")
