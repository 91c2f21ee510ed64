"""``kv_cache: nvfp4`` in ``POST /v1/plan`` and ``/v1/recommend``: planned where the serving engine runs it (vLLM 0.33.0's
FlashInfer backend on NVIDIA GPUs from Ampere on, TensorRT-LLM on Blackwell), a one-line 422 problem elsewhere
(tests/planner/test_nvfp4_kv_cache.py has the sources)."""

from __future__ import annotations

from typing import Any

from api.conftest import problem_of

LLAMA_KV_VALUES = 8192 * 32 * 2 * 8 * 128  # tokens x layers x K,V x KV heads x head dim (Llama 3.1 8B)


def test_the_api_plans_it_for_vllm_on_an_h100_and_refuses_it_for_tensorrt_llm(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "context": 8192, "kv_cache": "nvfp4"}
    for gpu in ("h100", "b200"):
        ok = client.post("/v1/plan", json={**body, "gpu": gpu})
        assert ok.status_code == 200, ok.text
        doc = ok.json()
        assert doc["precision"]["kv_cache"] == "nvfp4"
        assert doc["per_gpu"]["kv_cache_bytes"] == LLAMA_KV_VALUES * 9 // 16
    refused = client.post("/v1/plan", json={**body, "engine": "trtllm"})
    assert refused.status_code == 422 and refused.headers["content-type"].startswith("application/problem+json")
    detail = problem_of(refused)["detail"]
    assert detail.startswith("kv_cache nvfp4 with engine trtllm: TensorRT-LLM runs an NVFP4 KV cache on "
                             "Blackwell GPUs only") and "\n" not in detail
    amd = client.post("/v1/plan", json={**body, "gpu": "mi300x"})
    assert amd.status_code == 422 and "ROCm" in problem_of(amd)["detail"]
    sglang = client.post("/v1/plan", json={**body, "recipe": "sglang"})
    # --recipe sglang sizes for SGLang (the sglang merge), whose own rule refuses it off Blackwell
    assert sglang.status_code == 422 and ("kv_cache nvfp4 with SGLang, the engine of recipe sglang: SGLang runs an "
                                          "NVFP4 KV cache on Blackwell SM100 or SM120 only") in problem_of(sglang)["detail"]


def test_recommend_with_an_nvfp4_kv_cache_only_on_gpus_where_the_engine_lacks_it_is_a_problem(client: Any) -> None:
    body = {"model": "llama-3.1-8b", "context": 8192, "kv_cache": "nvfp4", "gpu": "h100", "engine": "trtllm"}
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 422 and "no offering considered has a GPU with NVFP4 hardware" in problem_of(r)["detail"]
    for ok_body in ({**body, "gpu": "b200"}, {**body, "engine": "vllm"}):
        ok = client.post("/v1/recommend", json=ok_body)
        assert ok.status_code == 200, ok.text
    amd = client.post("/v1/recommend", json={**body, "engine": "vllm", "gpu": "mi300x"})
    assert amd.status_code == 422 and "where vLLM or SGLang runs it" in problem_of(amd)["detail"]
