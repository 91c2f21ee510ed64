"""The pure core never imports the faces, the store or the catalog (DESIGN.md section 4).

Walks every module of the pure packages with ``ast`` and checks each import; a test below proves the
checker fails when the rule is broken on purpose.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "anchorgpu"
PURE_PACKAGES = ("planner", "architectures", "hardware")
FORBIDDEN = ("catalog", "quotes", "allocations", "store", "api", "web", "cli", "glossary", "bootstrap", "config")
FORBIDDEN_THIRD_PARTY = ("sqlalchemy", "fastapi", "starlette", "pydantic", "pydantic_settings", "typer", "rich", "jinja2", "psycopg", "alembic", "uvicorn")


def forbidden_imports(source: str, *, module_package: str) -> list[str]:
    """Names of forbidden modules imported by ``source`` (a module inside ``anchorgpu.<module_package>``)."""
    bad: list[str] = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import: resolve against the package
                base = f"anchorgpu.{module_package}" if node.level == 1 else "anchorgpu"
                names = [f"{base}.{node.module}" if node.module else base]
                if not node.module and node.level > 1:
                    names = [f"anchorgpu.{alias.name}" for alias in node.names]
            elif node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "anchorgpu" and len(parts) > 1 and parts[1] in FORBIDDEN:
                bad.append(name)
            if parts[0] in FORBIDDEN_THIRD_PARTY:
                bad.append(name)
    return sorted(set(bad))


@pytest.mark.parametrize("package", PURE_PACKAGES)
def test_pure_packages_import_nothing_from_the_outer_layers(package: str) -> None:
    offenders = {
        str(path.relative_to(SRC)): bad
        for path in sorted((SRC / package).rglob("*.py"))
        if (bad := forbidden_imports(path.read_text(encoding="utf-8"), module_package=package))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        "from anchorgpu.catalog import offerings",
        "import anchorgpu.store.tables",
        "from anchorgpu import cli",
        "from ..api import app",
        "import sqlalchemy",
        "from fastapi import FastAPI",
        "def f():\n    from anchorgpu.web import pages\n",
    ],
)
def test_checker_flags_a_forbidden_import_put_there_on_purpose(source: str) -> None:
    assert forbidden_imports(source, module_package="planner")


def test_checker_allows_the_core_and_the_stdlib() -> None:
    source = "import math\nfrom anchorgpu.units import GIB\nfrom anchorgpu.errors import InvalidWorkload\nfrom anchorgpu.hardware.spec import GpuSpec\nfrom .memory import weights_bytes\n"
    assert forbidden_imports(source, module_package="planner") == []
