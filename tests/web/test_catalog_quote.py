"""Issue 14 item 8 on the pages: the catalog's GPU-memory column, sortable columns (plain links, no script),
one explained price per GPU-hour, the plural of the row count; the quote builder's live total; sign-up
returning to where you were."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

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
        assert _gib(row[2]) == get_gpu(offering.gpu).memory_bytes / 2**30, row  # e.g. H200 141 GiB, MI300X 192 GiB


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
    months = [Decimal(r[6].lstrip("$").replace(",", "")) for r in _rows(html)]
    assert months == sorted(months, reverse=True)
    assert all("h100" in r[0] for r in _rows(html))
    fallback = client.get("/catalog?sort=nonsense")
    assert fallback.status_code == 200
    rates = [Decimal(r[4].lstrip("$").replace(",", "")) for r in _rows(fallback.text)]
    assert rates == sorted(rates)


def test_one_per_gpu_hour_price_explained_in_a_caption(client: TestClient) -> None:
    html = client.get("/catalog").text
    caption = re.search(r'<caption id="price-explained">(.*?)</caption>', html, re.S)
    assert caption is not None and "730" in caption.group(1) and "720" in caption.group(1)
    head = re.search(r"<thead>(.*?)</thead>", html, re.S).group(1)  # type: ignore[union-attr]
    assert head.count("$/GPU-h") == 1
    # the comparison rate is the monthly price / GPUs / 730 h (catalog data, a100-80gb-sxm-1x-vm: $1,241 a month)
    offering = load_catalog().offering("a100-80gb-sxm-1x-vm")
    row = next(r for r in _rows(html) if r[0].startswith("a100-80gb-sxm-1x-vm"))
    assert row[4] == f"${offering.prices_usd.month / offering.gpus / 730:,.2f}"  # type: ignore[operator]


def test_the_row_count_has_a_correct_plural(client: TestClient) -> None:
    one = client.get("/catalog?gpu=l4&region=us-east&kind=vm").text
    assert len(_rows(one)) == 1
    assert re.search(r'id="catalog-count">1 offering row ·', one)
    many = client.get("/catalog").text
    assert re.search(r'id="catalog-count">\d+ offering rows ·', many)
    assert "1 rows" not in one
