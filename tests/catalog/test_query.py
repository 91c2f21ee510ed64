"""Pure queries over offerings: filters, sort order, the cheapest comparison rate per GPU."""

from __future__ import annotations

from decimal import Decimal
from types import MappingProxyType

import pytest

from anchorgpu.catalog import Catalog, Offering, Prices, find_offerings, gpu_hour_price, load_catalog, offering_regions
from anchorgpu.errors import InvalidInput, UnknownEntity, UnknownGpu


def make(id: str, gpu: str, gpus: int, month: str | None, *, regions: tuple[str, ...] = ("us-east",),
         interconnect: str = "n/a (single GPU)", fabric: str = "none") -> Offering:
    return Offering(
        id=id, gpu=gpu, gpus=gpus, kind="vm" if gpus == 1 else "bare-metal", vcpus=8, ram_bytes=1, nvme_bytes=1,
        network_gbps=25, interconnect=interconnect, fabric=fabric, egress_tb_per_month=20 if gpus == 1 else 50,
        ddos_protection=True, prices_usd=Prices(month=None if month is None else Decimal(month)), regions=regions,
        initial_stock=MappingProxyType(dict.fromkeys(regions, 1)), price_basis="test",
    )


# Four synthetic rows, prices chosen so every order is known by hand (rates = month / gpus / 730):
FOUR = (
    make("h100-1x", "h100-sxm", 1, "2190.00"),  # 3.00 per GPU-hour
    make("h100-8x", "h100-sxm", 8, "16644.00", regions=("us-east", "eu-north"),
         interconnect="NVLink 4 (NVSwitch)", fabric="8x400 Gb/s InfiniBand NDR"),  # 2.85
    make("l40s-8x", "l40s", 8, "5548.00", regions=("eu-north",), interconnect="PCIe Gen4 only"),  # 0.95
    make("mystery-1x", "l4", 1, None),  # unpriced
)


def same(name: str) -> str:
    return name.lower()


def ids(offerings: tuple[Offering, ...]) -> list[str]:
    return [o.id for o in offerings]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({}, ["l40s-8x", "h100-8x", "h100-1x", "mystery-1x"]),  # cheapest 730-h rate first, unpriced last
        ({"gpu": "h100-sxm"}, ["h100-8x", "h100-1x"]),
        ({"min_gpus": 8}, ["l40s-8x", "h100-8x"]),
        ({"max_usd_per_gpu_hour": "3.00"}, ["l40s-8x", "h100-8x", "h100-1x"]),  # inclusive; unpriced drops out
        ({"max_usd_per_gpu_hour": Decimal("2.99")}, ["l40s-8x", "h100-8x"]),
        ({"max_usd_per_gpu_hour": "0"}, []),
        ({"region": "EU-NORTH"}, ["l40s-8x", "h100-8x"]),  # region ids match case-insensitively
        ({"interconnect": "nvlink"}, ["h100-8x"]),  # case-insensitive substring of the GPU interconnect...
        ({"interconnect": "infiniband"}, ["h100-8x"]),  # ...fabric is searched too
        ({"kind": "vm"}, ["h100-1x", "mystery-1x"]),
        ({"priced_only": True}, ["l40s-8x", "h100-8x", "h100-1x"]),
        ({"gpu": "h100-sxm", "min_gpus": 2, "region": "eu-north"}, ["h100-8x"]),
        ({"sort": "id"}, ["h100-1x", "h100-8x", "l40s-8x", "mystery-1x"]),
        ({"sort": "gpus"}, ["h100-1x", "mystery-1x", "l40s-8x", "h100-8x"]),
        ({"sort": "price", "descending": True}, ["mystery-1x", "h100-1x", "h100-8x", "l40s-8x"]),
    ],
)
def test_filters_and_sorts_on_four_synthetic_offerings(filters: dict[str, object], expected: list[str]) -> None:
    result = find_offerings(FOUR, resolve_gpu=same, **filters)  # type: ignore[arg-type]
    assert ids(result) == expected


def test_a_gpu_filter_accepts_hardware_aliases() -> None:
    catalog = load_catalog()
    assert ids(find_offerings(catalog, gpu="H100")) == ["h100-sxm-8x-bm", "h100-sxm-1x-vm"]
    assert ids(find_offerings(catalog, gpu="NVIDIA H100 NVL 94GB")) == ["h100-nvl-8x-bm", "h100-nvl-1x-vm"]


def test_an_unknown_gpu_filter_suggests_names() -> None:
    with pytest.raises(UnknownGpu) as caught:
        find_offerings(load_catalog(), gpu="h1000")
    assert caught.value.suggestions and caught.value.exit_code == 3


@pytest.mark.parametrize(
    ("filters", "reason"),
    [({"min_gpus": 0}, "min_gpus=0"), ({"max_usd_per_gpu_hour": "-1"}, "from 0 to"),
     ({"max_usd_per_gpu_hour": "cheap"}, "expected an amount in USD"), ({"max_usd_per_gpu_hour": "1e3"}, "no spaces, exponent"),
     ({"sort": "colour"}, "expected one of")],
)
def test_bad_query_values_are_refused_with_a_reason(filters: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        find_offerings(FOUR, resolve_gpu=same, **filters)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("filters", "suggestion"),
    [({"region": "us-eas"}, "us-east"), ({"interconnect": "infinband"}, "infiniband")],
)
def test_a_region_or_interconnect_that_names_nothing_is_a_typo_with_suggestions_not_an_empty_list(
    filters: dict[str, str], suggestion: str,
) -> None:
    # Found by QA-CLI: `anchorgpu offerings --region us-eas` printed an empty table with exit 0.
    for pool in (load_catalog(), FOUR):
        with pytest.raises(UnknownEntity) as caught:
            find_offerings(pool, resolve_gpu=same, **filters)  # type: ignore[arg-type]
        assert caught.value.exit_code == 3 and caught.value.suggestions[0] == suggestion


def test_a_known_region_with_no_match_for_the_other_filters_is_still_an_empty_answer() -> None:
    assert find_offerings(FOUR, resolve_gpu=same, region="eu-north", kind="vm") == ()


def test_the_shipped_catalog_filters_by_interconnect_to_multi_gpu_nvlink_servers() -> None:
    found = find_offerings(load_catalog(), interconnect="NVLink")
    assert found and all(o.gpus > 1 for o in found)
    assert "h100-sxm-8x-bm" in ids(found) and "h100-sxm-1x-vm" not in ids(found)


def test_gpu_hour_price_is_the_cheapest_730_hour_rate_of_the_gpu() -> None:
    # h100-sxm: 1x VM $2,190/month -> 3.00; 8x server $16,644/month -> 16644 / 8 / 730 = 2.85.
    assert gpu_hour_price("h100") == Decimal("2.85")
    assert gpu_hour_price("gb200") == Decimal("10.50")  # month-only, 4-GPU node
    assert gpu_hour_price("a10g") is None  # in the hardware data but not offered


def test_gpu_hour_price_is_none_when_every_offering_of_the_gpu_is_unpriced() -> None:
    catalog = Catalog(version="t", offerings=FOUR, options=(), regions=())
    assert gpu_hour_price("l4", catalog, resolve_gpu=same) is None
    assert gpu_hour_price("h100-sxm", catalog, resolve_gpu=same) == Decimal("2.85")


def test_listing_rows_come_one_per_region() -> None:
    rows = offering_regions(FOUR)
    assert [(o.id, r) for o, r in rows if o.id == "h100-8x"] == [("h100-8x", "us-east"), ("h100-8x", "eu-north")]
    assert [(o.id, r) for o, r in offering_regions(FOUR, "eu-north")] == [("h100-8x", "eu-north"), ("l40s-8x", "eu-north")]
