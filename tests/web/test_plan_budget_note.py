"""The planner page's budget line says how each serving engine's budget is made, as ``anchorgpu plan``'s verdict does.
It said "(GPU memory × utilization)" for every engine: TensorRT-LLM's budget for Qwen3-32B on an A100 is 77.1 GiB,
above 90% of the 79.3 GiB (its profiling peak plus 90% of what that peak leaves free), and SGLang's is the activations
and non-torch memory plus mem_fraction_static of the memory free at start. Figures from ``POST /v1/plan``."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

TRTLLM = {"model": "qwen3-32b", "gpu": "a100-80gb-sxm", "prompt": 16000, "output_tokens": 100, "concurrency": 3,
          "engine": "trtllm"}
SGLANG = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "prompt": 1024, "output_tokens": 1024, "concurrency": 64,
          "engine": "sglang"}
VLLM = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "concurrency": 64}


def _note(client: TestClient, body: dict[str, object], lang: str = "en") -> str:
    page = client.get("/plan?" + "&".join(f"{k}={v}" for k, v in body.items()) + f"&lang={lang}").text
    found = re.search(r'<p class="muted small" id="budget-note">(.*?)</p>', page, re.S)
    assert found is not None
    return found.group(1)


@pytest.mark.parametrize(("body", "words"), [
    (TRTLLM, "Compared with TensorRT-LLM's budget of {budget}: its profiling peak plus 90.0% of the memory that peak leaves free."),
    (SGLANG, "Compared with SGLang's budget of {budget}: the activations and non-torch memory plus mem_fraction_static {fraction} of the memory free at start."),
    (VLLM, "Compared with the serving engine's budget of {budget} (GPU memory × utilization)."),
], ids=["trtllm", "sglang", "vllm"])
def test_the_budget_line_names_the_engine_rule(client: TestClient, body: dict[str, object], words: str) -> None:
    plan = client.post("/v1/plan", json=body).json()
    budget = f"{plan['budget_bytes'] / 2**30:.1f} GiB"
    fraction = f"{plan['workload']['gpu_memory_utilization']:.2f}"
    assert _note(client, body).replace("&#39;", "'") == words.format(budget=budget, fraction=fraction)


def test_the_russian_page_says_it_too(client: TestClient) -> None:
    assert _note(client, SGLANG, "ru").startswith("Сравнивается с бюджетом SGLang ")
    assert _note(client, TRTLLM, "ru").startswith("Сравнивается с бюджетом TensorRT-LLM ")
