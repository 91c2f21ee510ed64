"""`anchorgpu extend --dry-run` prints the price and charges nothing; `--expected-total-usd` charges only that price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.cli import main


@pytest.fixture
def cli(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ANCHORGPU_API_KEY", raising=False)

    def run(*argv: str, code: int = 0) -> Any:
        result = main(list(argv))
        out, err = capsys.readouterr()
        assert result == code, f"exit {result}; stderr: {err}"
        return (json.loads(out) if "--json" in argv and code == 0 else out), err

    return run


def test_dry_run_then_confirmed_extension(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    priced, _ = cli("extend", booked["id"], "--term", "1w", "--dry-run", "--json")
    assert priced["charged"] is False and priced["total_usd"] == quote["total_usd"]  # same list price as a 1w quote
    text, _ = cli("extend", booked["id"], "--term", "1w", "--dry-run")
    assert "Nothing has been charged" in text and f"--expected-total-usd {priced['total_usd']}" in text
    unchanged, _ = cli("allocations", booked["id"], "--json")
    assert unchanged["amount_usd"] == booked["amount_usd"]
    _, err = cli("extend", booked["id"], "--term", "1w", "--expected-total-usd", "1.00", code=4)
    assert "price_changed" in err or "now costs" in err
    extended, _ = cli("extend", booked["id"], "--term", "1w", "--expected-total-usd", priced["total_usd"], "--json")
    assert extended["amount_usd"] == priced["amount_usd_after"] and extended["ends_at"] == priced["ends_at"]
