"""Units shared by every area: terms, money rounding, whole GPUs (DESIGN.md section 2)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from anchorgpu.errors import InvalidTerm, PartialGpuRequested
from anchorgpu.units import (
    HOURS_PER_COMPARISON_MONTH,
    Term,
    at_least,
    clamp,
    parse_term,
    require_whole_gpus,
    round_usd,
    usd,
)


@pytest.mark.parametrize(
    ("text", "unit", "count", "hours"),
    [
        ("1h", "hour", 1, 1),
        ("36 hours", "hour", 36, 36),
        ("1w", "week", 1, 168),  # DESIGN.md §2: a week is exactly 7 days
        ("2w", "week", 2, 336),
        ("1month", "month", 1, 720),  # DESIGN.md §2: a month is exactly 30 days
        ("3 Months", "month", 3, 2160),
    ],
)
def test_terms_are_fixed_lengths(text: str, unit: str, count: int, hours: int) -> None:
    term = parse_term(text)
    assert (term.unit, term.count, term.hours) == (unit, count, hours)


@pytest.mark.parametrize("text", ["", "0h", "-1w", "1.5h", "1 year", "month", "1d"])
def test_bad_terms_are_refused_with_one_line(text: str) -> None:
    with pytest.raises(InvalidTerm) as info:
        parse_term(text)
    assert "\n" not in info.value.message and "term" in info.value.message


def test_comparison_rate_of_a_2190_usd_month_is_3_usd_per_gpu_hour() -> None:
    # DESIGN.md §2: H100 at $2,190/month ≈ $3.00 per GPU-hour on the 730-hour comparison month.
    assert round_usd(usd("2190") / HOURS_PER_COMPARISON_MONTH) == Decimal("3.00")
    # … while the exact effective rate over the 720-hour rental month is higher.
    assert round_usd(usd("2190") / Term("month", 1).hours) == Decimal("3.04")


def test_money_refuses_floats() -> None:
    with pytest.raises(TypeError):
        usd(3.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("gpus", [0.5, 0, -1, 1.25, float("nan"), float("inf")])
def test_partial_gpus_are_refused(gpus: float) -> None:
    with pytest.raises(PartialGpuRequested):
        require_whole_gpus(gpus)


@given(st.integers(min_value=1, max_value=100_000), st.sampled_from(["h", "w", "month"]))
def test_term_hours_are_count_times_unit_hours(count: int, suffix: str) -> None:
    term = parse_term(f"{count}{suffix}")
    assert term.hours == count * {"h": 1, "w": 168, "month": 720}[suffix]
    assert parse_term(str(term)) == term


_NUMBERS = st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False))


@given(_NUMBERS, _NUMBERS)
def test_at_least_is_the_builtin_max(value: float, low: float) -> None:
    """The planner's hot paths take ``at_least`` for ``max(low, value)``: the same object, ties and int/float pairs
    included, so no figure moves."""
    assert at_least(value, low) is max(low, value)


@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.integers(0, 10**6))
def test_clamp_is_max_of_min(value: int, low: int, width: int) -> None:
    high = low + width
    assert clamp(value, low, high) == max(low, min(value, high))
    assert type(clamp(value, low, high)) is int
