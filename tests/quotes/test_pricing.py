"""Quote arithmetic: every pricing rule of DESIGN.md section 2, with a fixed clock."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import MappingProxyType

import pytest

from anchorgpu.catalog import Catalog, Offering, Prices, load_catalog
from anchorgpu.errors import InvalidTerm, PartialGpuRequested, UnknownEntity
from anchorgpu.quotes import (
    InvalidOptionRequest,
    InvalidQuoteRequest,
    Quote,
    RegionNotOffered,
    UnpricedOffering,
    price_quote,
    servers_for_gpus,
    term_total_usd,
)
from anchorgpu.units import parse_term

NOW = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
CATALOG = load_catalog()


def quote(offering: str = "h100-sxm-1x-vm", quantity: object = 1, term: str = "1month",
          options: dict[str, int] | None = None, **kwargs: object) -> Quote:
    return price_quote(CATALOG, offering, quantity, term, options, NOW, **kwargs)  # type: ignore[arg-type]


# --- terms: hour = 1 h, week = 168 h, month = 720 h ---------------------------------------------------

@pytest.mark.parametrize(("term", "hours"), [("1h", 1), ("36h", 36), ("1w", 168), ("2w", 336), ("1month", 720), ("3month", 2160)])
def test_term_hours_are_fixed(term: str, hours: int) -> None:
    q = quote(term=term)
    assert q.term.hours == hours and q.gpu_hours == hours  # one GPU


def test_a_week_is_billed_as_one_week_price_and_a_month_as_one_month_price() -> None:
    assert quote(term="1w").total_usd == Decimal("547.00")
    assert quote(term="2w").total_usd == Decimal("1094.00")
    assert quote(term="1month").total_usd == Decimal("2190.00")
    assert quote(term="3month").total_usd == Decimal("6570.00")
    assert quote(term="10h").total_usd == Decimal("34.90")  # 10 x $3.49


# --- the two month constants: 730 h comparison vs 720 h term ------------------------------------------

def test_2190_a_month_compares_at_3_00_per_gpu_hour_but_costs_3_04_over_the_720_hour_term() -> None:
    # DESIGN.md 2: "H100 at $2,190/month ≈ $3.00 per GPU-hour" (2190 / 730 = 3.0000);
    # the rental month is 720 h, so the same money buys fewer hours: 2190 / 720 = 3.041666… → 3.04.
    q = quote()
    assert q.per_gpu_hour_usd == Decimal("3.00")
    assert q.effective_per_gpu_hour_usd == Decimal("3.04")


def test_the_gap_between_the_720_and_730_hour_rates_is_the_ratio_730_over_720() -> None:
    q = quote()
    assert q.effective_per_gpu_hour_usd - q.per_gpu_hour_usd == Decimal("0.04")
    exact_effective = q.total_usd / q.gpu_hours
    exact_comparison = CATALOG.offering("h100-sxm-1x-vm").prices_usd.month / 730  # type: ignore[operator]
    assert exact_effective / exact_comparison == Decimal(730) / Decimal(720)  # about 1.4 % more per hour


def test_the_comparison_rate_is_per_gpu_on_an_8_gpu_server() -> None:
    q = quote("h100-sxm-8x-bm")
    assert q.per_gpu_hour_usd == Decimal("2.85")  # 16644 / 8 / 730
    assert q.effective_per_gpu_hour_usd == Decimal("2.89")  # 16644 / 5760 = 2.8896
    assert q.gpu_hours == 8 * 720


# --- GPU-hours ---------------------------------------------------------------------------------------

def test_eight_gpus_for_ten_hours_are_80_gpu_hours() -> None:
    q = quote("h100-sxm-8x-bm", term="10h")
    assert (q.gpus, q.term.hours, q.gpu_hours) == (8, 10, 80)
    assert q.total_usd == Decimal("265.90")  # 10 x $26.59
    assert q.effective_per_gpu_hour_usd == Decimal("3.32")  # 265.90 / 80 = 3.32375


def test_gpu_hours_count_every_server() -> None:
    q = quote("h100-sxm-8x-bm", quantity=3, term="2w")
    assert (q.gpus, q.gpu_hours) == (24, 24 * 336)


# --- included egress and DDoS --------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("offering", "quantity", "term", "tb"),
    [
        ("h100-sxm-1x-vm", 1, "1month", "20"),  # 20 TB/month on single-GPU offerings
        ("h100-sxm-8x-bm", 1, "1month", "50"),  # 50 TB/month on 8-GPU servers
        ("h100-sxm-8x-bm", 2, "1month", "100"),  # per server
        ("h100-sxm-1x-vm", 1, "3month", "60"),
        ("h100-sxm-1x-vm", 1, "1w", "4.666"),  # 20 x 168 / 720 = 4.6666… TB, floored to whole GB
        ("h100-sxm-8x-bm", 1, "10h", "0.694"),  # 50 x 10 / 720 = 0.6944… TB
        ("h100-sxm-1x-vm", 1, "1h", "0.027"),  # 20 / 720 = 0.0277… TB
    ],
)
def test_included_egress_is_pro_rated_by_hours_over_a_720_hour_month(offering: str, quantity: int, term: str, tb: str) -> None:
    assert quote(offering, quantity=quantity, term=term).egress_included_tb == Decimal(tb)


def test_the_quote_states_that_nothing_else_is_billed() -> None:
    q = quote(term="1w")
    assert q.ddos_protection is True
    assert q.statement.startswith("Nothing else is billed")
    assert "4.666 TB of egress" in q.statement and "DDoS protection" in q.statement
    assert "does not pause" in q.statement


# --- options ---------------------------------------------------------------------------------------------

def test_options_are_priced_per_unit_per_server_on_their_own_lines() -> None:
    q = quote("h100-sxm-8x-bm", quantity=3, options={"ipv4": 2, "nvme-tb": 4})
    servers, ipv4, nvme = q.lines
    assert (servers.kind, servers.quantity, servers.amount_usd) == ("servers", 3, Decimal("49932.00"))  # 3 x 16644
    assert (ipv4.item, ipv4.quantity, ipv4.unit_price_usd, ipv4.amount_usd) == ("ipv4", 6, Decimal("3.50"), Decimal("21.00"))
    assert (nvme.item, nvme.quantity, nvme.amount_usd) == ("nvme-tb", 12, Decimal("420.00"))  # 12 x $35
    assert q.total_usd == Decimal("50373.00")
    assert q.options == (("ipv4", 2), ("nvme-tb", 4))


def test_an_option_asked_zero_times_adds_no_line() -> None:
    assert len(quote(options={"ipv4": 0}).lines) == 1


@pytest.mark.parametrize(
    ("options", "error", "reason"),
    [
        ({"ipv4": 9}, InvalidOptionRequest, "at most 8 per server"),
        ({"ipv4": -1}, InvalidOptionRequest, "cannot be negative"),
        ({"ipv4": 1.5}, InvalidOptionRequest, "whole number"),
        ({"ipv4": True}, InvalidOptionRequest, "whole number"),
        ({"ipv6": 1}, UnknownEntity, "did you mean 'ipv4'"),
    ],
)
def test_bad_options_are_refused_with_a_reason(options: dict[str, int], error: type[Exception], reason: str) -> None:
    with pytest.raises(error, match=reason):
        quote(options=options)


# --- whole servers, whole GPUs ------------------------------------------------------------------------------

@pytest.mark.parametrize("quantity", [0.5, 0, -1, 1.25, True, "2", float("nan")])
def test_partial_or_non_whole_quantities_are_refused_with_the_reason(quantity: object) -> None:
    with pytest.raises(PartialGpuRequested) as caught:
        quote(quantity=quantity)
    error = caught.value
    assert error.code == "partial_gpu_not_offered" and error.exit_code == 2
    assert "whole GPU" in str(error) and "quantity=" in str(error)
    assert "quantity counts whole servers (1 x h100-sxm each for h100-sxm-1x-vm)" in str(error)


@pytest.mark.parametrize(("offering", "gpus", "servers"), [("h100-sxm-8x-bm", 8, 1), ("h100-sxm-8x-bm", 24, 3), ("h100-sxm-1x-vm", 4, 4)])
def test_a_gpu_count_converts_to_whole_servers(offering: str, gpus: int, servers: int) -> None:
    assert servers_for_gpus(CATALOG.offering(offering), gpus) == servers


@pytest.mark.parametrize(("offering", "gpus", "reason"), [
    ("h100-sxm-8x-bm", 4, "rented as whole 8-GPU servers"),  # half a server is not sold
    ("h100-sxm-1x-vm", 0.5, "only whole GPUs are offered (no MIG slices, vGPU or time-slicing)"),
    ("h100-sxm-1x-vm", 0, "at least one whole GPU"),
])
def test_part_of_a_gpu_or_of_a_server_is_refused_with_the_reason(offering: str, gpus: float, reason: str) -> None:
    with pytest.raises(PartialGpuRequested, match=re.escape(reason)):
        servers_for_gpus(CATALOG.offering(offering), gpus)


def test_a_float_that_is_a_whole_number_counts_as_that_many_servers() -> None:
    assert quote(quantity=2.0).quantity == 2


# --- unpriced is a state, never 0 -------------------------------------------------------------------------

def test_an_unpriced_offering_cannot_be_quoted_and_the_error_is_named() -> None:
    unpriced = replace(CATALOG.offering("l4-1x-vm"), id="l4-unpriced", prices_usd=Prices())
    catalog = replace(CATALOG, offerings=(*CATALOG.offerings, unpriced))
    with pytest.raises(UnpricedOffering) as caught:
        price_quote(catalog, "l4-unpriced", 1, "1month", None, NOW)
    assert caught.value.code == "unpriced_offering" and caught.value.exit_code == 2
    assert "price on request" in str(caught.value)


def test_a_month_only_offering_refuses_hours_and_prices_months() -> None:
    with pytest.raises(UnpricedOffering, match="no hourly list price; priced by the month"):
        quote("gb200-4x-bm", term="10h")
    q = quote("gb200-4x-bm", term="1month")
    assert q.total_usd == Decimal("30660.00") and q.per_gpu_hour_usd == Decimal("10.50")


def test_a_quote_without_a_monthly_price_has_no_comparison_rate_but_an_effective_one() -> None:
    hourly_only = replace(CATALOG.offering("l4-1x-vm"), id="l4-hourly", prices_usd=Prices(hour=Decimal("0.89")))
    catalog = replace(CATALOG, offerings=(*CATALOG.offerings, hourly_only))
    q = price_quote(catalog, "l4-hourly", 1, "100h", None, NOW)
    assert q.per_gpu_hour_usd is None and q.effective_per_gpu_hour_usd == Decimal("0.89")


# --- the best-price cap for terms given in a shorter unit --------------------------------------------------

def test_hours_are_billed_hourly_while_that_is_cheaper_than_a_week() -> None:
    q = quote(term="156h")  # 156 x 3.49 = 544.44 < 547.00
    assert (q.lines[0].billed_unit, q.lines[0].billed_count, q.total_usd) == ("hour", 156, Decimal("544.44"))
    assert q.lines[0].note == ""


def test_hours_cost_no_more_than_the_week_that_covers_them() -> None:
    q = quote(term="160h")  # 160 x 3.49 = 558.40 > 547.00
    line = q.lines[0]
    assert (line.billed_unit, line.billed_count, q.total_usd) == ("week", 1, Decimal("547.00"))
    assert line.note == "160 h billed as 1 week: cheaper than 160 hours at the hourly price; a 168 h term costs the same"
    assert q.term.hours == 160 and q.gpu_hours == 160  # the term itself is unchanged


def test_weeks_cost_no_more_than_the_month_that_covers_them() -> None:
    assert quote(term="4w").total_usd == Decimal("2188.00")  # 4 x 547 < 2190: billed as weeks
    q = quote(term="5w")  # 5 x 547 = 2735 > 2 months? no: 2 x 2190 = 4380, so weeks
    assert q.total_usd == Decimal("2735.00") and q.lines[0].billed_unit == "week"
    assert quote(term="700h").total_usd == Decimal("2190.00")  # 700 x 3.49 = 2443 > 1 month


# --- validity, region, version, determinism ---------------------------------------------------------------

def test_a_quote_is_valid_for_24_hours_from_the_given_now() -> None:
    q = quote()
    assert q.created_at == NOW and q.valid_until == NOW + timedelta(hours=24)
    assert q.is_valid_at(NOW + timedelta(hours=23, minutes=59))
    assert not q.is_valid_at(q.valid_until)  # expired at the instant itself
    assert not q.is_valid_at(NOW + timedelta(days=2))


def test_validity_can_be_configured() -> None:
    assert quote(validity_s=600).valid_until == NOW + timedelta(minutes=10)


@pytest.mark.parametrize("validity_s", [0, -5, 1.5])
def test_a_non_positive_validity_is_refused(validity_s: object) -> None:
    with pytest.raises(InvalidQuoteRequest, match="validity_s"):
        quote(validity_s=validity_s)


def test_a_naive_now_is_refused() -> None:
    with pytest.raises(InvalidQuoteRequest, match="timezone-aware"):
        price_quote(CATALOG, "h100-sxm-1x-vm", 1, "1month", None, datetime(2026, 11, 29, 17))


def test_the_quote_records_the_catalog_version_region_and_optional_id() -> None:
    q = quote(region="eu-north", quote_id="q_123")
    assert (q.catalog_version, q.region, q.id) == (CATALOG.version, "eu-north", "q_123")
    assert quote().region == "us-east" and quote().id is None


def test_a_region_where_the_offering_is_not_listed_is_refused() -> None:
    with pytest.raises(RegionNotOffered, match="not listed in region 'eu-north'"):
        quote("b300-8x-bm", region="eu-north")
    with pytest.raises(UnknownEntity, match="unknown region 'mars'"):
        quote(region="mars")


def test_unknown_offerings_and_bad_terms_are_refused() -> None:
    with pytest.raises(UnknownEntity, match="did you mean 'h100-sxm-1x-vm'"):
        quote("h100-sxm-1x")
    with pytest.raises(InvalidTerm):
        quote(term="1 fortnight")


def test_a_term_object_and_its_text_give_the_same_quote() -> None:
    assert quote(term="2w") == price_quote(CATALOG, "h100-sxm-1x-vm", 1, parse_term("2 weeks"), None, NOW)


def test_pricing_reads_no_stock_and_works_on_a_hand_built_catalog() -> None:
    offering = Offering(id="x-1x-vm", gpu="l4", gpus=1, kind="vm", vcpus=4, ram_bytes=1, nvme_bytes=1, network_gbps=10,
                        interconnect="n/a", fabric="none", egress_tb_per_month=20, ddos_protection=True,
                        prices_usd=Prices(hour=Decimal("1.00"), week=Decimal("150.00"), month=Decimal("600.00")),
                        regions=("r1",), initial_stock=MappingProxyType({"r1": 0}), price_basis="test")
    catalog = Catalog(version="test-1", offerings=(offering,), options=(), regions=())
    q = price_quote(catalog, "x-1x-vm", 2, "3h", {}, NOW)
    assert (q.total_usd, q.effective_per_gpu_hour_usd, q.catalog_version) == (Decimal("6.00"), Decimal("1.00"), "test-1")


def test_the_servers_only_cost_of_a_term_ranks_offerings_and_says_unpriced() -> None:
    gb200 = CATALOG.offering("gb200-4x-bm")
    assert term_total_usd(gb200, "1month") == Decimal("30660.00")
    assert term_total_usd(gb200, "10h") is None  # unpriced by the hour: None, never 0
    assert term_total_usd(CATALOG.offering("h100-sxm-8x-bm"), parse_term("10h"), 2) == Decimal("531.80")
    assert term_total_usd(CATALOG.offering("h100-sxm-1x-vm"), "160h") == quote(term="160h").total_usd


# --- servers_price: what recommend prices with, held to price_quote -------------------------------------

@pytest.mark.parametrize("term", ["1h", "10h", "160h", "1w", "2w", "1month", "3month", "700h"])
def test_servers_price_is_the_quote_of_the_servers(term: str) -> None:
    """For every offering and 1-4 servers: the same total (to the exponent), rates, GPUs and region as the quote,
    or the same refusal where the term's unit is unpriced."""
    from anchorgpu.quotes.pricing import servers_price

    for offering in CATALOG.offerings:
        for servers in range(1, 5):
            try:
                q = price_quote(CATALOG, offering.id, servers, term, None, NOW)
            except UnpricedOffering as exc:
                with pytest.raises(UnpricedOffering) as lean:
                    servers_price(CATALOG, offering.id, servers, term, NOW)
                assert lean.value.message == exc.message
                continue
            p = servers_price(CATALOG, offering.id, servers, term, NOW)
            assert str(p.total_usd) == str(q.total_usd)
            assert str(p.effective_per_gpu_hour_usd) == str(q.effective_per_gpu_hour_usd)
            assert (p.region, p.gpus, p.per_gpu_hour_usd) == (q.region, q.gpus, q.per_gpu_hour_usd)


@pytest.mark.parametrize("term", ["1h", "160h", "1month"])
def test_servers_prices_is_servers_price_for_each_count(term: str) -> None:
    """recommend prices 1-4 servers of an offering at once: the same figures, or the same refusal, one by one."""
    from anchorgpu.quotes.pricing import servers_price, servers_prices

    for offering in CATALOG.offerings:
        try:
            together = servers_prices(CATALOG, offering.id, range(1, 5), term, NOW)
        except UnpricedOffering as exc:
            with pytest.raises(UnpricedOffering) as one:
                servers_price(CATALOG, offering.id, 1, term, NOW)
            assert one.value.message == exc.message
            continue
        assert together == tuple(servers_price(CATALOG, offering.id, n, term, NOW) for n in range(1, 5))
        assert [str(p.total_usd) for p in together] == [str(servers_price(CATALOG, offering.id, n, term, NOW).total_usd)
                                                       for n in range(1, 5)]


def test_servers_price_refuses_as_the_quote_does() -> None:
    from anchorgpu.quotes.pricing import servers_price

    with pytest.raises(InvalidQuoteRequest):
        servers_price(CATALOG, "h100-sxm-1x-vm", 1, "1month", datetime(2026, 11, 29))
    with pytest.raises(PartialGpuRequested):
        servers_price(CATALOG, "h100-sxm-1x-vm", 1.5, "1month", NOW)  # type: ignore[arg-type]
    with pytest.raises(UnknownEntity):
        servers_price(CATALOG, "no-such-offering", 1, "1month", NOW)
