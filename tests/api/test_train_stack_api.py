"""The API takes the training stack a speed is for, as the CLI's --train-stack does (tests/speed/test_train_stack.py)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from anchorgpu.planner.memory.loss import loss_memory


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


def test_the_stack_sets_what_a_plan_holds_too(client: TestClient) -> None:
    """torchtitan's 8-GPU Llama 3.1 8B run as its table gives it (FSDP, two 8,192-token sequences a GPU, selective
    checkpointing; pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Table 1: 77.0 GiB measured): as a
    PyTorch-native plan it fits an 80 GB H100 with torchtitan's op-level policy and an fp32 loss; as Megatron-Core's
    selective recompute with a fused loss it would not."""
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1, "zero": 3, "micro_batch": 2,
            "seq": 8192, "recompute": "selective", "global_batch": 131072}
    plans = {}
    for stack in ("megatron", "pytorch"):
        r = client.post("/v1/plan", json={**body, "train_stack": stack})
        assert r.status_code == 200, r.text
        plans[stack] = r.json()
    assert plans["pytorch"]["fits"] is True and plans["megatron"]["fits"] is False
    gib = plans["pytorch"]["per_gpu"]["total_bytes"] / 2**30
    assert 0.91 <= gib / 77.0 <= 1.03
    assert any("op-level policy" in line for line in plans["pytorch"]["assumptions"])
    eager, unfused = loss_memory("eager").bytes_per_logit, loss_memory("unfused").bytes_per_logit
    assert plans["pytorch"]["breakdown"]["logits_bytes"] * unfused == eager * plans["megatron"]["breakdown"]["logits_bytes"]
