"""The page's languages: a gettext message catalogue per locale, chosen per request.

Templates mark their words with ``{{ _("...") }}`` / ``{% trans %}`` (Jinja2's i18n extension); the
translations live in ``anchorgpu/web/locale/<locale>/LC_MESSAGES/messages.po`` (Babel's format, extracted
with ``pybabel extract -F src/anchorgpu/web/babel.cfg``). The ``.po`` file is the source: it is compiled
in memory with Babel on first use, so no binary ``.mo`` file is kept in the repository.

A request's locale is, in order: ``?lang=`` (and it is remembered in a cookie, the persistent switch),
the cookie, the browser's ``Accept-Language`` (by its q-values), else English.
"""

from __future__ import annotations

import gettext
from functools import lru_cache
from importlib import resources
from io import BytesIO
from typing import Any

from fastapi import Request
from markupsafe import Markup

__all__ = ["DEFAULT_LOCALE", "LANG_COOKIE", "SUPPORTED_LOCALES", "English", "EnglishMarkup", "N_", "PageText", "locale_for", "page_text",
           "parse_accept_language", "translations"]

SUPPORTED_LOCALES: tuple[str, ...] = ("en", "ru")
DEFAULT_LOCALE = "en"
LANG_COOKIE = "anchorgpu_lang"
LANGUAGE_NAMES = {"en": "English", "ru": "Русский"}


def _supported(value: str | None) -> str | None:
    if not value:
        return None
    code = value.strip().lower().replace("_", "-").split("-")[0]
    return code if code in SUPPORTED_LOCALES else None


def parse_accept_language(header: str | None) -> str | None:
    """The supported locale the browser prefers most, by q-value (ties: header order), or None.

    >>> parse_accept_language("de-DE,ru;q=0.8,en;q=0.5")
    'ru'
    >>> parse_accept_language("fr, de;q=0.9") is None
    True
    """
    if not header:
        return None
    ranked: list[tuple[float, int, str]] = []
    for position, part in enumerate(header.split(",")[:32]):
        tag, _, params = part.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        code = _supported(tag)
        if code is not None and quality > 0:
            ranked.append((-quality, position, code))
    return min(ranked)[2] if ranked else None


def locale_for(request: Request) -> tuple[str, bool]:
    """(locale, chosen_now): chosen_now is True when ``?lang=`` picked it (the page then remembers it)."""
    asked = _supported(request.query_params.get("lang"))
    if asked is not None:
        return asked, True
    remembered = _supported(request.cookies.get(LANG_COOKIE))
    if remembered is not None:
        return remembered, False
    return parse_accept_language(request.headers.get("accept-language")) or DEFAULT_LOCALE, False


@lru_cache(maxsize=len(SUPPORTED_LOCALES))
def translations(locale: str) -> gettext.NullTranslations:
    """The compiled catalogue of ``locale`` (English: the message ids themselves)."""
    if locale == DEFAULT_LOCALE:
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    source = resources.files("anchorgpu.web") / "locale" / locale / "LC_MESSAGES" / "messages.po"
    with source.open("rb") as handle:
        catalog = read_po(handle, locale=locale)
    compiled = BytesIO()
    write_mo(compiled, catalog)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


class English(str):
    """A sentence that stays English on every page: a domain message (the planner's, the catalog's, a service's
    refusal), the same words the CLI and the API give. Templates mark it ``lang="en"`` on a page in another
    language (the ``english`` test: ``{% if error is english %}``)."""

    __slots__ = ()


class EnglishMarkup(Markup, English):
    """An :class:`English` sentence already written as HTML, with words of the page's own language marked inside it
    (a refusal naming a form's label: ``<span lang="ru">«Глобальный батч (токены)»</span>``)."""

    __slots__ = ()


def N_(message: str) -> str:  # noqa: N802 - gettext's name for a no-op marker, which Babel's extractor knows
    """Mark ``message`` for the catalogue where it is defined (a label in a table of constants); it is translated
    where it is shown, with :meth:`PageText.gettext` or the templates' ``_()``."""
    return message


class PageText:
    """The words of one page in its locale: the catalogue's ``gettext``/``ngettext``/``pgettext`` with named
    placeholders filled in (``text.gettext("Booked: %(id)s", id=...)``). Web code builds every sentence a page
    shows (flash messages, form errors, labels) through it, so Babel extracts them with the templates' words."""

    def __init__(self, locale: str) -> None:
        self.locale = locale if locale in SUPPORTED_LOCALES else DEFAULT_LOCALE
        self._catalogue = translations(self.locale)

    def gettext(self, message: str, **values: Any) -> str:
        text = self._catalogue.gettext(message)
        return text % values if values else text

    def translated(self, message: str) -> str | None:
        """The catalogue's translation of ``message`` as written (placeholders unfilled), or None where it has none
        (English: the message itself)."""
        if self.locale == DEFAULT_LOCALE:
            return message
        text = self._catalogue.gettext(message)
        if text != message:
            return text
        # a frame with no words of its own ("--recipe {kind}: {reason}") is translated as itself
        return message if message in getattr(self._catalogue, "_catalog", {}) else None

    def ngettext(self, singular: str, plural: str, count: int, **values: Any) -> str:
        text = self._catalogue.ngettext(singular, plural, count)
        return text % {"num": count, **values}

    def pgettext(self, context: str, message: str, **values: Any) -> str:
        text = self._catalogue.pgettext(context, message)
        return text % values if values else text


def page_text(request: Request) -> PageText:
    """The :class:`PageText` of the request's locale (see :func:`locale_for`)."""
    return PageText(locale_for(request)[0])
