"""Fixtures of the allocation CLI tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_runner import store_cli


@pytest.fixture
def cli(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """The CLI on a fresh SQLite store (test_cli.py overrides it to run on each database)."""
    return store_cli(sqlite_url, tmp_path, monkeypatch, capsys)
