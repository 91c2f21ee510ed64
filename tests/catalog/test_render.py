"""JSON and table views of offerings: stable keys, exact money strings, unpriced as null."""

from __future__ import annotations

import io
import json

from anchorgpu.catalog import load_catalog, offering_regions, offering_to_json, offerings_table

CONTRACT_KEYS = {"id", "gpu", "gpus", "kind", "region", "prices_usd", "per_gpu_hour_usd", "egress_tb_per_month",
                 "stock", "vcpus", "ram_bytes", "nvme_bytes", "network", "options"}


def test_offering_json_carries_the_contract_keys_with_exact_money() -> None:
    data = offering_to_json(load_catalog().offering("h100-sxm-1x-vm"), 7)
    assert CONTRACT_KEYS <= set(data)
    assert data["prices_usd"] == {"hour": "3.49", "week": "547.00", "month": "2190.00"}
    assert data["per_gpu_hour_usd"] == "3.00"
    assert (data["gpus"], data["kind"], data["region"], data["stock"], data["egress_tb_per_month"]) == (1, "vm", "us-east", 7, 20)
    assert {o["id"] for o in data["options"]} >= {"nvme-tb", "ipv4"}
    json.dumps(data)  # plain JSON types only


def test_stock_may_be_given_per_region_and_unknown_stock_is_null() -> None:
    offering = load_catalog().offering("h100-sxm-8x-bm")
    assert offering_to_json(offering, {"us-east": 3, "eu-north": 1}, region="eu-north")["stock"] == 1
    assert offering_to_json(offering)["stock"] is None


def test_an_unpriced_term_is_null_never_zero() -> None:
    data = offering_to_json(load_catalog().offering("gb200-4x-bm"))
    assert data["prices_usd"] == {"hour": None, "week": None, "month": "30660.00"}
    assert data["per_gpu_hour_usd"] == "10.50"


def test_the_table_shows_every_row_and_says_unpriced() -> None:
    from rich.console import Console

    catalog = load_catalog()
    rows = [(o, r, None) for o, r in offering_regions(catalog.offerings)]
    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(offerings_table(rows, title="offerings"))
    text = out.getvalue()
    assert "h100-sxm-1x-vm" in text and "2,190.00" in text and "3.00" in text and "730 h" in text
    assert "unpriced" in text  # gb200 by the hour
    assert text.count("h100-sxm-8x-bm") == 3  # one row per region


def test_the_narrow_table_fits_80_columns_without_cutting_ids_or_prices() -> None:
    from rich.console import Console

    rows = [(o, r, 12) for o, r in offering_regions(load_catalog().offerings)]
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(offerings_table(rows))
    text = out.getvalue()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    assert "a100-80gb-sxm-8x-bm" in text and "41,464.00" in text and "unpriced" in text


def test_the_wide_table_adds_host_network_and_interconnect() -> None:
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=250, color_system=None).print(
        offerings_table([(load_catalog().offering("h100-sxm-8x-bm"), "us-east", 3)], wide=True))
    text = out.getvalue()
    assert "224 vCPU" in text and "InfiniBand NDR" in text and "NVLink 4 (NVSwitch)" in text
