"""The planner page says, beside the output at saturation, how many sequences fit at their full length (a paged cache
runs its sequences at their average length; a plan at a named concurrency sizes each at its full prompt + output):
Mixtral-8x22B on 8 H200 as TP 1 x DP 8 x EP 8 saturates at 2,632 sequences and holds 2,368 at full length
(tests/speed/test_saturation_full_length.py finds both from plan itself), in English and in Russian."""

from __future__ import annotations

from fastapi.testclient import TestClient

QUERY = "/plan?model=mixtral-8x22b&gpu=h200&gpus=8&tp=1&dp=8&ep=8"


def test_the_page_gives_the_full_length_count(client: TestClient) -> None:
    page = client.get(QUERY)
    assert page.status_code == 200
    text = " ".join(page.text.split())
    assert "at 2,632 sequences (2,368 fit at their full length, the most a named concurrency plans)" in text


def test_the_russian_page_gives_it_too(client: TestClient) -> None:
    page = client.get(QUERY + "&lang=ru")
    assert page.status_code == 200
    text = " ".join(page.text.split()).replace("\xa0", " ").replace("&nbsp;", " ")
    assert "помещаются в полную длину" in text


def test_no_count_where_every_sequence_fits_at_full_length(client: TestClient) -> None:
    # Gemma 3 1B on an H100: the engine's 1,024-sequence cap, not its memory, bounds both counts
    page = client.get("/plan?model=gemma-3-1b&gpu=h100")
    assert page.status_code == 200
    assert "at their full length" not in page.text and "at its full length" not in page.text
