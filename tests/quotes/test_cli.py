"""`anchorgpu offerings` and `anchorgpu quote` through `main([...])` on a fresh SQLite file: the
catalog's filters and the pricing rules reach the command line unchanged, bad input exits 2 or 3."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cli_runner import store_cli


@pytest.fixture
def cli(sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    return store_cli(sqlite_url, tmp_path, monkeypatch, capsys)


def test_offerings_filter_by_interconnect_and_price_ceiling(cli: Any) -> None:
    rows, _ = cli("offerings", "--interconnect", "nvlink", "--max-usd-per-gpu-hour", "3.00", "--json")
    assert rows and all(r["gpus"] > 1 and "NVLink" in r["interconnect"] for r in rows)
    assert all(r["per_gpu_hour_usd"] is not None and float(r["per_gpu_hour_usd"]) <= 3.00 for r in rows)
    assert {"h100-sxm-8x-bm", "a100-80gb-sxm-8x-bm"} <= {r["id"] for r in rows}


def test_offerings_table_shows_the_730_hour_footnote_and_unpriced(cli: Any) -> None:
    out, _ = cli("offerings", "--gpu", "gb200")
    assert "gb200-4x-bm" in out and "unpriced" in out and "730 h" in out


def test_a_month_quote_shows_both_rates_and_what_is_included(cli: Any) -> None:
    quote, _ = cli("quote", "h100-sxm-8x-bm", "--term", "1month", "--quantity", "2", "--option", "ipv4=1", "--json")
    assert (quote["gpus"], quote["gpu_hours"], quote["total_usd"]) == (16, 11520, "33295.00")  # 2 x 16644 + 2 x 3.50
    assert (quote["per_gpu_hour_usd"], quote["effective_per_gpu_hour_usd"]) == ("2.85", "2.89")
    assert quote["egress_included_tb"] == "100" and quote["id"].startswith("q_")


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("quote", "h100-sxm-1x-vm", "--term", "1month", "--quantity", "0"), 2, "quantity"),  # whole servers, at least 1
        (("quote", "gb200-4x-bm", "--term", "10h"), 2, "no hourly list price; priced by the month"),
        (("quote", "h100-sxm-1x-vm", "--term", "1 fortnight"), 2, "term"),
        (("quote", "h100-sxm-1x-vm", "--term", "1month", "--option", "ipv4=99"), 2, "at most 8 per server"),
        (("quote", "h100-sxm-1x", "--term", "1month"), 3, "did you mean 'h100-sxm-1x-vm'"),
        (("offerings", "--gpu", "h1000"), 3, "unknown GPU"),
    ],
)
def test_bad_requests_exit_with_one_line_reasons(cli: Any, argv: tuple[str, ...], code: int, message: str) -> None:
    _, err = cli(*argv, code=code)
    assert message in err and err.startswith("error: ") and err.count("\n") == 1


def test_a_quote_for_several_servers_shows_the_unit_price_and_the_count(cli: Any) -> None:
    # The line's amount covers both servers; it once printed as "... per server: $8,310.00", the price of two.
    out, _ = cli("quote", "h100-sxm-8x-bm", "--term", "1week", "--quantity", "2")
    text = " ".join(out.split())
    assert "per server: 1 week x $4,155.00 x 2 = $8,310.00" in text
    assert "per server: $8,310.00" not in text
