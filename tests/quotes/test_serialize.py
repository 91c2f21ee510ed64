"""The quote JSON contract and its inverse (the store keeps the JSON, so prices hold as quoted)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from anchorgpu.catalog import load_catalog
from anchorgpu.errors import InvalidInput
from anchorgpu.quotes import price_quote, quote_from_json, quote_to_json

NOW = datetime(2026, 11, 29, 17, 0, tzinfo=UTC)
CONTRACT_KEYS = {"id", "offering", "quantity", "gpus", "term", "lines", "total_usd", "per_gpu_hour_usd",
                 "effective_per_gpu_hour_usd", "gpu_hours", "egress_included_tb", "valid_until", "catalog_version"}


def test_quote_json_has_the_contract_keys_and_exact_money_strings() -> None:
    q = price_quote(load_catalog(), "h100-sxm-1x-vm", 1, "1month", {"ipv4": 1}, NOW, quote_id="q_1")
    data = quote_to_json(q)
    assert CONTRACT_KEYS <= set(data)
    assert data["term"] == {"unit": "month", "count": 1, "hours": 720}
    assert (data["id"], data["offering"], data["quantity"], data["gpus"], data["gpu_hours"]) == ("q_1", "h100-sxm-1x-vm", 1, 1, 720)
    assert (data["total_usd"], data["per_gpu_hour_usd"], data["effective_per_gpu_hour_usd"]) == ("2193.50", "3.00", "3.05")
    assert data["egress_included_tb"] == "20" and data["valid_until"] == "2026-11-30T17:00:00+00:00"
    assert [line["amount_usd"] for line in data["lines"]] == ["2190.00", "3.50"]
    assert data["nothing_else_billed"].startswith("Nothing else is billed")
    assert json.loads(json.dumps(data)) == data


@pytest.mark.parametrize(("offering", "term", "options"), [
    ("h100-sxm-8x-bm", "160h", {"nvme-tb": 3, "ipv4": 2}), ("gb200-4x-bm", "2month", {}), ("l4-1x-vm", "5h", {"volume-tb": 1}),
])
def test_a_quote_survives_the_round_trip_through_json(offering: str, term: str, options: dict[str, int]) -> None:
    q = price_quote(load_catalog(), offering, 2, term, options, NOW, quote_id="q_2")
    assert quote_from_json(json.loads(json.dumps(quote_to_json(q)))) == q


def test_a_malformed_stored_body_is_refused_with_a_reason() -> None:
    data = quote_to_json(price_quote(load_catalog(), "l4-1x-vm", 1, "1h", None, NOW))
    del data["lines"]
    with pytest.raises(InvalidInput, match="quote JSON is malformed: KeyError"):
        quote_from_json(data)
