"""POST /v1/plan with ``recipe``: the launch comes back under ``recipe``; one the plan cannot be expressed in is a
422 problem+json with the one-line reason (issue 15)."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_plan_returns_the_recipe(client: TestClient) -> None:
    ok = client.post("/v1/plan", json={"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8,
                                       "zero": 1, "recipe": "accelerate"})
    assert ok.status_code == 200, ok.text
    body = ok.json()
    recipe = body["recipe"]
    assert recipe["kind"] == "accelerate" and recipe["files"][0]["name"] == "accelerate_config.yaml"
    assert "distributed_type: DEEPSPEED" in recipe["files"][0]["text"]
    assert f"num_processes: {body['layout']['gpus']}" in recipe["files"][0]["text"]
    plain = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100"})
    assert "recipe" not in plain.json()


def test_a_recipe_that_cannot_express_the_plan_is_a_422(client: TestClient) -> None:
    fp8 = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "a100-80gb-sxm", "kv_cache": "fp8",
                                        "recipe": "vllm"})
    assert fp8.status_code == 422 and fp8.headers["content-type"].startswith("application/problem+json")
    assert "no FP8 hardware" in fp8.json()["detail"]
    unknown = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "recipe": "helm"})
    assert unknown.status_code == 422 and unknown.headers["content-type"].startswith("application/problem+json")
