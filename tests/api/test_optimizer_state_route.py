"""``optimizer_state`` on ``POST /v1/plan``: AdamW's state in the precision asked for (bytes a parameter: a bf16
moment is 2 bytes, Megatron-Core's ``--exp-avg-dtype bf16``), and a bad value or a contradictory combination refused as
HTTP 422 problem+json in one line."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from anchorgpu.architectures import ModelSpec, load_model

MODEL = "llama-3.2-1b"
BF16_BYTES = 2


def _params() -> int:
    spec = load_model(MODEL)
    assert isinstance(spec, ModelSpec)
    return spec.params_total


def test_the_api_plans_the_state_and_refuses_a_bad_one(client: TestClient, problem: Any) -> None:
    body = {"model": MODEL, "task": "train", "gpu": "h100", "gpus": 1, "zero": 0, "seq": 2048, "micro_batch": 1,
            "recompute": "none"}
    ok = client.post("/v1/plan", json={**body, "optimizer_state": "bf16-moments"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["breakdown"]["optimizer_moments_bytes"] == 2 * BF16_BYTES * _params()
    bad = client.post("/v1/plan", json={**body, "optimizer_state": "fp16"})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    refused = client.post("/v1/plan", json={**body, "optimizer_state": "bf16", "train_precision": "bf16-true"})
    assert refused.status_code == 422
    detail = problem(refused)["detail"]
    assert "bf16-true already keeps no master copy" in detail and "\n" not in detail


def test_recommend_refuses_a_bad_state_as_422(client: TestClient, problem: Any) -> None:
    response = client.post("/v1/recommend", json={"model": MODEL, "task": "train", "optimizer_state": "fp8"})
    assert response.status_code == 422
    problem(response)
