"""Money is rounded by ``anchorgpu.units.round_usd`` and nowhere else (DESIGN.md section 2).

Walks every module of the package with ``ast``: outside ``units.py`` no code may call ``.quantize(``
(Decimal's rounding), import a ``decimal.ROUND_*`` mode, or call ``round(`` on an expression that
names money (``usd``, ``price``, ``cost``, ``money``). A test below proves the checker
catches each form when it is put there on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "anchorgpu"
THE_ONE_PLACE = SRC / "units.py"
MONEY_WORDS = ("usd", "price", "cost", "money")  # money names carry _usd (COMMON.md); bytes "amounts" do not


def money_rounding(source: str) -> list[str]:
    """Descriptions of every forbidden rounding in ``source``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "quantize":
            found.append(f"line {node.lineno}: .quantize(")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round" and node.args:
            text = ast.unparse(node.args[0]).lower()
            if any(word in text for word in MONEY_WORDS):
                found.append(f"line {node.lineno}: round({ast.unparse(node.args[0])})")
        elif isinstance(node, ast.ImportFrom) and node.module == "decimal":
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name.startswith("ROUND_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("ROUND_"):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_but_units_rounds_money() -> None:
    offenders = {
        str(path.relative_to(SRC)): bad
        for path in sorted(SRC.rglob("*.py"))
        if path != THE_ONE_PLACE and (bad := money_rounding(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_units_is_where_the_rounding_rule_lives() -> None:
    assert money_rounding(THE_ONE_PLACE.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "source",
    [
        "total_usd = (a + b).quantize(Decimal('0.01'))",
        "x = value.quantize(CENT, rounding=ROUND_HALF_UP)",
        "from decimal import Decimal, ROUND_HALF_UP",
        "import decimal\nmode = decimal.ROUND_CEILING",
        "shown = round(price_usd, 2)",
        "def f(q):\n    return round(q.total_usd / 730, 2)",
    ],
)
def test_checker_flags_money_rounding_put_there_on_purpose(source: str) -> None:
    assert money_rounding(source)


def test_checker_allows_rounding_that_is_not_money() -> None:
    assert money_rounding("n_bytes = round(amount * GIB)\nr = round(total * per_param, 4)") == []
    assert money_rounding("n = round(gib * GIB)\nr = round(price_per_gib, 2)") == ["line 2: round(price_per_gib)"]
    assert money_rounding("from decimal import Decimal\nr = round(tokens_per_s, 1)") == []
