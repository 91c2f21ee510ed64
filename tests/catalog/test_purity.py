"""Catalog and quotes are pure: no store, faces, clock reads or heavy libraries (DESIGN.md section 4).

An ``ast`` walk over every module of the two packages; the self-test proves the walk catches each rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "anchorgpu"
OUTER = ("allocations", "store", "accounts", "api", "web", "cli", "bootstrap", "config", "planner", "recommend")
HEAVY = ("sqlalchemy", "fastapi", "starlette", "pydantic", "typer", "jinja2", "psycopg", "numpy", "uvicorn")
CLOCK_READS = ("now", "utcnow", "today", "time", "monotonic")


def impurities(source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        for name in names:
            parts = name.split(".")
            if parts[0] in HEAVY or (parts[0] == "anchorgpu" and len(parts) > 1 and parts[1] in OUTER):
                found.append(f"line {node.lineno}: import {name}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCK_READS
                and ast.unparse(node.func.value).split(".")[-1] in ("datetime", "date", "time")):
            found.append(f"line {node.lineno}: {ast.unparse(node.func)}()")
    return found


@pytest.mark.parametrize("package", ["catalog", "quotes"])
def test_catalog_and_quotes_import_no_outer_layer_and_read_no_clock(package: str) -> None:
    offenders = {str(p.relative_to(SRC)): bad for p in sorted((SRC / package).rglob("*.py"))
                 if (bad := impurities(p.read_text(encoding="utf-8")))}
    assert offenders == {}


@pytest.mark.parametrize("source", [
    "from anchorgpu.store import tables", "import sqlalchemy", "from anchorgpu.allocations.services import x",
    "from datetime import datetime\nt = datetime.now()", "import time\nt = time.time()", "d = date.today()",
])
def test_the_purity_check_catches_what_it_forbids(source: str) -> None:
    assert impurities(source)


def test_the_purity_check_allows_the_core() -> None:
    assert impurities("from anchorgpu.units import round_usd\nfrom anchorgpu.hardware import get_gpu\n"
                      "from datetime import datetime, timedelta\nv = now + timedelta(seconds=1)") == []
