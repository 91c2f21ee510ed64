"""``engine: "sglang"`` in ``POST /v1/plan`` and ``/v1/recommend``: SGLang's own sizing, as the CLI's ``--engine sglang``
(tests/planner/test_engine_sglang.py), and a one-line 422 for what it cannot be."""

from __future__ import annotations

from typing import Any

from api.conftest import problem_of


def test_the_api_plans_for_sglang_and_refuses_what_it_cannot(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1, "prompt": 1000, "output_tokens": 200}
    ok = client.post("/v1/plan", json={**body, "engine": "sglang"})
    assert ok.status_code == 200 and ok.json()["workload"]["engine"] == "sglang"
    assert ok.json()["breakdown"]["kv_pool_tokens"] > 0
    assert client.post("/v1/plan", json={**body, "recipe": "sglang"}).json()["workload"]["engine"] == "sglang"
    refused = client.post("/v1/plan", json={**body, "engine": "vllm", "recipe": "sglang"})
    assert refused.status_code == 422 and "sized for vLLM" in problem_of(refused)["detail"]
    nvfp4 = client.post("/v1/plan", json={**body, "engine": "sglang", "kv_cache": "nvfp4"})
    assert nvfp4.status_code == 422 and "SGLang runs an NVFP4 KV cache on Blackwell" in problem_of(nvfp4)["detail"]
    recommend = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "engine": "sglang"})
    assert recommend.status_code == 200
