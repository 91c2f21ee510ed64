"""The newcomer's flow through the CLI (`main([...])`), on SQLite and on PostgreSQL by one variable:
list offerings → quote a month → book → retry with the same key → stop (end and price unchanged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_runner import store_cli


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    return store_cli(db_url, tmp_path, monkeypatch, capsys)


def test_the_newcomer_flow_books_once_and_stop_keeps_end_and_price(cli: Any) -> None:
    offerings, _ = cli("offerings", "--gpu", "h100", "--json")
    h100 = next(o for o in offerings if o["id"] == "h100-sxm-1x-vm" and o["region"] == "us-east")
    assert h100["stock"] == 48 and h100["prices_usd"]["month"] == "2190.00"  # catalog/data/*.csv

    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1month", "--json")
    assert quote["total_usd"] == "2190.00" and quote["term"]["hours"] == 720

    booked, err = cli("book", quote["id"], "--idempotency-key", "newcomer-1", "--json")
    assert "idempotency key: newcomer-1" in err
    again, err = cli("book", quote["id"], "--idempotency-key", "newcomer-1", "--json")
    assert again == booked and "replayed" in err

    stopped, _ = cli("stop", booked["id"], "--json")
    assert stopped["state"] == "stopped"
    assert (stopped["ends_at"], stopped["amount_usd"]) == (booked["ends_at"], booked["amount_usd"])
    assert "does not pause the paid term" in stopped["notice"]

    listed, _ = cli("allocations", "--json")
    assert [a["id"] for a in listed] == [booked["id"]]


def test_a_generated_key_is_printed_so_a_retry_can_reuse_it(cli: Any) -> None:
    quote, _ = cli("quote", "l4-1x-vm", "--term", "8h", "--json")
    first, err = cli("book", quote["id"], "--json")
    key = err.split("idempotency key: ")[1].split()[0]
    again, err = cli("book", quote["id"], "--idempotency-key", key, "--json")
    assert again == first and "replayed" in err


def test_exit_codes_name_bad_input_unknown_ids_and_conflicts(cli: Any) -> None:
    _, err = cli("quote", "h100-sxm-1x-vm", "--term", "3 fortnights", code=2)
    assert err.startswith("error: ") and err.count("\n") == 1
    cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--option", "nvme-tb", code=2)
    cli("book", "q_nope", code=3)
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    cli("book", quote["id"])
    _, err = cli("book", quote["id"], code=4)
    assert "already bought" in err
    cli("book", quote["id"], "--idempotency-key", "x" * 256, code=2)


def test_offerings_filters_refuse_typos_and_say_when_nothing_matches(cli: Any) -> None:
    # Found by QA-CLI: a typo in --region / --interconnect printed an empty table with exit 0.
    _, err = cli("offerings", "--region", "us-eas", code=3)
    assert err == "error: unknown region 'us-eas'; did you mean 'us-east'?\n"
    _, err = cli("offerings", "--interconnect", "infinband", code=3)
    assert err.startswith("error: unknown interconnect 'infinband'; did you mean 'infiniband'") and err.count("\n") == 1
    out, _ = cli("offerings", "--gpu", "h100", "--min-gpus", "16")
    assert out.startswith("no offering matches these filters")
    _, err = cli("stock", "set", "h100-sxm-1x-vm", "3", "--region", "us-eas", code=3)  # was exit 2, no suggestion
    assert err == "error: unknown region 'us-eas'; did you mean 'us-east'?\n"


def test_readable_quote_and_booking_show_money_with_thousands_separators_and_singular_units(cli: Any) -> None:
    # Found by QA-CLI: the readable output said "$2190.00", "1 month(s)" and "1 GPUs" (README: $2,190.00).
    out, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1month")  # catalog/data: $2,190 a month
    assert "1 month = 720 h, 1 GPU\n" in out and "total: $2,190.00" in out and "$3.00/GPU-h at 730 h" in out
    quote_id = out.split()[1].rstrip(":")
    out, _ = cli("book", quote_id)
    assert "= 1 GPU\n" in out and "amount paid: $2,190.00" in out


def test_stock_set_limits_new_bookings_only(cli: Any) -> None:
    quote, _ = cli("quote", "b300-8x-bm", "--term", "1w", "--json")
    cli("book", quote["id"])
    result, _ = cli("stock", "set", "b300-8x-bm", "0", "--json")
    assert result == {"offering": "b300-8x-bm", "region": "us-east", "stock": 0, "booked_now": 1}
    quote, _ = cli("quote", "b300-8x-bm", "--term", "1w", "--json")
    _, err = cli("book", quote["id"], code=4)
    assert "insufficient" in err or "free" in err
    listed, _ = cli("allocations", "--json")
    assert [a["state"] for a in listed] == ["active"]


def test_another_account_by_api_key_sees_nothing_of_the_local_one(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    created, _ = cli("accounts", "create", "bob", "--json")
    assert set(created) == {"account_id", "api_key"}
    listed, _ = cli("allocations", "--api-key", created["api_key"], "--json")
    assert listed == []
    cli("stop", booked["id"], "--api-key", created["api_key"], code=3)
    cli("allocations", "--api-key", "agpu_not-a-key", code=3)


def test_extend_start_and_terminate_from_the_cli(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-1x-vm", "--term", "1w", "--json")
    booked, _ = cli("book", quote["id"], "--json")
    extended, _ = cli("extend", booked["id"], "--term", "1w", "--json")
    assert extended["paid_hours"] == 336
    cli("stop", booked["id"])
    started, _ = cli("start", booked["id"], "--json")
    assert started["state"] == "active"
    ended, _ = cli("terminate", booked["id"], "--json")
    assert ended["state"] == "terminated" and ended["amount_usd"] == extended["amount_usd"]
    # QA-CLI: the readable answer showed only the paid end, not that the servers were released now
    out, _ = cli("allocations", booked["id"])
    assert f"terminated at {ended['terminated_at']}: servers released, no refund" in out


def test_db_upgrade_reports_the_newest_revision(cli: Any) -> None:
    result, _ = cli("db", "upgrade", "--json")
    assert result["revision"] == result["head"] == result["from_revision"]  # the fixture database is migrated
