"""Fixtures for catalog tests: a writable copy of the shipped data files to break on purpose."""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable
from importlib import resources
from pathlib import Path

import pytest

DATA_FILES = ("catalog.toml", "offerings.csv", "options.csv", "stock.csv")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A copy of ``catalog/data`` in a temporary folder."""
    source = resources.files("anchorgpu.catalog") / "data"
    target = tmp_path / "data"
    target.mkdir()
    for name in DATA_FILES:
        with resources.as_file(source / name) as path:
            shutil.copy(path, target / name)
    return target


def _edit(path: Path, key_column: str, key: str, column: str, value: str) -> int:
    """Set ``column`` of the row whose ``key_column`` is ``key``; returns that row's number (header = 1)."""
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    assert rows, path
    fields = list(rows[0])
    number = next(i for i, row in enumerate(rows, start=2) if row[key_column] == key)
    rows[number - 2][column] = value
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    return number


@pytest.fixture
def edit_row(data_dir: Path) -> Callable[[str, str, str, str], int]:
    """``edit_row(file, key, column, value)``: change one cell (rows keyed by ``id``, stock by ``offering``)."""

    def edit(file: str, key: str, column: str, value: str) -> int:
        key_column = "offering" if file == "stock.csv" else "id"
        return _edit(data_dir / file, key_column, key, column, value)

    return edit
