"""``offload_activation_layers`` on ``POST /v1/plan``: Megatron-Core's CPU activation offloading, planned or refused
in one line (issue 11's bad input: HTTP 422 problem+json, nothing planned)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from cli_runner import run

# Megatron-Bridge's Llama 3 70B FP8 recipe on GB200 (LLAMA3_70B_GB200_FP8_CS_BASE_CONFIG, scripts/performance/configs/
# llama/llama3_workload_base_configs.py): FSDP on 64 GPUs, two 8,192-token sequences a micro-batch, 40 layers offloaded,
# Transformer Engine's fused loss (scripts/performance/utils/overrides.py: cross_entropy_fusion_impl = "te")
# (TP 1 and PP 1 as the recipe runs them: with only FSDP given the chooser would also search TP and PP)
RECIPE = {"model": "llama-3.1-70b", "task": "train", "gpu": "gb200", "gpus": 64, "tp": 1, "pp": 1, "fsdp": True,
          "micro_batch": 2,
          "seq": 8192, "global_batch": 2097152, "train_precision": "fp8", "recompute": "none", "cross_entropy": "te"}


def test_the_recipe_fits_with_its_offload_and_not_without(client: TestClient) -> None:
    offloaded = client.post("/v1/plan", json={**RECIPE, "offload_activation_layers": 40})
    assert offloaded.status_code == 200, offloaded.text
    doc = offloaded.json()
    assert doc["fits"] and doc["breakdown"]["offloaded_activations_bytes"] > 0
    assert "activation_offload" in doc["performance"]["step_time_breakdown_s"]
    without = client.post("/v1/plan", json=RECIPE).json()
    assert not without["fits"]


def test_an_offload_with_pipeline_stages_is_422_in_one_line(client: TestClient, problem: Any) -> None:
    response = client.post("/v1/plan", json={**RECIPE, "fsdp": False, "pp": 2, "offload_activation_layers": 40})
    assert response.status_code == 422
    detail = problem(response)["detail"]
    assert "only without pipeline stages" in detail and "\n" not in detail


def test_the_cli_refuses_an_offload_with_recompute_with_exit_2(capsys: Any) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-70b", "--task", "train", "--gpu", "gb200", "--gpus", "64",
                         "--offload-activations", "40", "--recompute", "selective")
    assert code == 2 and not out
    assert err.strip().count("\n") == 0 and "only when none are recomputed" in err
