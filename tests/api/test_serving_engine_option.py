"""``engine`` in ``POST /v1/plan`` and ``/v1/recommend``: the same TensorRT-LLM sizing as the CLI's ``--engine``
(tests/planner/test_engine_trtllm.py), and a one-line 422 for what it cannot be."""

from __future__ import annotations

from typing import Any

from api.conftest import problem_of


def test_a_plan_sized_for_tensorrt_llm(client: Any) -> None:
    body = {"model": "qwen3-32b", "gpu": "a100-80gb-sxm", "gpus": 1, "prompt": 32000, "output_tokens": 79}
    vllm = client.post("/v1/plan", json=body).json()
    trt = client.post("/v1/plan", json={**body, "engine": "trtllm"}).json()
    assert trt["breakdown"]["kv_cache_capacity_bytes"] > vllm["breakdown"]["kv_cache_capacity_bytes"]
    assert trt["breakdown"]["sampler_logits_bytes"] == 0
    assert trt["performance"]["kv_reservation"] == "full" and vllm["performance"]["kv_reservation"] == "average"
    assert any(a.startswith("Serving engine sized like TensorRT-LLM") for a in trt["assumptions"])


def test_what_the_engine_cannot_be_is_a_problem(client: Any) -> None:
    unknown = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "engine": "lmdeploy"})
    assert unknown.status_code == 422
    problem_of(unknown)
    training = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train",
                                             "engine": "trtllm"})
    assert training.status_code == 422 and "task train serves no requests" in problem_of(training)["detail"]
    diffusion = client.post("/v1/recommend", json={"model": "sdxl-base-1.0", "engine": "trtllm"})
    assert diffusion.status_code == 422 and "task diffusion generates images" in problem_of(diffusion)["detail"]
    launch = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "engine": "trtllm", "recipe": "vllm"})
    assert launch.status_code == 422 and "sized for TensorRT-LLM" in problem_of(launch)["detail"]


def test_a_tensorrt_llm_launch_sizes_the_plan_for_it_and_refuses_a_vllm_sized_one(client: Any) -> None:
    """A TensorRT-LLM launch from a plan sized for vLLM carried vLLM's numbers (its gpu_memory_utilization as
    trtllm-serve's free_gpu_memory_fraction, its sequence cap): refused, as a vLLM launch of a TensorRT-LLM plan is."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "recipe": "trtllm"}
    assert client.post("/v1/plan", json=body).json()["workload"]["engine"] == "trtllm"
    refused = client.post("/v1/plan", json={**body, "engine": "vllm"})
    assert refused.status_code == 422 and "sized for vLLM (engine vllm)" in problem_of(refused)["detail"]
