"""``virtual_stages`` on ``POST /v1/plan`` where Megatron-Core would not interleave (fewer micro-batches a step than
pipeline stages): a one-line 422 problem+json naming the values (tests/speed/test_interleaved_few_microbatches.py)."""

from __future__ import annotations

from fastapi.testclient import TestClient

BASE = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 64, "tp": 8, "pp": 8, "seq": 4096,
        "global_batch": 4096}


def test_the_api_refuses_interleaving_with_one_micro_batch(client: TestClient) -> None:
    r = client.post("/v1/plan", json={**BASE, "virtual_stages": 4})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    detail = r.json()["detail"]
    assert "\n" not in detail
    assert detail.startswith("virtual_stages 4 with pp 8: Megatron-Core interleaves only when the micro-batches a "
                             "step are a multiple of the 8 pipeline stages, and global_batch 4,096 tokens")


def test_the_api_plans_the_same_layout_without_interleaving(client: TestClient) -> None:
    r = client.post("/v1/plan", json={**BASE, "virtual_stages": 1})
    assert r.status_code == 200, r.json()
