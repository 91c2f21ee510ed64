"""``said`` writes each template's English through a compiled f-string (errors._compile): it must write exactly what
``str.format`` writes, for every message id the Russian catalogue holds (each one a template the code says)."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

from anchorgpu.errors import _compile, said

CATALOGUE = Path(__file__).parents[2] / "src/anchorgpu/web/locale/ru/LC_MESSAGES/messages.po"


class _Probe:
    """A value that writes which field, spec and conversion it was formatted with: equal output means the compiled
    f-string reads every field as ``str.format`` does."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __format__(self, spec: str) -> str:
        return f"<{self.name}:{spec}>"

    def __repr__(self) -> str:
        return f"<repr {self.name}>"

    def __str__(self) -> str:
        return f"<str {self.name}>"


def _msgids() -> list[str]:
    text = CATALOGUE.read_text(encoding="utf-8")
    ids = []
    for block in re.findall(r'^msgid ((?:".*"\n)+)', text, flags=re.M):
        ids.append("".join(ast.literal_eval(piece) for piece in re.findall(r'^".*"$', block, flags=re.M)))
    return [i for i in ids if "{" in i]


def test_the_catalogue_has_templates_to_check() -> None:
    assert len(_msgids()) > 300


@pytest.mark.parametrize("template", _msgids())
def test_a_compiled_template_writes_what_str_format_writes(template: str) -> None:
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    values = {name: _Probe(name) for name in fields if name.isidentifier()}
    compiled = _compile(template)
    if compiled is None or len(values) != len(fields):
        return  # left to str.format
    assert compiled(**values) == template.format(**values)
    assert said(template, **values) == template.format(**values)


def test_a_missing_value_still_raises_str_format_s_key_error() -> None:
    with pytest.raises(KeyError):
        said("{a} and {b}", a=1)
