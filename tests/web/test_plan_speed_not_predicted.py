"""A plan whose speed is not predicted says so and why on the page, as the CLI's "Speed: not predicted - ..." line
does (stop 54, branch qa11): a training plan with training tokens but no GPU, or a diffusion plan, showed no speed
section at all, so the training time asked for vanished without a word."""

from __future__ import annotations

import html
import re

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize(("lang", "words"), [("en", "Not predicted:"), ("ru", "Не предсказывается:")])
@pytest.mark.parametrize("body", [{"model": "llama-3.1-8b", "task": "train", "tokens": "1e10"},
                                  {"model": "flux.1-dev", "task": "diffusion", "gpu": "h100"}])
def test_the_reason_no_speed_is_predicted_reaches_the_page(client: TestClient, body: dict[str, str], lang: str,
                                                           words: str) -> None:
    api = client.post("/v1/plan", json={**body, **({"tokens": 10**10} if "tokens" in body else {})}).json()
    reasons = api["performance"]["assumptions"]
    assert reasons and api["performance"].get("train_tokens_per_s") is None
    page = client.get("/plan", params={**body, "lang": lang}).text
    section = re.search(r'id="speed-not-predicted">(.*?)</section>', page, re.S)
    assert section, "no speed section"
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", section.group(1))))
    assert words in text and "; ".join(reasons) in text, text


def test_a_predicted_speed_has_no_such_line(client: TestClient) -> None:
    page = client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100"}).text
    assert 'id="performance"' in page and "speed-not-predicted" not in page
