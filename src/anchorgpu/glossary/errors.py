"""Errors of the glossary area, beside the one tree in :mod:`anchorgpu.errors`."""

from __future__ import annotations

from collections.abc import Sequence

from anchorgpu.errors import UnknownEntity

__all__ = ["UnknownGlossaryEntry"]


class UnknownGlossaryEntry(UnknownEntity):
    """No entry has this id (CLI exit 3, HTTP 404), with the closest ids as suggestions."""

    code = "unknown_glossary_entry"

    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__("glossary entry", name, suggestions, code="unknown_glossary_entry")
