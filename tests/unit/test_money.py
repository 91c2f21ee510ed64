"""Money is exact decimal, read by one rule on every face (:func:`anchorgpu.money_rules.usd_amount`): a number or a
plain decimal string (ASCII digits, one dot), a minus only where negatives make sense; the rest is one line."""

from __future__ import annotations

from decimal import Decimal

import pytest

from anchorgpu.errors import InvalidInput
from anchorgpu.money_rules import MONEY, MoneyRule, usd_amount


@pytest.mark.parametrize(("value", "amount"), [
    ("100", Decimal("100")), ("2190.50", Decimal("2190.50")), ("0100", Decimal("100")), (100, Decimal("100")),
    (2190.1, Decimal("2190.1")), (1e3, Decimal("1000.0")), (Decimal("3.25"), Decimal("3.25")),
])
def test_a_number_or_a_plain_decimal_is_read_exactly(value: object, amount: Decimal) -> None:
    assert usd_amount(value, field="max_usd") == amount


@pytest.mark.parametrize("value", [
    " 100 ", "100\n", "1e3", "1E3", "+100", "1,5", "20,000", "$20000", "1_000", ".5", "5.", "1.2.3", "0x10", "",
    "１００", "١٠٠", "NaN", "Infinity", True, float("nan"), float("inf"), None, [100],
])
def test_anything_else_is_refused_in_one_line_naming_the_option(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        usd_amount(value, field="max_usd")
    assert caught.value.message.startswith("--max-usd ") and "\n" not in caught.value.message


def test_bounds_places_and_the_minus_follow_the_fields_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InvalidInput, match="above 0"):
        usd_amount("0", field="max_usd")
    assert usd_amount("0", field="expected_total_usd") == 0
    with pytest.raises(InvalidInput, match="from 0 to"):
        usd_amount("-5", field="expected_total_usd")  # no negative total
    with pytest.raises(InvalidInput, match="at most 2 decimal places"):
        usd_amount("2190.005", field="expected_total_usd")
    with pytest.raises(InvalidInput, match="^expected_total_usd '1e3': "):
        usd_amount("1e3", field="expected_total_usd", flag="expected_total_usd")
    monkeypatch.setitem(MONEY, "adjustment_usd", MoneyRule(Decimal(-1000), Decimal(1000)))
    assert usd_amount("-5.25", field="adjustment_usd") == Decimal("-5.25")  # where negatives make sense
    with pytest.raises(InvalidInput):
        usd_amount("- 5", field="adjustment_usd")
