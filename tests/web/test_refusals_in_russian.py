"""Refusals on the Russian page are Russian (stop 60, faces60; stop 59's note, "Next" 4: they were English sentences
marked ``lang="en"``).

A refusal is ``said(template, **values)`` in the core (``anchorgpu.errors``): the English line the CLI and the API
print, unchanged, carrying its message id and values; the page renders the id's translation with the values
(``anchorgpu.web.refusals``). These tests fail when

* a ``said`` id has no Russian translation, or a translation names a value its English does not, or cannot be
  formatted with the values its English takes (every id, walked with example values of the kinds its English formats);
* a module a page reaches raises a refusal written without ``said`` (an English-only line on the Russian page);
* a page shows one of a set of refusals, reached as a user reaches them, in English.
"""

from __future__ import annotations

import ast
import re
import string
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po
from fastapi.testclient import TestClient

import anchorgpu
from anchorgpu.errors import AnchorError, InvalidWorkload, said
from anchorgpu.web.i18n import English, PageText
from anchorgpu.web.refusals import _PageFormatter, refusal_words, said_words

SRC = Path(anchorgpu.__file__).parent

# The modules whose refusals a page can show: the planner core and its checks, recommend, quotes, allocations, accounts,
# the catalog's queries, units and validation, launch recipes, the GPU registry, and the API's planning path the pages
# plan through. Not here: the CLI and the API's own words (faces), the store (operators' tools), and the model-config
# readers in architectures/ (a page plans registry models; Hub ids are refused unless an operator turns fetching on).
PAGE_REACHED = ("planner", "recommend", "quotes", "allocations", "accounts", "catalog/query.py", "catalog/model.py",
                "units.py", "validation.py", "recipes", "hardware", "api/planning.py", "api/models_ref.py",
                "errors.py")
_NOT_A_LINE = {"DataFileError"}  # its arguments are a file, a row and a reason, not a sentence


def _said_ids() -> set[str]:
    found = extract_from_dir(str(SRC), method_map=[("**.py", "python")], keywords={"said": None, "said_template": None})
    return {message if isinstance(message, str) else message[0] for _, _, message, _, _ in found}


def _russian() -> dict[str, str]:
    source = resources.files("anchorgpu.web") / "locale" / "ru" / "LC_MESSAGES" / "messages.po"
    with source.open("rb") as handle:
        return {m.id: m.string for m in read_po(handle) if isinstance(m.id, str) and m.id}


def _example_values(template: str) -> dict[str, Any]:
    """A value for each field of ``template`` of the kind its format takes (a number for ',', 'g', '.0f', '04X'; an
    instant for a date format; text otherwise)."""
    values: dict[str, Any] = {}
    for _, name, spec, _ in string.Formatter().parse(template):
        if not name:
            continue
        if spec and "%" in spec:
            values[name] = datetime(2027, 1, 31, 12, 0, tzinfo=UTC)
        elif spec and re.search(r"[,gfdX]", spec):
            values[name] = 1234
        else:
            values[name] = "x"
    return values


def test_every_said_id_has_a_russian_translation_that_formats_with_its_values() -> None:
    ids, russian = _said_ids(), _russian()
    assert len(ids) > 300 and "unknown GPU {name}{hint}" in ids
    missing = sorted(i for i in ids if not russian.get(i))
    assert missing == []
    text = PageText("ru")
    for message_id in ids:
        translated = russian[message_id]
        english_fields = {name for _, name, _, _ in string.Formatter().parse(message_id) if name}
        russian_fields = {name.split("!")[0] for _, name, _, _ in string.Formatter().parse(translated) if name}
        assert russian_fields <= english_fields, message_id  # a value the core gives, never one it does not
        values = _example_values(message_id)
        assert message_id.format(**values)  # the English line, as the core writes it
        rendered = _PageFormatter(text).vformat(translated, (), values)
        # words in Russian, or a frame with no words of its own ("--recipe {kind}: {reason}", a quoted command line
        # "`anchorgpu plan {model} …`", stop 61) kept as it is
        words = re.sub(r"\{[^}]*\}|--[\w-]+|`anchorgpu [^`]*`", "", translated)
        assert re.search("[а-яА-Я]", rendered) or not re.search("[A-Za-z]{3,}", words), (message_id, rendered)
        assert PageText("ru").translated(message_id) == translated


def _constant_line(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _error_classes() -> set[str]:
    names = {"AnchorError"}
    classes = [(m.group(1), m.group(2)) for p in SRC.rglob("*.py")
               for m in re.finditer(r"^class (\w+)\(([^)]*)\)", p.read_text(), re.M)]
    grown = True
    while grown:
        grown = False
        for name, bases in classes:
            if name not in names and any(b.strip().split(".")[-1] in names for b in bases.split(",")):
                names.add(name)
                grown = True
    return names - _NOT_A_LINE - {"UnknownEntity", "UnknownGpu", "UnknownModel", "UnknownGlossaryEntry"}


def test_no_refusal_a_page_reaches_is_written_without_its_id() -> None:
    """``raise InvalidWorkload(f"...")`` in a module a page reaches would be English on the Russian page: every
    refusal there is ``said(...)`` (a variable holding one is checked where it is built, by the walk below)."""
    errors = _error_classes()
    unsaid = []
    for part in PAGE_REACHED:
        for path in ([SRC / part] if part.endswith(".py") else sorted((SRC / part).rglob("*.py"))):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                line = (node.args[1:2] if name == "not_expressible" else node.args[:1]) if name in errors | {
                    "not_expressible"} else []  # not_expressible(kind, reason): the reason is the line
                if line and _constant_line(line[0]):
                    unsaid.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert unsaid == [], unsaid


def test_the_english_line_is_unchanged_and_the_page_renders_the_russian() -> None:
    line = said("--tp {tp} does not divide the {num_attention_heads} attention heads of {model_name}", tp=3,
                num_attention_heads=32, model_name="llama-3.1-8b")
    error = InvalidWorkload(line)
    assert error.message == str(line) == "--tp 3 does not divide the 32 attention heads of llama-3.1-8b"
    assert refusal_words(error, PageText("en")) == error.message and isinstance(refusal_words(error, PageText("en")), English)
    shown = refusal_words(error, PageText("ru"))
    assert not isinstance(shown, English) and shown == "--tp 3 не делит число голов внимания модели llama-3.1-8b (32)"
    # numbers as the page writes them, nouns agreeing with them
    limit = said("{what} exceeds {model_name}'s limit of {limit:,} tokens (add --allow-long-context to plan anyway{fewer})",
                 what=said("context {ctx:,}", ctx=500_000), model_name="llama-3.1-8b", limit=131_072, fewer="")
    assert said_words(limit, PageText("ru")) == ("контекст 500\xa0000 превышает предел llama-3.1-8b в 131\xa0072 токена "
                                                 "(добавьте --allow-long-context, чтобы всё равно построить план)")


def test_a_refusal_with_an_untranslated_part_stays_english_whole() -> None:
    """Never half translated: an English clause inside a said line (written without its own id), or a line with no id,
    leaves the whole refusal English, marked as such."""
    clause = said("{what} exceeds {model_name}'s limit of {limit:,} tokens (add --allow-long-context to plan anyway{fewer})",
                  what="the prompt and the output", model_name="m", limit=8, fewer="")
    assert said_words(clause, PageText("ru")) is None
    plain = AnchorError("a line written without an id")
    assert isinstance(refusal_words(plain, PageText("ru")), English)


# Refusals as a Russian-speaking user reaches them on the pages (the form's values in the URL)
PAGE_REFUSALS = [
    ("/plan?model=llama-3.1-8b&gpu=h100&gpus=3&tp=3", "не делит число голов внимания"),
    ("/plan?model=llama-3.1-8b&gpu=h100&context=500000", "превышает предел llama-3.1-8b в 131\xa0072 токена"),
    ("/plan?model=llama-3.1-8b&gpu=h10", "неизвестный GPU"),
    ("/plan?model=nosuchmodel&gpu=h100", "неизвестная модель"),
    ("/plan?model=llama-3.1-8b&task=train&gpu=h100&gpus=8&global_batch=100000", "не целое число последовательностей"),
    ("/plan?model=llama-3.1-8b&task=train&gpu=h100&gpus=8&cp=3", "не кратно"),
    ("/plan?model=llama-3.1-70b&gpu=h100&gpus=8&pp=100", "не кратно"),
    ("/plan?model=llama-3.1-8b&gpu=mi300x&engine=trtllm", "работает только на GPU NVIDIA"),
    ("/plan?model=llama-3.1-8b&gpu=h100&prompt=100000&output_tokens=100000", "больше предела модели"),
    ("/plan?model=llama-3.1-70b&task=qlora&gpu=h100&gpus=2&tp=2", "ни один открытый стек"),
    ("/recommend?model=llama-3.1-8b&gpu=mi300x&engine=trtllm", "GPU NVIDIA"),
]


@pytest.mark.parametrize(("url", "words"), PAGE_REFUSALS)
def test_the_russian_page_says_its_refusals_in_russian(client: TestClient, url: str, words: str) -> None:
    page = client.get(url + "&lang=ru")
    assert page.status_code in (404, 409, 422), page.status_code
    shown = re.search(r'<div class="error" role="alert" id="(?:plan|recommend)-error"([^>]*)>(.*?)</div>', page.text, re.S)
    assert shown is not None
    assert 'lang="en"' not in shown.group(1) + shown.group(2), shown.group(0)
    assert words in shown.group(2).replace("&#39;", "'"), shown.group(2)
    english = client.get(url + "&lang=en").text  # the English page still says the API's line
    assert re.search(r'id="(?:plan|recommend)-error"', english) and "не " not in english


def test_the_russian_recommend_page_says_why_cheaper_offerings_were_rejected(client: TestClient) -> None:
    """The rejected offerings' reasons (recommend's miss_reason, the budget, the other server counts) in Russian."""
    page = client.get("/recommend", params={"model": "llama-3.1-70b", "max_usd": "1", "lang": "ru"}).text
    reasons = re.findall(r'<span class="reason"([^>]*)>(.*?)</span>', page, re.S)
    assert len(reasons) >= 5 and all('lang="en"' not in attrs for attrs, _ in reasons), reasons[:2]
    said_all = " ".join(words for _, words in reasons)
    assert "не помещается: ближайшей конфигурации (TP 1, PP 1, DP 1, веса bf16, KV bf16) нужно" in said_all
    assert "сверх бюджета: 1\xa0934,00\xa0$ &gt; 1,00\xa0$" in said_all  # money as the page writes it and "также отклонено при числе серверов 2, 3, 4" in said_all
    english = client.get("/recommend", params={"model": "llama-3.1-70b", "max_usd": "1", "lang": "en"}).text
    assert "over the budget: $1,934.00 &gt; $1.00 (also rejected with 2, 3, 4 servers)" in english
