"""Hypothesis properties of pricing over the shipped catalog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from anchorgpu.catalog import Prices, load_catalog
from anchorgpu.quotes import UnpricedOffering, bill_term, price_quote, quote_to_json
from anchorgpu.units import Term

CATALOG = load_catalog()
OFFERINGS = sorted(o.id for o in CATALOG.offerings)
OPTION_IDS = sorted(o.id for o in CATALOG.options)
UNITS = ("hour", "week", "month")

terms = st.builds(Term, unit=st.sampled_from(UNITS), count=st.integers(min_value=1, max_value=60))
nows = st.datetimes(min_value=datetime(2025, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC))
options = st.dictionaries(st.sampled_from(OPTION_IDS), st.integers(min_value=0, max_value=8), max_size=len(OPTION_IDS))
quantities = st.integers(min_value=1, max_value=16)


def try_quote(offering: str, quantity: int, term: Term, opts: dict[str, int], now: datetime):
    try:
        return price_quote(CATALOG, offering, quantity, term, opts, now)
    except UnpricedOffering:
        return None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(OFFERINGS), quantities, terms, options, nows)
def test_the_total_is_the_sum_of_the_lines_and_every_amount_is_whole_cents(offering, quantity, term, opts, now) -> None:
    q = try_quote(offering, quantity, term, opts, now)
    if q is None:
        return
    assert q.total_usd == sum(line.amount_usd for line in q.lines)
    for amount in (q.total_usd, q.effective_per_gpu_hour_usd, *(line.amount_usd for line in q.lines)):
        assert amount.as_tuple().exponent == -2
    assert q.gpu_hours == q.gpus * q.term.hours == q.quantity * q.gpus_per_server * q.term.hours


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(OFFERINGS), quantities, terms, terms, options)
def test_a_longer_term_never_costs_less_in_total(offering, quantity, a, b, opts) -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    short, long = sorted((a, b), key=lambda t: t.hours)
    q_short, q_long = try_quote(offering, quantity, short, opts, now), try_quote(offering, quantity, long, opts, now)
    if q_short is None or q_long is None:
        return
    assert q_long.total_usd >= q_short.total_usd


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(OFFERINGS), quantities, terms, options, nows)
def test_the_effective_rate_is_positive_and_never_above_the_plain_hourly_list_rate(offering, quantity, term, opts, now) -> None:
    q = try_quote(offering, quantity, term, {}, now)
    if q is None:
        return
    assert q.effective_per_gpu_hour_usd > 0
    hour = CATALOG.offering(offering).prices_usd.hour
    if hour is not None:  # the best-price cap only ever lowers a line
        assert q.total_usd <= hour * q.term.hours * q.quantity


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(OFFERINGS), quantities, terms, options, nows, st.integers(min_value=1, max_value=30 * 86400))
def test_the_same_inputs_give_the_same_quote(offering, quantity, term, opts, now, validity_s) -> None:
    try:
        first = price_quote(CATALOG, offering, quantity, term, opts, now, validity_s)
    except UnpricedOffering:
        return
    second = price_quote(CATALOG, offering, quantity, term, dict(reversed(list(opts.items()))), now, validity_s)
    assert first == second and quote_to_json(first) == quote_to_json(second)
    assert first.valid_until - now == timedelta(seconds=validity_s)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(OFFERINGS), terms)
def test_more_servers_cost_proportionally_more(offering, term) -> None:
    now = datetime(2026, 11, 29, tzinfo=UTC)
    one, three = try_quote(offering, 1, term, {}, now), try_quote(offering, 3, term, {}, now)
    if one is None or three is None:
        return
    assert three.total_usd == 3 * one.total_usd and three.egress_included_tb >= 3 * one.egress_included_tb


@st.composite
def discounted_prices(draw: st.DrawFn) -> Prices:
    """Any prices the loader accepts: per hour, a week costs no more than an hour, a month no more than a week."""
    hour_c = draw(st.integers(min_value=1, max_value=100_000))
    week_c = draw(st.integers(min_value=1, max_value=168 * hour_c))
    month_c = draw(st.integers(min_value=1, max_value=week_c * 720 // 168))
    cents = {"hour": hour_c, "week": week_c, "month": month_c}
    dropped = draw(st.sets(st.sampled_from(UNITS), max_size=2))  # some units unpriced
    return Prices(**{u: None if u in dropped else Decimal(c) / 100 for u, c in cents.items()})


@settings(max_examples=300, deadline=None)
@given(discounted_prices(), terms, terms)
def test_billing_never_costs_less_for_more_hours_for_any_accepted_prices(prices: Prices, a: Term, b: Term) -> None:
    short, long = sorted((a, b), key=lambda t: t.hours)
    try:
        short_usd = bill_term(prices, short, what="x").amount_usd
        long_usd = bill_term(prices, long, what="x").amount_usd
    except UnpricedOffering:
        return
    assert long_usd >= short_usd


@settings(max_examples=300, deadline=None)
@given(discounted_prices(), terms)
def test_billing_is_the_own_unit_price_or_a_cheaper_covering_one(prices: Prices, term: Term) -> None:
    try:
        billing = bill_term(prices, term, what="x")
    except UnpricedOffering:
        assert prices[term.unit] is None
        return
    own = prices[term.unit] * term.count  # type: ignore[operator]
    assert billing.amount_usd <= own
    assert billing.count * {"hour": 1, "week": 168, "month": 720}[billing.unit] >= term.hours  # it covers the term
    assert billing.unit == term.unit or billing.amount_usd < own  # a switch only when strictly cheaper


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(OFFERINGS), quantities, terms, options, nows)
def test_every_quote_survives_the_json_round_trip(offering, quantity, term, opts, now) -> None:
    from anchorgpu.quotes import quote_from_json

    q = try_quote(offering, quantity, term, opts, now)
    if q is None:
        return
    assert quote_from_json(quote_to_json(q)) == q
