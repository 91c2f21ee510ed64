"""`anchorgpu extend --dry-run` prints the price and charges nothing; `--expected-total-usd` charges only that price."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_runner import store_cli


@pytest.fixture
def cli(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    return store_cli(sqlite_url, tmp_path, monkeypatch, capsys)


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


def test_extend_without_a_term_is_refused_in_one_line(cli: Any) -> None:
    """``anchorgpu extend ID`` never picks a term to charge: without --term it exits 2 in one line, nothing changed."""
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    for extra in ((), ("--dry-run",), ("--expected-total-usd", quote["total_usd"])):
        _, err = cli("extend", booked["id"], *extra, code=2)
        assert err.strip() == "error: Missing option '--term'.", err
    unchanged, _ = cli("allocations", booked["id"], "--json")
    assert unchanged["amount_usd"] == booked["amount_usd"] and unchanged["ends_at"] == booked["ends_at"]
