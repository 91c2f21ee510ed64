"""The API takes the training stack a speed is for, as the CLI's --train-stack does (tests/speed/test_train_stack.py)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_plan_and_recommend_take_the_training_stack(client: TestClient) -> None:
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8}
    speeds = {}
    for stack in ("megatron", "pytorch"):
        r = client.post("/v1/plan", json={**body, "train_stack": stack})
        assert r.status_code == 200, r.text
        speeds[stack] = r.json()["performance"]["train_tokens_per_s"]
    assert speeds["pytorch"] < speeds["megatron"]
    bad = client.post("/v1/plan", json={**body, "train_stack": "jax"})
    assert bad.status_code == 422 and bad.headers["content-type"].startswith("application/problem+json")
    rec = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "train_stack": "pytorch",
                                             "train_tokens": 10_000_000_000, "gpu": "h100"})
    assert rec.status_code == 200, rec.text
    assert rec.json()["workload"]["train_stack"] == "pytorch"
