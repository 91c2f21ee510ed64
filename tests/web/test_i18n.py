"""The site in English and Russian through a message catalogue (issue 14, item 6 groundwork): navigation and the
planner page, chosen by ?lang= (remembered), Accept-Language, else English; the glossary's Russian still works."""

from __future__ import annotations

import re
from importlib import resources

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

from anchorgpu.web.i18n import LANG_COOKIE, parse_accept_language


def _marked_ids() -> set[tuple[str | None, str]]:
    """(context, message id) of every message the templates mark."""
    root = str(resources.files("anchorgpu.web"))
    found = extract_from_dir(root, method_map=[("**/templates/**.html", "jinja2")],
                             options_map={"**/templates/**.html": {"extensions": "jinja2.ext.i18n"}})
    return {(context, message if isinstance(message, str) else message[0]) for _, _, message, _, context in found}


def _russian() -> dict[tuple[str | None, str], str]:
    source = resources.files("anchorgpu.web") / "locale" / "ru" / "LC_MESSAGES" / "messages.po"
    with source.open("rb") as handle:
        return {(m.context, m.id if isinstance(m.id, str) else m.id[0]): m.string for m in read_po(handle) if m.id}


def test_every_marked_message_has_a_russian_translation_that_keeps_its_placeholders() -> None:
    marked, russian = _marked_ids(), _russian()
    assert {(None, "Planner"), (None, "Will it fit?"), ("count", "GPUs"),
            (None, "Fits — %(total)s per GPU, headroom %(headroom)s")} <= marked
    missing = sorted(m[1] for m in marked if not russian.get(m))
    assert missing == []
    for (_, message_id), translated in russian.items():
        for text in (translated if isinstance(translated, tuple) else (translated,)):  # plural forms: each one
            assert re.findall(r"%\(\w+\)[sd]", message_id) == re.findall(r"%\(\w+\)[sd]", text), message_id
            # a form's label quoted in Russian quotes ("“%(label)s”" → "«%(label)s»", web.planning.quoted_label)
            # a refusal's frame with no words of its own ("{fit}{short}{then}", "--recipe {kind}: {reason}") is itself
            # (a quoted command line, "`anchorgpu plan {model} …`", too: stop 61)
            frame = not re.search("[A-Za-z]{3,}", re.sub(r"\{[^}]*\}|--[\w-]+|`anchorgpu [^`]*`", "", text))
            assert re.search("[а-яА-Я]", text) or text in ("API", "GPU", "«%(label)s»") or text.endswith(" GPU") \
                or frame, message_id


def _nav(html: str) -> str:
    return re.search(r'<nav aria-label="[^"]+" id="main-nav">(.*?)</nav>', html, re.S).group(1)  # type: ignore[union-attr]


def test_lang_ru_translates_navigation_and_the_planner_and_is_remembered(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100&lang=ru")
    assert page.status_code == 200 and '<html lang="ru">' in page.text
    assert "Планировщик" in _nav(page.text) and "Глоссарий" in _nav(page.text)
    assert "<h1>Поместится ли?</h1>" in page.text and "Число GPU" in page.text
    # numbers in the Russian format: a decimal comma (the same plan reads "16.3 GiB" in English)
    verdict = re.search(r'id="verdict">Помещается — ([\d,\xa0]+) GiB на GPU, запас ([\d,\xa0]+) GiB<', page.text)
    assert verdict and "," in verdict.group(1)
    english = client.get("/plan?model=llama-3.1-8b&gpu=h100&lang=en").text
    assert re.search(r'id="verdict">Fits — ([\d.]+) GiB per GPU', english).group(1) == verdict.group(1).replace(",", ".")  # type: ignore[union-attr]
    client.get("/plan?lang=ru")
    assert page.headers["content-language"] == "ru" and LANG_COOKIE in page.headers["set-cookie"]
    later = client.get("/catalog")  # no ?lang: the switch is remembered
    assert "Каталог" in _nav(later.text) and '<html lang="ru">' in later.text
    back = client.get("/plan?lang=en")
    assert "<h1>Will it fit?</h1>" in back.text and "Planner" in _nav(back.text)


@pytest.mark.parametrize(("header", "expected"), [("ru-RU,ru;q=0.9,en;q=0.5", "ru"), ("en-GB,en;q=0.9,ru;q=0.8", "en"),
                                                  ("de-DE,fr;q=0.8", "en"), ("", "en")])
def test_accept_language_picks_the_language_without_a_choice(client: TestClient, header: str, expected: str) -> None:
    page = client.get("/plan", headers={"Accept-Language": header} if header else {})
    assert f'<html lang="{expected}">' in page.text
    assert ("Поместится ли?" in page.text) is (expected == "ru")
    assert "Accept-Language" in page.headers["vary"]


def test_a_query_in_another_language_is_never_an_error(client: TestClient) -> None:
    assert '<html lang="en">' in client.get("/plan?lang=xx").text
    assert parse_accept_language("ru;q=abc, en;q=0.1") == "en"


def test_the_glossary_keeps_its_russian_and_follows_the_site_switch(client: TestClient) -> None:
    ru = client.get("/glossary/quantization?lang=ru")
    assert ru.status_code == 200 and "Квантизация" in ru.text and "Планировщик" in _nav(ru.text)
    remembered = client.get("/glossary/quantization")
    assert "Квантизация" in remembered.text and '<html lang="ru">' in remembered.text


def test_the_language_switch_keeps_the_query(client: TestClient) -> None:
    page = client.get("/plan?model=llama-3.1-8b&gpu=h100")
    switch = re.search(r'id="language-switch">(.*?)</nav>', page.text, re.S).group(1)  # type: ignore[union-attr]
    assert 'href="/plan?model=llama-3.1-8b&amp;gpu=h100&amp;lang=ru"' in switch


def test_money_follows_the_locale(client: TestClient) -> None:
    # the same total of the cheapest recommendation, in each locale's format (en 1,234.00 → ru 1 234,00 $)
    english = client.get("/recommend?model=llama-3.1-8b&context=4096&top=1&lang=en").text
    russian = client.get("/recommend?model=llama-3.1-8b&context=4096&top=1&lang=ru").text
    amount = re.search(r"<strong>\$([\d,]+\.\d\d)</strong>", english).group(1)  # type: ignore[union-attr]
    whole, cents = amount.replace(",", "").split(".")
    assert f"<strong>{int(whole):,}".replace(",", "\xa0") + f",{cents}\xa0$</strong>" in russian


def test_the_recommend_form_is_russian_too(client: TestClient) -> None:
    page = client.get("/recommend?lang=ru").text
    assert "<h1>Самые дешёвые подходящие предложения</h1>" in page
    assert "ответы модели изменятся" in page  # the lower-precision checkbox keeps its warning in Russian
