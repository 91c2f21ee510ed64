"""The recommend page asks what ``anchorgpu recommend`` asks for training: a global batch (``4M``, ``64k`` or an
integer, as ``--global-batch``) and the activation recompute, and answers as ``POST /v1/recommend`` does.

Before: the form had neither field and the page dropped both from its URL in silence, so
``/recommend?...&recompute=full`` showed the rows of the default recompute.
"""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

QUERY = "/recommend?model=llama-3.2-1b&task=train&gpu=h100-sxm&max_servers=1&top=2&train_tokens=1e9"
BODY: dict[str, Any] = {"model": "llama-3.2-1b", "task": "train", "gpu": "h100-sxm", "max_servers": 1, "top": 2,
                        "train_tokens": 10**9}


def _rates(html: str) -> list[str]:
    """The train tokens/s of each row (the sixth cell, above its band)."""
    rows = re.findall(r'<tr id="rec-\d+">(.*?)</tr>', html, re.S)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)[5].split("<br>")[0].strip() for row in rows]


def _api_rates(client: TestClient, **fields: Any) -> list[str]:
    body = client.post("/v1/recommend", json={**BODY, **fields}).json()
    return [f"{r['train_tokens_per_s']:,.0f}" for r in body["results"]]


def test_the_form_has_the_fields(client: TestClient) -> None:
    page = client.get("/recommend").text
    assert 'name="global_batch"' in page and 'name="recompute"' in page
    assert "Глобальный батч" in client.get("/recommend?lang=ru").text


def test_a_global_batch_in_the_clis_spelling_reaches_the_sweep(client: TestClient) -> None:
    page = client.get(QUERY + "&global_batch=64k")
    assert page.status_code == 200
    assert _rates(page.text) == _api_rates(client, global_batch=65_536) != _api_rates(client)
    assert 'name="global_batch" value="65536"' in page.text


def test_the_recompute_chosen_is_planned_and_kept_selected(client: TestClient) -> None:
    page = client.get(QUERY + "&recompute=full")
    assert page.status_code == 200
    assert _rates(page.text) == _api_rates(client, recompute="full") != _api_rates(client)
    assert "rc:full" in page.text and re.search(r'<option value="full"\s+selected', page.text)


def test_a_bad_global_batch_is_one_line_naming_it(client: TestClient) -> None:
    page = client.get(QUERY + "&global_batch=lots")
    assert page.status_code == 422
    assert re.search(r'id="recommend-error"><span[^>]*>“Global batch \(tokens\)”: ', page.text)  # the form's label
    serving = client.get("/recommend?model=llama-3.2-1b&global_batch=4M")
    assert serving.status_code == 422 and "“Global batch (tokens)” 4,194,304 applies to training" in serving.text
