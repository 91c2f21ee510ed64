"""`anchorgpu extend --dry-run` prints the price and charges nothing; `--expected-total-usd` charges only that price."""

from __future__ import annotations

from typing import Any

import pytest


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


@pytest.mark.parametrize("amount", [" 547.00 ", "5.47e2", "+547", "547,00", "５４７", "$547"])
def test_money_options_read_a_plain_decimal_only(cli: Any, amount: str) -> None:
    """QA pass: `--max-usd "$20,000"` read 20000 and `1,5` read 15 (a decimal comma to a Russian reader);
    " 100 " and "1e3" passed too. Every money option now takes ASCII digits and one dot, else one line, exit 2."""
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    for argv, flag in ((("extend", booked["id"], "--term", "1w", "--expected-total-usd", amount), "--expected-total-usd"),
                       (("extend", booked["id"], "--term", "1w", "--dry-run", "--expected-total-usd", amount),
                        "--expected-total-usd"),
                       (("recommend", "llama-3.2-1b", "--max-usd", amount), "--max-usd"),
                       (("offerings", "--max-usd-per-gpu-hour", amount), "--max-usd-per-gpu-hour")):
        out, err = cli(*argv, code=2)
        assert out == "" and len(err.strip().splitlines()) == 1, err
        assert err.strip().startswith(f"error: {flag} {amount!r}: expected an amount in USD"), err
    unchanged, _ = cli("allocations", booked["id"], "--json")
    assert unchanged["amount_usd"] == booked["amount_usd"] and unchanged["ends_at"] == booked["ends_at"]
    rows, _ = cli("offerings", "--max-usd-per-gpu-hour", "3.00", "--json")
    assert rows
