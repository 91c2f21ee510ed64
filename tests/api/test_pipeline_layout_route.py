"""``pipeline_layout`` on ``POST /v1/plan``: Megatron-Core's layout string plans an uneven split; a malformed one is a
one-line 422 problem+json naming it (tests/planner/test_pipeline_layout.py covers the parser)."""

from __future__ import annotations

from fastapi.testclient import TestClient

BASE = {"model": "deepseek-v3", "task": "train", "gpu": "gb200", "gpus": 256, "tp": 1, "pp": 8, "ep": 32, "zero": 1,
        "micro_batch": 1, "recompute": "none", "seq": 4096}


def test_the_api_plans_with_a_pipeline_layout(client: TestClient) -> None:
    r = client.post("/v1/plan", json={**BASE, "pipeline_layout": "Et|(tt|)*30L"})
    body = r.json()
    assert r.status_code == 200, body
    assert body["layout"]["pipeline_layout"] == "Et|(tt|)*30L" and body["layout"]["virtual_stages"] == 4


def test_the_api_refuses_a_bad_pipeline_layout_with_problem_json(client: TestClient) -> None:
    r = client.post("/v1/plan", json={**BASE, "pipeline_layout": "Et|(tt|)*30Q"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert "pipeline_layout 'Et|(tt|)*30Q': unknown symbol 'Q'" in r.json()["detail"]
