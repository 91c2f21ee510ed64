"""Terms in days (issue 14, item 8): the catalog defines a week as 7 days and a month as 30 (DESIGN.md section 2),
so '7 days' is 1 week and '30 days' 1 month; other day counts are refused saying why."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorgpu.catalog import load_catalog
from anchorgpu.cli import main
from anchorgpu.errors import InvalidTerm
from anchorgpu.quotes import price_quote
from anchorgpu.units import Term, parse_term

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("text", "term"), [
    ("7 days", Term("week", 1)), ("7d", Term("week", 1)), ("14 Days", Term("week", 2)), ("1 day", None),
    ("30 days", Term("month", 1)), ("60d", Term("month", 2)), ("90 days", Term("month", 3)),
    ("210 days", Term("month", 7)),  # 30 weeks or 7 months: the same 5,040 h, priced as months
])
def test_days_are_whole_weeks_or_months(text: str, term: Term | None) -> None:
    if term is None:
        with pytest.raises(InvalidTerm):
            parse_term(text)
        return
    assert parse_term(text) == term and parse_term(text).hours == int(text.split()[0].rstrip("dD")) * 24


@pytest.mark.parametrize(("text", "hours"), [("1 day", "24h"), ("10 days", "240h"), ("31 days", "744h"), ("45d", "1080h")])
def test_other_day_counts_are_refused_saying_why_and_what_to_ask_instead(text: str, hours: str) -> None:
    with pytest.raises(InvalidTerm) as info:
        parse_term(text)
    message = info.value.message
    assert "whole weeks (7 days)" in message and "whole months (30 days" in message and hours in message
    assert "\n" not in message
    parse_term(hours)  # the suggestion itself is a valid term


@given(st.integers(min_value=1, max_value=10_000))
def test_any_day_count_is_either_exact_or_refused(days: int) -> None:
    try:
        term = parse_term(f"{days} days")
    except InvalidTerm:
        assert days % 7 and days % 30
    else:
        assert term.hours == days * 24


def test_a_quote_for_30_days_is_the_quote_for_a_month() -> None:
    catalog = load_catalog()
    by_days = price_quote(catalog, "h100-sxm-1x-vm", 1, "30 days", {}, NOW)
    by_month = price_quote(catalog, "h100-sxm-1x-vm", 1, "1month", {}, NOW)
    assert by_days.total_usd == by_month.total_usd  # $2,190.00, catalog/data (issue 5)


def test_the_cli_takes_7_days_as_a_week_and_refuses_10_days_in_one_line(capsys: Any) -> None:
    assert main(["recommend", "llama-3.1-8b", "--term", "7 days", "--top", "1", "--json"]) == 0
    assert '"term": "1w"' in capsys.readouterr().out
    assert main(["recommend", "llama-3.1-8b", "--term", "10 days"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "whole weeks (7 days)" in err and "240h" in err and "\n" not in err
