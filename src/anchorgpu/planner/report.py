"""``plan_to_json``: a :class:`Plan` as the DESIGN.md section 5 JSON contract. Pure; stdlib only.

Stable keys: ``model``, ``gpu``, ``gpus``, ``per_gpu``, ``fits``, ``max_concurrency``, ``warnings``;
added: ``headroom_bytes``, ``budget_bytes``, ``max_context_tokens``, ``checkpoint_bytes``, ``layout``,
``workload``, ``precision``, ``assumptions``, ``checks``, ``suggestions``, ``breakdown``, and whatever
other planner modules attach through ``Plan.extra`` (e.g. ``performance``). ``workload`` keeps every field of
:class:`~anchorgpu.planner.inputs.Workload` as a key, ``null`` where the plan's task has no use for it (an inference
plan names no optimizer or LoRA rank, a training plan no serving engine). A serving plan's ``prompt_tokens`` is the
prompt a request holds (a vision model's text and image tokens, an encoder-decoder's decoder prompt), as
``performance.prompt_tokens``: the vision tower's or encoder's work the plan times as prompt tokens of the same cost is
``breakdown.encoder_prefill_equivalent_tokens``, not part of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from anchorgpu.architectures.serialize import model_to_json as architectures_model_to_json
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.planner.held_weights import held_weights
from anchorgpu.planner.plan import Plan

__all__ = ["model_to_json", "plan_to_json"]

_TRAINING = ("train", "lora", "qlora")
_FIELD_TASKS: dict[str, tuple[str, ...]] = {  # the Workload fields one kind of task reads; the rest read by every task
    **dict.fromkeys(("engine", "engine_source", "context_tokens", "concurrency", "gpu_memory_utilization",
                     "max_num_batched_tokens", "max_num_seqs", "block_size_tokens", "attention_dp_kv",
                     "attention_dp_balance", "prompt_tokens",
                     "output_tokens",
                     "images_per_request", "image_resolution"), ("inference",)),
    **dict.fromkeys(("micro_batch", "global_batch_tokens", "seq_tokens", "recompute", "offload_activation_layers",
                     "optimizer", "train_stack", "cross_entropy", "train_precision", "optimizer_state",
                     "grad_bytes_per_value", "network_gbit_per_s_per_gpu"), _TRAINING),
    **dict.fromkeys(("lora_rank", "lora_targets"), ("lora", "qlora")),
    **dict.fromkeys(("resolution", "images", "vae_tiling"), ("diffusion",)),
}


def model_to_json(model: ModelSpec | DiffusionPipelineSpec, *, kv_cache: str = "bf16") -> dict[str, Any]:
    """The ``model`` section: exactly ``anchorgpu model --json`` (DESIGN.md section 5, ``"model": {...as above}``).

    One function serves both faces: this delegates to :func:`anchorgpu.architectures.model_to_json`
    (pure, stdlib only), so ``plan_to_json`` gives the same keys (``layers``, ``heads``, ``breakdown``, …)
    whichever caller builds it.
    """
    return architectures_model_to_json(model, kv_cache=kv_cache)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def plan_to_json(plan: Plan, *, model_json: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Plain JSON types for one plan (the ``anchorgpu plan --json`` and ``POST /v1/plan`` body).

    The ``model`` section is :func:`model_to_json` (the same document as ``anchorgpu model --json``);
    ``model_json`` may replace it (kept for callers that already built that document).
    """
    per_gpu = {f.name: getattr(plan.per_gpu, f.name) for f in dataclasses.fields(plan.per_gpu)}
    per_gpu["total_bytes"] = plan.per_gpu.total_bytes
    layout = {f.name: getattr(plan.layout, f.name) for f in dataclasses.fields(plan.layout)}
    stated = layout.pop("pipeline_layout")
    if stated is not None:  # an explicit pipeline layout: its string, as given (absent when the split is even)
        layout["pipeline_layout"] = stated.text
    task = plan.workload.task
    workload = {f.name: _plain(getattr(plan.workload, f.name)) if task in _FIELD_TASKS.get(f.name, (task,)) else None
                for f in dataclasses.fields(plan.workload)}
    stand_in = plan.breakdown.get("encoder_prefill_equivalent_tokens") if task == "inference" else None
    if stand_in and workload["prompt_tokens"] is not None:
        # the plan times the vision tower's or encoder's work as prompt tokens the sequence never holds; the JSON
        # gives the prompt the request holds (as ``performance`` does), the stand-in stays under its breakdown key
        workload["prompt_tokens"] -= int(stand_in)
    out: dict[str, Any] = {
        "model": dict(model_json) if model_json is not None else model_to_json(plan.model,
                                                                               kv_cache=plan.precision.kv_cache),
        "gpu": None if plan.gpu is None else {"name": plan.gpu.name, "memory_bytes": plan.gpu.memory_bytes,
                                              "display_name": plan.gpu.display_name},
        "gpus": plan.layout.gpus,
        "per_gpu": per_gpu,
        "fits": plan.fits,
        "max_concurrency": plan.max_concurrency,
        "warnings": [{"code": w.code, "message": w.message, "concept": w.concept} for w in plan.warnings],
        "headroom_bytes": plan.headroom_bytes,
        "budget_bytes": plan.budget_bytes,
        "max_context_tokens": plan.max_context_tokens,
        "checkpoint_bytes": plan.checkpoint_bytes,
        "layout": layout,
        "workload": workload,
        "precision": {"weights": plan.precision.weights, "kv_cache": plan.precision.kv_cache,
                      "held_weights": held_weights(str(plan.precision.weights), task=plan.workload.task,
                                                   train_precision=plan.workload.train_precision)},
        "assumptions": list(plan.assumptions),
        "checks": list(plan.checks),
        "suggestions": [dataclasses.asdict(s) for s in plan.suggestions],
        "breakdown": dict(plan.breakdown),
    }
    for key, value in plan.extra.items():
        out.setdefault(key, value)
    return out
