"""Extending from the page shows the price and asks to confirm it before anything is charged (issue 14, item 5)."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient


def _booked(client: TestClient, field: Any) -> tuple[str, str]:
    token = field(client.get("/quote?offering=h100-sxm-1x-vm").text, "csrf_token")
    quote = client.post("/quote", data={"csrf_token": token, "offering": "h100-sxm-1x-vm", "quantity": "1", "term": "1month"})
    quote_url = quote.headers["location"]
    key = field(client.get(quote_url).text, "idempotency_key")
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": key})
    return booked.headers["location"], token


def _amount(html: str) -> str:
    return re.search(r'id="amount">([^<]+)<', html).group(1)  # type: ignore[union-attr]


def test_the_extend_button_leads_to_the_price_and_only_the_confirmation_charges(client: TestClient, signed_in: str,
                                                                                field: Any) -> None:
    allocation_url, token = _booked(client, field)
    page = client.get(allocation_url).text
    assert re.search(r'<form method="get" action="[^"]+/extend"', page)  # the button asks for the price, no POST
    before = _amount(page)
    confirm = client.get(f"{allocation_url}/extend?term=1month")
    assert confirm.status_code == 200
    # one month of one H100 VM at the list price: $2,190.00 (tests/api/test_commerce_routes.py, issue 5)
    assert re.search(r'id="extend-total">\$2,190\.00<', confirm.text)
    assert "Pay $2,190.00 and extend" in confirm.text and "Nothing has been charged yet" in confirm.text
    assert _amount(client.get(allocation_url).text) == before  # looking at the price charged nothing
    key = field(confirm.text, "idempotency_key")
    assert field(confirm.text, "expected_total_usd") == "2190.00"
    done = client.post(f"{allocation_url}/extend", data={"csrf_token": token, "idempotency_key": key, "term": "1month",
                                                         "expected_total_usd": "2190.00"})
    assert done.status_code == 303 and done.headers["location"] == allocation_url
    after = client.get(allocation_url).text
    assert "Extended: it now ends at" in after and _amount(after) == "$4,380.00"


def test_an_extension_without_a_confirmed_price_is_sent_to_the_price_first(client: TestClient, signed_in: str,
                                                                           field: Any) -> None:
    allocation_url, token = _booked(client, field)
    before = _amount(client.get(allocation_url).text)
    blind = client.post(f"{allocation_url}/extend", data={"csrf_token": token, "idempotency_key": "web-blind-1",
                                                          "term": "1w"})
    assert blind.status_code == 303 and blind.headers["location"] == f"{allocation_url}/extend?term=1w"
    assert _amount(client.get(allocation_url).text) == before


def test_a_price_that_is_not_todays_is_refused_and_the_new_price_shown(client: TestClient, signed_in: str,
                                                                       field: Any) -> None:
    allocation_url, token = _booked(client, field)
    before = _amount(client.get(allocation_url).text)
    stale = client.post(f"{allocation_url}/extend", data={"csrf_token": token, "idempotency_key": "web-stale-1",
                                                          "term": "1month", "expected_total_usd": "1.00"})
    assert stale.status_code == 303 and stale.headers["location"].endswith("/extend?term=1month")
    shown = client.get(stale.headers["location"]).text
    # money as every face writes it (units.fmt_usd, as the budget rejections since stop 59's qafix), the whole sentence
    assert "the extension by 1month now costs $2,190.00, not the $1.00 confirmed: nothing was charged; confirm the new " \
           "price to extend" in shown
    assert _amount(client.get(allocation_url).text) == before


def test_a_bad_term_on_the_price_page_says_why(client: TestClient, signed_in: str, field: Any) -> None:
    allocation_url, _ = _booked(client, field)
    response = client.get(f"{allocation_url}/extend?term=3 fortnights")
    assert response.status_code == 422 and 'id="extend-error"' in response.text
    assert "extend-confirm-form" not in response.text


def test_the_extend_forms_always_send_a_term_and_a_post_without_one_charges_nothing(client: TestClient,
                                                                                    signed_in: str, field: Any) -> None:
    """The allocation page's Extend form selects a term (one option is always selected) and the confirmation
    posts the term it priced; a post without a term is refused and charges nothing."""
    allocation_url, token = _booked(client, field)
    page = client.get(allocation_url).text
    form = re.search(r'<form[^>]*id="extend-form">(.*?)</form>', page, re.S)
    assert form is not None and re.search(r'<select name="term"', form.group(1))
    assert len(re.findall(r"<option [^>]*selected", form.group(1))) == 1
    confirm = client.get(f"{allocation_url}/extend?term=1w").text
    assert field(confirm, "term") == "1w"
    before = _amount(client.get(allocation_url).text)
    blind = client.post(f"{allocation_url}/extend", data={"csrf_token": token, "idempotency_key": "web-no-term-1",
                                                          "expected_total_usd": "2190.00"})
    assert blind.status_code == 303
    shown = client.get(blind.headers["location"]).text
    assert "Could not extend: term" in shown.replace("&#39;", "'")
    assert _amount(client.get(allocation_url).text) == before
