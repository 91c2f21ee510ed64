"""Money is never charged blind (issue 14, item 5): ``POST /v1/allocations/{id}/extend`` with ``dry_run: true``
answers the price and charges nothing; ``expected_total_usd`` charges only at the price confirmed."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from fastapi.testclient import TestClient

from anchorgpu.catalog import load_catalog
from anchorgpu.quotes import price_quote


def _book(client: TestClient, caller: Any, quote_for: Any) -> dict[str, Any]:
    quote = quote_for(caller)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=caller.idem(f"buy-{quote['id']}"))
    assert response.status_code == 201
    body: dict[str, Any] = response.json()
    return body


def _extend(client: TestClient, caller: Any, allocation_id: str, key: str, **body: Any) -> Any:
    return client.post(f"/v1/allocations/{allocation_id}/extend", json=body, headers=caller.idem(key))


def test_a_dry_run_prices_the_extension_like_a_quote_and_charges_nothing(client: TestClient, alice: Any,
                                                                         quote_for: Any, clock: Any) -> None:
    allocation = _book(client, alice, quote_for)
    response = _extend(client, alice, allocation["id"], "price-1", term="1month", dry_run=True)
    assert response.status_code == 200
    priced = response.json()
    # the same price a quote for one H100 VM for a month gives: $2,190.00 (test_commerce_routes, issue 5)
    expected = price_quote(load_catalog(), "h100-sxm-1x-vm", 1, "1month", {}, clock()).total_usd
    assert priced["total_usd"] == str(expected) == "2190.00"
    assert priced["dry_run"] is True and priced["charged"] is False and priced["capacity_available"] is True
    assert datetime.fromisoformat(priced["ends_at"]) - datetime.fromisoformat(allocation["ends_at"]) == timedelta(hours=720)
    assert Decimal(priced["amount_usd_after"]) == Decimal(allocation["amount_usd"]) + expected
    assert "Nothing has been charged" in priced["statement"]
    after = client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()
    assert after["ends_at"] == allocation["ends_at"] and after["amount_usd"] == allocation["amount_usd"]
    assert [e["kind"] for e in after["events"]] == [e["kind"] for e in allocation["events"]]
    # the dry run recorded nothing under its key: the same key then extends for real
    real = _extend(client, alice, allocation["id"], "price-1", term="1month", expected_total_usd=priced["total_usd"])
    assert real.status_code == 200 and "idempotent-replayed" not in real.headers
    assert real.json()["ends_at"] == priced["ends_at"] and real.json()["amount_usd"] == priced["amount_usd_after"]


def test_a_price_other_than_the_one_confirmed_is_refused_and_nothing_is_charged(client: TestClient, alice: Any,
                                                                                 quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    response = _extend(client, alice, allocation["id"], "cheap", term="1month", expected_total_usd="100.00")
    assert response.status_code == 409
    body = problem(response)
    assert body["code"] == "price_changed" and "$2,190.00" in body["detail"] and "nothing was charged" in body["detail"]
    after = client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()
    assert after["ends_at"] == allocation["ends_at"] and after["amount_usd"] == allocation["amount_usd"]


def test_a_dry_run_says_when_the_stock_cannot_hold_the_extension(client: TestClient, alice: Any, quote_for: Any,
                                                                 clock: Any, problem: Any) -> None:
    from anchorgpu.allocations import services

    allocation = _book(client, alice, quote_for)
    store = client.app.state.store  # type: ignore[attr-defined]
    services.set_stock(store.uow_factory(), offering="h100-sxm-1x-vm", region=allocation["region"], servers=0, clock=clock)
    priced = _extend(client, alice, allocation["id"], "p", term="1w", dry_run=True)
    assert priced.status_code == 200
    assert priced.json()["capacity_available"] is False and "only 0 of 0" in priced.json()["capacity"]
    refused = _extend(client, alice, allocation["id"], "p", term="1w", expected_total_usd=priced.json()["total_usd"])
    assert refused.status_code == 409 and problem(refused)["code"] == "insufficient_capacity"  # what the dry run said


def test_dry_runs_are_refused_like_extensions(client: TestClient, alice: Any, bob: Any, quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    foreign = _extend(client, bob, allocation["id"], "x", term="1w", dry_run=True)
    assert foreign.status_code == 404 and problem(foreign)["code"] == "unknown_allocation"
    bad = _extend(client, alice, allocation["id"], "y", term="5 fortnights", dry_run=True)
    assert bad.status_code == 422 and problem(bad)["code"] == "invalid_term"
    client.post(f"/v1/allocations/{allocation['id']}/terminate", headers=alice.idem("end"))
    over = _extend(client, alice, allocation["id"], "z", term="1w", dry_run=True)
    assert over.status_code == 409 and problem(over)["code"] == "allocation_terminated"
    unauth = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"dry_run": True})
    assert unauth.status_code == 401


def test_the_openapi_document_offers_the_dry_run_and_its_answer(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    op = document["paths"]["/v1/allocations/{allocation_id}/extend"]["post"]
    assert "dry_run" in op["description"]
    schemas = document["components"]["schemas"]
    assert {"dry_run", "expected_total_usd"} <= set(schemas["AllocationExtend"]["properties"])
    assert "ExtensionQuote" in schemas


def test_quotes_and_extensions_take_days_that_make_whole_weeks_or_months(client: TestClient, alice: Any,
                                                                        quote_for: Any, problem: Any) -> None:
    week = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": "7 days"}, headers=alice.auth)
    assert week.status_code == 201 and week.json()["term"] == {"unit": "week", "count": 1, "hours": 168}
    month = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": "30 days"}, headers=alice.auth)
    assert month.status_code == 201 and month.json()["total_usd"] == "2190.00"  # the 1-month price (issue 5)
    odd = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": "10 days"}, headers=alice.auth)
    assert odd.status_code == 422 and "whole weeks (7 days)" in problem(odd)["detail"]
    allocation = _book(client, alice, quote_for)
    priced = _extend(client, alice, allocation["id"], "d", term="14 days", dry_run=True)
    assert priced.status_code == 200 and priced.json()["added_hours"] == 336


def test_an_extension_without_a_term_is_a_422_naming_it_and_charges_nothing(client: TestClient, alice: Any,
                                                                             quote_for: Any, problem: Any) -> None:
    """QA pass: ``{}`` extended by a default month and charged it. Money is never charged for a term nobody named:
    ``term`` is required (a dry run too: the price of what?), and the refusal records nothing under the key."""
    allocation = _book(client, alice, quote_for)
    for body in ({}, {"expected_total_usd": "2190.00"}, {"dry_run": True}):
        response = _extend(client, alice, allocation["id"], "no-term", **body)
        assert response.status_code == 422, (body, response.text)
        refused = problem(response)
        assert refused["code"] == "invalid_request" and refused["detail"] == "body.term: Field required"
    after = client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()
    assert after["ends_at"] == allocation["ends_at"] and after["amount_usd"] == allocation["amount_usd"]
    priced = _extend(client, alice, allocation["id"], "no-term", term="1w", dry_run=True)
    assert priced.status_code == 200 and priced.json()["added_hours"] == 168  # the dry run still works, with a term
    real = _extend(client, alice, allocation["id"], "no-term", term="1w")
    assert real.status_code == 200 and "idempotent-replayed" not in real.headers  # the key was not spent


_LOOSE_AMOUNTS = (" 2190.00 ", "2.19e3", "+2190", "2190,00", "２１９０", "$2190")


def test_money_fields_take_a_json_number_or_a_plain_decimal_and_refuse_the_rest(client: TestClient, alice: Any,
                                                                                quote_for: Any, problem: Any) -> None:
    """QA pass: money fields read " 100 " (spaces), "1e3" (exponent), "+5", "1_000" and non-ASCII digits as
    amounts; money is exact decimal, one rule on every face (anchorgpu.money_rules.usd_amount)."""
    allocation = _book(client, alice, quote_for)
    fields = (
        ("body.expected_total_usd",
         lambda v: _extend(client, alice, allocation["id"], "loose", term="1month", dry_run=True, expected_total_usd=v)),
        ("body.max_usd", lambda v: client.post("/v1/recommend", json={"model": "llama-3.2-1b", "max_usd": v, "top": 1,
                                                                      "max_servers": 1})),
        ("query.max_usd_per_gpu_hour", lambda v: client.get("/v1/offerings", params={"max_usd_per_gpu_hour": v})),
    )
    for name, send in fields:
        for value in _LOOSE_AMOUNTS:
            answer = send(value)
            assert answer.status_code == 422, (name, value, answer.text[:200])
            detail = problem(answer)["detail"]
            assert detail.startswith(f"{name}: {value!r}: expected an amount in USD written with ASCII digits"), detail
        for value in ("2190.00", 2190, 2190.0):
            assert send(value).status_code == 200, (name, value)
    after = client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()
    assert after["amount_usd"] == allocation["amount_usd"]
