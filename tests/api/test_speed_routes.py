"""``POST /v1/plan`` with the speed model's options: chosen layouts, breakdowns, one-line refusals."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_the_api_refuses_the_same_input_with_problem_json(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "a100", "train_precision": "fp8"})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "seq": 4096,
                                      "global_batch": 1000})
    assert r.status_code == 422 and "--global-batch" in r.json()["detail"]


def test_the_api_plan_chooses_a_training_layout_and_returns_the_breakdown(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 64,
                                      "tokens": 10**11})
    body = r.json()
    assert r.status_code == 200 and body["fits"] is True
    assert set(body["performance"]["step_time_breakdown_s"]) >= {"compute", "pp_bubble", "dp_sync", "optimizer"}
