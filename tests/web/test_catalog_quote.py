"""Issue 14 item 8 on the pages: the catalog's GPU-memory column, sortable columns (plain links, no script),
one explained price per GPU-hour, the plural of the row count; the quote builder's live total; sign-up
returning to where you were."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu


def _rows(html: str) -> list[list[str]]:
    body = re.search(r'<table id="offerings".*?<tbody>(.*?)</tbody>', html, re.S)
    assert body is not None
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S):
        cells = [re.sub(r"<[^>]+>", " ", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)]
        rows.append([" ".join(c.split()) for c in cells])
    return rows


def _gib(cell: str) -> float:
    return float(cell.replace(",", ".").split()[0])


def test_catalog_shows_each_offerings_gpu_memory_from_the_hardware_registry(client: TestClient) -> None:
    rows = _rows(client.get("/catalog").text)
    assert len(rows) >= 16
    for row in rows:
        offering = load_catalog().offering(row[0].split()[0])
        # e.g. H200 139.8 GiB (as CUDA reports it, measured: benchmarks/device/h200_2026-12-04.json), MI300X 192 GiB
        assert _gib(row[2]) == pytest.approx(get_gpu(offering.gpu).memory_bytes / 2**30, abs=0.05), row


def test_catalog_sorts_by_memory_both_ways_through_plain_links(client: TestClient) -> None:
    html = client.get("/catalog").text
    link = re.search(r'href="([^"]+)" id="sort-memory"', html)
    assert link is not None and link.group(1).endswith("sort=memory")
    ascending = [_gib(r[2]) for r in _rows(client.get("/catalog?sort=memory").text)]
    assert ascending == sorted(ascending) and ascending[0] < ascending[-1]
    page = client.get("/catalog?sort=memory").text
    flipped = re.search(r'href="([^"]+)" id="sort-memory"', page)
    assert flipped is not None and flipped.group(1).endswith("sort=-memory")
    assert 'aria-sort="ascending"' in page
    descending = [_gib(r[2]) for r in _rows(client.get("/catalog?sort=-memory").text)]
    assert descending == sorted(descending, reverse=True)


def test_sorting_keeps_the_filters_and_an_unknown_sort_falls_back_to_price(client: TestClient) -> None:
    html = client.get("/catalog?gpu=h100&sort=-month").text
    link = re.search(r'href="([^"]+)" id="sort-region"', html)
    assert link is not None and "gpu=h100" in link.group(1).replace("&amp;", "&")
    months = [Decimal(r[5].lstrip("$").replace(",", "")) for r in _rows(html)]
    assert months == sorted(months, reverse=True)
    assert all("h100" in r[0] for r in _rows(html))
    fallback = client.get("/catalog?sort=nonsense")
    assert fallback.status_code == 200
    rates = [Decimal(r[3].lstrip("$").replace(",", "")) for r in _rows(fallback.text)]
    assert rates == sorted(rates)


def test_one_per_gpu_hour_price_explained_beside_the_table(client: TestClient) -> None:
    html = client.get("/catalog").text
    caption = re.search(r'id="price-explained">(.*?)</p>', html, re.S)
    assert caption is not None and "730" in caption.group(1) and "720" in caption.group(1)
    head = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)  # type: ignore[union-attr]
    assert head.count("$/GPU-h") == 1
    # the comparison rate is the monthly price / GPUs / 730 h (catalog data, a100-80gb-sxm-1x-vm: $1,241 a month)
    offering = load_catalog().offering("a100-80gb-sxm-1x-vm")
    row = next(r for r in _rows(html) if r[0].startswith("a100-80gb-sxm-1x-vm"))
    assert row[3] == f"${offering.prices_usd.month / offering.gpus / 730:,.2f}"  # type: ignore[operator]


def test_the_row_count_has_a_correct_plural(client: TestClient) -> None:
    one = client.get("/catalog?gpu=l4&region=us-east&kind=vm").text
    assert len(_rows(one)) == 1
    assert re.search(r'id="catalog-count">1 offering row ·', one)
    many = client.get("/catalog").text
    assert re.search(r'id="catalog-count">\d+ offering rows ·', many)
    assert "1 rows" not in one


def test_signing_up_from_a_quote_link_returns_to_that_quote(client: TestClient, field: Any) -> None:
    wanted = "/quote?offering=h100-sxm-1x-vm&region=us-east"
    bounced = client.get(wanted)
    assert bounced.status_code in (303, 307) and "next=" in bounced.headers["location"]
    signin = client.get(bounced.headers["location"]).text
    signup_form = signin[signin.index('action="/signup"'):]
    next_value = field(signup_form, "next").replace("&amp;", "&")
    assert next_value == wanted
    done = client.post("/signup", data={"csrf_token": field(signin, "csrf_token"), "name": "from a quote", "next": next_value})
    assert done.status_code == 201
    link = re.search(r'id="continue" href="([^"]+)"', done.text)
    assert link is not None and link.group(1).replace("&amp;", "&") == wanted
    assert client.get(wanted).status_code == 200  # signed in now: the builder itself


def test_the_headers_sign_in_from_any_page_returns_to_that_page(client: TestClient, field: Any) -> None:
    # issue 14 item 8, "sign-up returns to where you were": not only from a quote link, from the header's button too
    page = client.get("/catalog?gpu=h100&sort=-memory").text
    signin_url = re.search(r'href="([^"]+)" class="button small" id="signin-link"', page).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    assert signin_url == "/signin?next=%2Fcatalog%3Fgpu%3Dh100%26sort%3D-memory"
    signin = client.get(signin_url).text
    next_value = re.search(r'name="next" value="([^"]*)"', signin).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
    done = client.post("/signup", data={"csrf_token": field(signin, "csrf_token"), "name": "from the catalog", "next": next_value})
    link = re.search(r'id="continue" href="([^"]+)"', done.text)
    assert link is not None and link.group(1).replace("&amp;", "&") == "/catalog?gpu=h100&sort=-memory"
    assert 'id="signin-link"' not in client.get("/catalog").text  # signed in: the header offers sign-out instead
    client.cookies.clear()
    assert 'href="/signin" class="button small" id="signin-link"' in client.get("/signin?next=/plan").text  # no loop to itself


def test_sign_up_keeps_no_off_site_next(client: TestClient, field: Any) -> None:
    for bad in ("https://evil.example/", "//evil.example/x", "/\\evil"):
        page = client.get("/signin").text  # a fresh token: signing up starts a new session
        done = client.post("/signup", data={"csrf_token": field(page, "csrf_token"), "name": "careful", "next": bad})
        assert done.status_code == 201
        link = re.search(r'id="continue" href="([^"]+)"', done.text)
        assert link is not None and link.group(1) == "/my/allocations"
    page = client.get("/signin").text
    too_long = client.post("/signup", data={"csrf_token": field(page, "csrf_token"), "name": "long", "next": "/" + "a" * 2000})
    assert too_long.status_code == 422


def _preview(client: TestClient, **params: str) -> str:
    response = client.get("/quote/preview", params=params)
    assert response.status_code == 200
    return response.text


def test_quote_preview_totals_the_choice_as_a_stored_quote_would(client: TestClient, signed_in: str, field: Any) -> None:
    offering = load_catalog().offering("h100-sxm-1x-vm")
    month = offering.prices_usd.month
    assert month is not None
    one = _preview(client, offering="h100-sxm-1x-vm", quantity="1", term="1month")
    three = _preview(client, offering="h100-sxm-1x-vm", quantity="3", term="2month")
    total = re.search(r'id="preview-total">([^<]+)<', three)
    assert total is not None and total.group(1) == f"${month * 6:,.2f}"  # catalog month price x 3 servers x 2 months
    assert re.search(r'id="preview-total">([^<]+)<', one).group(1) == f"${month:,.2f}"  # type: ignore[union-attr]
    # the builder page shows the same total before anything is submitted, and a stored quote agrees
    builder = client.get("/quote?offering=h100-sxm-1x-vm&quantity=3&term=2month").text
    assert f'id="preview-total">${month * 6:,.2f}<' in builder
    token = field(builder, "csrf_token")
    stored = client.post("/quote", data={"csrf_token": token, "offering": "h100-sxm-1x-vm", "quantity": "3", "term": "2month"})
    assert f'id="quote-total">${month * 6:,.2f}<' in client.get(stored.headers["location"]).text
    # the effective rate for the term: total / (GPUs x 1,440 h)
    rate = re.search(r'id="preview-rate">([^<]+)<', three)
    assert rate is not None and rate.group(1) == f"${month * 6 / (3 * 1440):,.2f}"


def test_quote_preview_stores_nothing_and_explains_a_bad_choice(client: TestClient, signed_in: str) -> None:
    bad_term = _preview(client, offering="h100-sxm-1x-vm", quantity="1", term="soon")
    assert 'id="preview-error"' in bad_term and "preview-total" not in bad_term
    bad_quantity = _preview(client, offering="h100-sxm-1x-vm", quantity="1.5", term="1w")
    assert 'id="preview-error"' in bad_quantity
    unknown = _preview(client, offering="no-such-offering", quantity="1", term="1w")
    assert 'id="preview-error"' in unknown
    _preview(client, offering="h100-sxm-1x-vm", quantity="2", term="1w")
    assert "/quotes/" not in client.get("/my/allocations").text


def test_quote_preview_needs_a_session(client: TestClient) -> None:
    response = client.get("/quote/preview", params={"offering": "h100-sxm-1x-vm", "term": "1w"})
    assert response.status_code in (303, 307, 401)


def test_the_gpu_count_filter_takes_ascii_digits_only(client: TestClient) -> None:
    """Python's int() reads full-width and Arabic-Indic digits; the catalog's count filter, like every other count
    and amount on the pages, the API and the CLI, takes ASCII digits only and says so instead of filtering."""
    eight = _rows(client.get("/catalog?min_gpus=8").text)
    assert eight and len(eight) < len(_rows(client.get("/catalog").text))
    for written in ("８", "١٢"):
        html = client.get("/catalog", params={"min_gpus": written}).text
        assert "Min GPUs must be a whole number of at least 1." in html


@pytest.mark.parametrize("sort", ["offering", "-offering", "region", "memory", "gpus", "month", "-per_gpu_hour", "free"])
def test_every_catalog_column_sorts(client: TestClient, sort: str) -> None:
    """Each heading's link sorts the table; "Offering" (``?sort=offering``) answered 500: the ids were read as amounts."""
    from anchorgpu.web.catalog import SORT_KEYS

    assert sort.removeprefix("-") in SORT_KEYS
    page = client.get(f"/catalog?sort={sort}")
    assert page.status_code == 200
    if sort.endswith("offering"):
        ids = re.findall(r'<tr>\s*<td class="breakable">([a-z0-9-]+) <span', page.text)
        assert len(ids) > 10 and ids == sorted(ids, reverse=sort.startswith("-"))
