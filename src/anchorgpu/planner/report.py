"""``plan_to_json``: a :class:`Plan` as the DESIGN.md section 5 JSON contract. Pure; stdlib only.

Stable keys: ``model``, ``gpu``, ``gpus``, ``per_gpu``, ``fits``, ``max_concurrency``, ``warnings``;
added: ``headroom_bytes``, ``budget_bytes``, ``max_context_tokens``, ``checkpoint_bytes``, ``layout``,
``workload``, ``precision``, ``assumptions``, ``checks``, ``suggestions``, ``breakdown``, and whatever
other planner modules attach through ``Plan.extra`` (e.g. ``performance``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.planner.inputs import KV_CACHE_DTYPES
from anchorgpu.planner.plan import Plan

__all__ = ["model_to_json", "plan_to_json"]


def model_to_json(model: ModelSpec | DiffusionPipelineSpec, *, kv_cache: str = "bf16") -> dict[str, Any]:
    """The ``model`` section from the record alone, with the key names of ``anchorgpu model --json``
    (``anchorgpu.architectures.model_to_json`` adds registry details; faces pass that one in when they have it)."""
    if isinstance(model, DiffusionPipelineSpec):
        return {
            "name": model.name, "kind": "diffusion", "model_type": "diffusion_pipeline", "family": model.family,
            "params_total": model.params_total, "params_active": model.params_total, "kv_bytes_per_token": None,
            "components": [{"name": c.name, "role": c.role, "params": c.params} for c in model.components],
        }
    return {
        "name": model.name, "kind": "language", "model_type": model.model_type, "family": model.family,
        "params_total": model.params_total, "params_active": model.params_active,
        "kv_bytes_per_token": model.kv_bytes_per_token(KV_CACHE_DTYPES.get(kv_cache, 2)), "kv_cache_dtype": kv_cache,
        "layers": model.num_layers, "hidden_size": model.hidden_size, "intermediate_size": model.intermediate_size,
        "heads": model.num_attention_heads, "kv_heads": model.num_kv_heads, "head_dim": model.head_dim,
        "vocab_size": model.vocab_size, "context_length": model.max_context_tokens, "attention": model.attention_kind,
        "experts": None if model.moe is None else {
            "num_experts": model.moe.num_experts, "experts_per_token": model.moe.experts_per_token,
            "shared": model.moe.num_shared_experts, "expert_intermediate_size": model.moe.expert_intermediate_size,
            "moe_layers": model.moe.num_moe_layers},
        "tie_word_embeddings": model.tie_word_embeddings, "gated_mlp": model.gated_mlp,
    }


def _plain(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


def plan_to_json(plan: Plan, *, model_json: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Plain JSON types for one plan (the ``anchorgpu plan --json`` and ``POST /v1/plan`` body).

    ``model_json`` replaces the ``model`` section (faces pass ``anchorgpu.architectures.model_to_json``'s
    richer form, so ``plan --json`` carries exactly what ``model --json`` shows).
    """
    per_gpu = {f.name: getattr(plan.per_gpu, f.name) for f in dataclasses.fields(plan.per_gpu)}
    per_gpu["total_bytes"] = plan.per_gpu.total_bytes
    layout = {f.name: getattr(plan.layout, f.name) for f in dataclasses.fields(plan.layout)}
    workload = {f.name: _plain(getattr(plan.workload, f.name)) for f in dataclasses.fields(plan.workload)}
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
        "precision": {"weights": plan.precision.weights, "kv_cache": plan.precision.kv_cache},
        "assumptions": list(plan.assumptions),
        "checks": list(plan.checks),
        "suggestions": [dataclasses.asdict(s) for s in plan.suggestions],
        "breakdown": dict(plan.breakdown),
    }
    for key, value in plan.extra.items():
        out.setdefault(key, value)
    return out
