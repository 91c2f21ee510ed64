"""``kv_cache: nvfp4`` in ``POST /v1/plan``: planned on Blackwell, a one-line 422 problem on a GPU without NVFP4
hardware (tests/planner/test_nvfp4_kv_cache.py has the sources of the bytes)."""

from __future__ import annotations

from typing import Any

from api.conftest import problem_of

LLAMA_KV_VALUES = 8192 * 32 * 2 * 8 * 128  # tokens x layers x K,V x KV heads x head dim (Llama 3.1 8B)


def test_the_api_refuses_it_with_a_422_problem(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "context": 8192, "kv_cache": "nvfp4"}
    refused = client.post("/v1/plan", json=body)
    assert refused.status_code == 422 and "has no NVFP4 hardware" in problem_of(refused)["detail"]
    ok = client.post("/v1/plan", json={**body, "gpu": "b200"})
    assert ok.status_code == 200, ok.text
    doc = ok.json()
    assert doc["precision"]["kv_cache"] == "nvfp4" and doc["per_gpu"]["kv_cache_bytes"] == LLAMA_KV_VALUES * 9 // 16


def test_recommend_with_an_nvfp4_kv_cache_only_on_gpus_without_it_is_a_problem(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "context": 8192, "kv_cache": "nvfp4", "gpu": "h100"}
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 422 and "no offering considered has a GPU with NVFP4 hardware" in problem_of(r)["detail"]
    ok = client.post("/v1/recommend", json={**body, "gpu": "b200"})
    assert ok.status_code == 200, ok.text
