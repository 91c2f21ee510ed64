"""The plan JSON's ``workload`` keeps every Workload field as a key (DESIGN.md section 5: stable keys) and gives
``null`` for the fields the plan's task has no use for: an inference plan named an AdamW optimizer, a Megatron training
stack, mixed training precision and a LoRA rank of 16, a training plan a vLLM engine."""

from __future__ import annotations

import dataclasses

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload, plan, plan_to_json

TRAINING_ONLY = ("micro_batch", "global_batch_tokens", "seq_tokens", "recompute", "offload_activation_layers",
                 "optimizer", "train_stack", "cross_entropy", "train_precision", "optimizer_state",
                 "grad_bytes_per_value", "lora_rank", "lora_targets")
SERVING_ONLY = ("engine", "engine_source", "context_tokens", "concurrency", "gpu_memory_utilization",
                "max_num_batched_tokens", "max_num_seqs", "block_size_tokens")


def _workload(task: str) -> dict[str, object]:
    return plan_to_json(plan(load_model("llama-3.1-8b"), Workload(task=task), gpu=get_gpu("h100")))["workload"]


def test_every_workload_field_stays_a_key() -> None:
    names = {f.name for f in dataclasses.fields(Workload)}
    assert set(_workload("inference")) == names == set(_workload("lora"))


def test_an_inference_plan_names_no_training_option() -> None:
    w = _workload("inference")
    assert all(w[name] is None for name in TRAINING_ONLY), {n: w[n] for n in TRAINING_ONLY if w[n] is not None}
    assert w["engine"] == "vllm" and w["context_tokens"] == 131072 and w["gpu_memory_utilization"] == 0.9


def test_a_training_plan_names_no_serving_engine_and_full_training_no_lora_rank() -> None:
    lora, train = _workload("lora"), _workload("train")
    assert all(lora[name] is None and train[name] is None for name in SERVING_ONLY)
    assert lora["lora_rank"] == 16 and lora["train_precision"] == "mixed" and lora["optimizer"] == "adamw"
    assert train["lora_rank"] is None and train["lora_targets"] is None
