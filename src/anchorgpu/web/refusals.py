"""A refusal in the page's language: the domain's English line (the CLI's and the API's words) rendered again from its
message id and values (:class:`anchorgpu.errors.Said`) through the page's message catalogue.

The core never translates: a refusal is ``said("--tp {tp} does not divide {heads:,} heads", tp=3, heads=1000)``, a
``str`` that *is* the English line, carrying the template and the values it was made from. A page looks the template
up in its catalogue (the same ``messages.po`` as the templates' words; ``said`` is an extraction keyword in
``babel.cfg``) and formats the values into the translation, numbers written as the page writes them ("1 000",
"0,5") and a value that is itself ``Said`` (a clause a helper wrote) translated the same way. A refusal with a part
the catalogue has no words for, or written without ``said``, is shown in English and marked ``lang="en"``
(:class:`~anchorgpu.web.i18n.English`), never half translated.
"""

from __future__ import annotations

import re
import string
from decimal import Decimal
from typing import Any

from anchorgpu.errors import AnchorError, Said
from anchorgpu.web.i18n import English, PageText

__all__ = ["answer_lines", "page_line", "planner_refusal", "refusal_words", "said_words"]

_NUMBER = re.compile(r"-?\d{1,3}(?:,\d{3})*(?:\.\d+)?|-?\d+(?:\.\d+)?")
_ENGLISH = re.compile(r"\b[a-z]{2,} [a-z]{2,}\b")
"""Two English words in a row in a value: a clause the catalogue cannot translate (names, flags and figures have none)."""
_FLAG = re.compile(r"--[a-z][a-z0-9-]*(?: [\w.,:/-]+)?")
"""A CLI flag with its value ('--offload optimizer'): a value a page names as its field (:func:`page_line`), not English
words."""
_MONEY = re.compile(r"\$(\d{1,3}(?:,\d{3})*\.\d{2,})")
_SIZE = re.compile(r"(?P<number>-?[\d,]+(?:\.\d+)?)(?P<unit> (?:[KMGTP]i?B|B|GB|TB|tokens|h|s|ms))")


class _Untranslated(Exception):
    """A template the catalogue has no words for: the whole refusal stays English."""


def _localized_number(written: str, locale: str) -> str:
    """A number written the English way ('1,000.5') as ``locale`` writes it (ru '1\xa0000,5')."""
    if locale == "en":
        return written
    from babel.numbers import get_decimal_symbol, get_group_symbol

    group, decimal = str(get_group_symbol(locale)), str(get_decimal_symbol(locale))
    return written.replace(",", "\x00").replace(".", decimal).replace("\x00", group)


def _plural_form(value: Any, forms: list[str], locale: str) -> str:
    """The form of a noun that agrees with ``value`` in ``locale`` (CLDR's plural categories: Babel's rules), from the
    forms a translation lists after the number's format (ru: one, few, many; a fraction takes the last but one, ru
    "48,83 последовательности").

    >>> [_plural_form(n, ["токен", "токена", "токенов"], "ru") for n in (1, 3, 5, 11, 21, 131_072, 2.5)]
    ['токен', 'токена', 'токенов', 'токенов', 'токен', 'токена', 'токена']
    """
    from babel import Locale

    if not isinstance(value, int | float | Decimal) or isinstance(value, bool):
        return forms[-1]
    category = Locale.parse(locale).plural_form(value)
    order = {"one": 0, "few": 1, "many": 2, "other": 1 if len(forms) == 3 else len(forms) - 1}
    return forms[min(order.get(category, len(forms) - 1), len(forms) - 1)]


class _PageFormatter(string.Formatter):
    def __init__(self, text: PageText) -> None:
        self.text = text

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Said):
            return _render(value, self.text)
        if "|" in format_spec:  # '{n:,|токен|токена|токенов}': the number and its noun in the form that agrees with it
            spec, *forms = format_spec.split("|")
            return f"{self.format_field(value, spec)} {_plural_form(value, forms, self.text.locale)}"
        written = str(super().format_field(value, format_spec))
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool) and _NUMBER.fullmatch(written):
            return _localized_number(written, self.text.locale)
        if isinstance(value, float) and written.endswith("%") and _NUMBER.fullmatch(written[:-1]):  # '{m:.1%}' '9.4%'
            return _localized_number(written[:-1], self.text.locale) + "%"
        if isinstance(value, str) and _NUMBER.fullmatch(written):  # a figure written before ('12.3', fmt_figure)
            return _localized_number(written, self.text.locale)
        if isinstance(value, str) and (size := _SIZE.fullmatch(written)) is not None:  # '60.45 GiB' from fmt_bytes
            return _localized_number(size.group("number"), self.text.locale) + size.group("unit")
        if isinstance(value, str) and (money := _MONEY.fullmatch(written)) is not None and self.text.locale != "en":
            from babel.numbers import format_currency  # '$1,934.00' (units.fmt_usd) as the page writes money

            return str(format_currency(Decimal(money.group(1).replace(",", "")), "USD", locale=self.text.locale))
        if isinstance(value, str) and _ENGLISH.search(written) and not _FLAG.fullmatch(written):  # a clause written
            # without said(): not half translated
            raise _Untranslated(written)
        return written

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if isinstance(value, Said) and conversion == "s":
            return value
        return super().convert_field(value, conversion)


def _render(line: Said, text: PageText) -> str:
    translated = text.translated(line.template)
    if translated is None:
        raise _Untranslated(line.template)
    return _PageFormatter(text).vformat(translated, (), line.values)


def said_words(line: str, text: PageText) -> str | None:
    """``line`` in the page's language, or None when it (or a clause in it) has no translation or was not
    :func:`~anchorgpu.errors.said`.

    >>> from anchorgpu.errors import said
    >>> said_words(said("unknown GPU {name}{hint}", name="'h10'", hint=""), PageText("ru"))
    "неизвестный GPU 'h10'"
    >>> said_words("a line written without an id", PageText("ru")) is None
    True
    """
    if text.locale == "en":
        return str(line)
    if not isinstance(line, Said):
        return None
    try:
        return re.sub(r"[ \t\r\n]+", " ", _render(line, text)).strip()  # one line, as the core's; NBSP kept
    except _Untranslated:
        return None


def refusal_words(error: AnchorError | str, text: PageText) -> str:
    """What a page shows for a refusal: its words in the page's language where the catalogue has them all, else the
    English line marked as such (:class:`~anchorgpu.web.i18n.English`)."""
    english = error.message if isinstance(error, AnchorError) else str(error)
    words = said_words((error.said or english) if isinstance(error, AnchorError) else error, text)
    return English(english) if words is None or text.locale == "en" else words


def planner_refusal(error: AnchorError | str, text: PageText | None) -> str:
    """A planner's refusal where a page names its fields by their names, not their labels (a launch's reason, a
    weights format's row, a rejected offering's reason; :func:`anchorgpu.web.planning.page_words`): in the page's language where the catalogue has
    all its words, else the English line marked as such."""
    from anchorgpu.web.planning import page_words

    line = (error.said or error.message) if isinstance(error, AnchorError) else error
    english = error.message if isinstance(error, AnchorError) else str(error)
    translated = said_words(line, text) if text is not None and text.locale != "en" else None
    return page_words(translated) if translated is not None else English(page_words(english))


def page_line(line: str, text: PageText, fields: frozenset[str] | None) -> str:
    """An assumption, check or warning of the planner (written for the CLI) as a page shows it: in the page's language
    where the catalogue has all its words, else the English line marked as such (:class:`~anchorgpu.web.i18n.English`,
    which a template marks ``lang="en"`` on its own item); each ``--flag`` that is one of ``fields`` (the form's)
    named as the field, as the page's other advice (:func:`anchorgpu.api.words.answer_words`); ``fields`` None: the
    flags kept as written.

    >>> from anchorgpu.errors import said
    >>> page_line(said("tensor parallelism over {tp} GPUs", tp=8), PageText("ru"), None)
    'тензорный параллелизм на 8 GPU'
    >>> line = page_line("a line written without an id", PageText("ru"), None)
    >>> line, type(line).__name__
    ('a line written without an id', 'English')
    """
    from anchorgpu.api.words import PAGE_COMMANDS, api_words

    translated = said_words(line, text) if text.locale != "en" else None
    if fields is None:
        return translated if translated is not None else English(str(line))
    if translated is None:
        return English(api_words(str(line), fields, PAGE_COMMANDS))
    # a CLI command inside a translated line is the page that takes its fields, named in the line's language (as
    # web.planning.page_refusal names it)
    return api_words(translated, fields, {"plan": text.gettext("the Planner page"),
                                          "recommend": text.gettext("the Recommend page")},
                     joiner=text.pgettext("the Planner page with its fields", "with"))


def answer_lines(answer: dict[str, Any], shown: dict[str, Any], text: PageText, fields: frozenset[str]) -> dict[str, Any]:
    """``shown`` (``answer`` as :func:`~anchorgpu.api.words.answer_words` wrote it for a page) with the lines the
    planner said (:func:`~anchorgpu.errors.said`) in the page's language, each line on its own (:func:`page_line`):
    ``assumptions``, ``checks``, ``warnings[].message`` and ``performance.assumptions``. ``answer`` is read for the
    lines as said, since writing a line the page's way leaves a plain ``str``."""
    out = dict(shown)
    for key in ("assumptions", "checks"):
        if isinstance(answer.get(key), list):
            out[key] = [page_line(line, text, fields) for line in answer[key]]
    if isinstance(answer.get("warnings"), list) and isinstance(shown.get("warnings"), list):
        out["warnings"] = [{**words, "message": page_line(warning["message"], text, fields)}
                           if isinstance(warning, dict) and isinstance(words, dict) and "message" in warning else words
                           for warning, words in zip(answer["warnings"], shown["warnings"], strict=True)]
    performance, performance_words = answer.get("performance"), shown.get("performance")
    if isinstance(performance, dict) and isinstance(performance_words, dict) \
            and isinstance(performance.get("assumptions"), list):
        out["performance"] = {**performance_words,
                              "assumptions": [page_line(line, text, fields) for line in performance["assumptions"]]}
    return out
