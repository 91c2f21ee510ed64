"""A stated global batch the run cannot take is refused with the same line on every face: ``POST /v1/plan`` and
``POST /v1/recommend`` (422 problem+json, naming the request's field global_batch where the CLI names its flag), the
plan and recommend pages (naming their form's label for it, stop 55 qa13), as the CLI (tests/planner/test_global_batch_exact.py).
Before, the API and the pages planned 100,000 tokens as 131,072 without a word outside the speed section's JSON."""

from __future__ import annotations

import html
import re

from fastapi.testclient import TestClient

from api_fields import as_api

NOT_WHOLE = ("--global-batch 100,000 tokens is not a whole number of 4,096-token sequences (24.41 of them); the "
             "nearest whole batches are 98,304 tokens (24 sequences) and 102,400 tokens (25)")
NOT_SPLIT = ("--global-batch 98,304 tokens (24 sequences of 4,096) does not split into whole micro-batches over DP 16 x "
             "micro-batch 1 (16 sequences, 65,536 tokens a round); the nearest batches that do are 65,536 and 131,072 "
             "tokens")
PLAN = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "seq": 4096}
PAGE_LABEL = "“Global batch (tokens)”"
"""How the pages name the field: by the form's label (web.form_fields.PLAN_LABELS)."""
EXPLICIT = {"gpus": 16, "tp": 1, "pp": 1, "dp": 16, "zero": 1, "micro_batch": 1, "recompute": "full"}


def _page_error(text: str, face: str) -> str:
    found = re.search(rf'id="{face}-error"[^>]*>(?:<span[^>]*>)?([^<]*)<', text)
    assert found, text[-800:]
    return html.unescape(found.group(1)).strip()


def test_the_api_and_the_pages_refuse_a_batch_of_part_sequences_with_the_clis_line(client: TestClient) -> None:
    for route, body in (("/v1/plan", {**PLAN, "gpus": 8, "tp": 1, "pp": 1}),
                        ("/v1/recommend", {"model": "llama-3.1-8b", "task": "train", "seq": 4096})):
        r = client.post(route, json={**body, "global_batch": 100_000})
        assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json"), r.text
        assert r.json()["detail"] == as_api(NOT_WHOLE, route) == NOT_WHOLE.replace("--global-batch", "global_batch"), route
    page = client.get("/plan", params={**PLAN, "gpus": 8, "tp": 1, "pp": 1, "global_batch": "100000"})
    assert page.status_code == 422 and _page_error(page.text, "plan") == NOT_WHOLE.replace("--global-batch", PAGE_LABEL)
    page = client.get("/recommend", params={"model": "llama-3.1-8b", "task": "train", "seq": "4096",
                                            "global_batch": "100000"})
    assert page.status_code == 422 and _page_error(page.text, "recommend") == NOT_WHOLE.replace("--global-batch", PAGE_LABEL)


def test_an_explicit_layout_that_does_not_split_the_batch_is_the_same_line_on_the_api_and_the_page(
        client: TestClient) -> None:
    r = client.post("/v1/plan", json={**PLAN, **EXPLICIT, "global_batch": 98_304})
    assert r.status_code == 422 and r.json()["detail"] == as_api(NOT_SPLIT)
    page = client.get("/plan", params={**PLAN, **EXPLICIT, "global_batch": "96k"})
    assert page.status_code == 422 and _page_error(page.text, "plan") == NOT_SPLIT.replace("--global-batch", PAGE_LABEL)
