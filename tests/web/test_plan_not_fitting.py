"""A plan that does not fit shows no speed and says what would be needed (issue 14, item 1); each "What would fit"
row is a link that applies it; serving plans show no checkpoint write time."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

NOT_FITTING = "/plan?model=llama-3.1-70b&gpu=h100&gpus=1&context=8192"  # 70B bf16 weights alone are 131 GiB


def _links(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r'<a href="(/plan\?[^"]*)" class="apply-suggestion"', html)]


def test_a_plan_that_does_not_fit_shows_no_speed_and_names_what_would_be_needed(client: TestClient) -> None:
    page = client.get(NOT_FITTING).text
    assert 'id="verdict">Does not fit' in page
    # no speed for this plan; the formats table beside it gives speeds only to formats that fit (tests/web/test_plan_views.py)
    own = re.sub(r'<section class="card" id="formats">.*?</section>', "", page, flags=re.S)
    assert 'id="performance"' not in own and "tokens/s" not in own
    absent = re.search(r'id="performance-absent">(.*?)</section>', page, re.S)
    assert absent and "Not predicted" in absent.group(1)
    needed = re.search(r'id="needed-change"><code>([^<]+)</code>', absent.group(1))
    assert needed and "weights" not in needed.group(1)  # the example keeps the planned precision: gpus 4 tp 4
    assert "outputs change" in page  # the weights int4-awq row says so


def test_every_what_would_fit_row_links_to_a_plan_that_fits_with_its_speed(client: TestClient) -> None:
    links = _links(client.get(NOT_FITTING).text)
    assert len(links) >= 2
    for link in links:
        page = client.get(link)
        assert page.status_code == 200, link
        assert 'id="verdict">Fits' in page.text, link
        assert 'id="performance"' in page.text and "tokens/s" in page.text
    training = _links(client.get("/plan?model=llama-3.1-70b&gpu=h100&task=train&gpus=1").text)
    assert training and all('id="verdict">Fits' in client.get(link).text for link in training)


def test_serving_plans_show_no_checkpoint_write_time_and_training_plans_do(client: TestClient) -> None:
    serving = client.get("/plan?model=llama-3.1-8b&gpu=h100&gpus=1&context=8192").text
    assert 'id="performance"' in serving and "Checkpoint write" not in serving and "Checkpoint size" not in serving
    training = client.get("/plan?model=llama-3.1-8b&gpu=h100&task=train&gpus=8&tokens=1e9").text
    assert "Checkpoint size" in training
