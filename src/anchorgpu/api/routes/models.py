"""``/v1/models``: the built-in model registry, and one model's shape as the planner reads it (public)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path

from anchorgpu.api.deps import SettingsDep
from anchorgpu.api.models_ref import load_public_model
from anchorgpu.api.schemas import ModelList, ModelOut, ModelSummary, problems
from anchorgpu.architectures import model_infos

router = APIRouter(prefix="/models", tags=["planner"])


def model_out(spec: Any) -> ModelOut:
    """The API view of a ``ModelSpec`` or ``DiffusionPipelineSpec``."""
    from anchorgpu.architectures import ModelSpec

    if isinstance(spec, ModelSpec):
        extra = {
            "model_type": spec.model_type, "num_layers": spec.num_layers, "hidden_size": spec.hidden_size,
            "num_attention_heads": spec.num_attention_heads, "num_kv_heads": spec.num_kv_heads, "head_dim": spec.head_dim,
            "vocab_size": spec.vocab_size, "attention_kind": str(spec.attention_kind), "is_moe": spec.is_moe,
            "sliding_window_layers": spec.sliding_window_layers,
        }
        return ModelOut(name=spec.name, kind="llm", family=spec.family, params_total=spec.params_total, params_active=spec.params_active,
                        kv_bytes_per_token=spec.kv_bytes_per_token(), max_context_tokens=spec.max_context_tokens, source=spec.source, **extra)
    components = [{"name": c.name, "params": c.params} for c in spec.components]
    return ModelOut(name=spec.name, kind="diffusion", family=spec.family, params_total=spec.params_total, params_active=None,
                    kv_bytes_per_token=None, max_context_tokens=None, source=spec.source, components=components,
                    default_resolution=list(spec.default_resolution), default_steps=spec.default_steps)


@router.get("", response_model=ModelList, summary="List registry models")
def list_models_route() -> ModelList:
    """Every model of the built-in registry (language models and diffusion pipelines)."""
    rows = [ModelSummary(name=i.name, kind=i.kind, display_name=i.display_name, family=i.family, hub_id=i.hub_id, aliases=list(i.aliases))
            for i in model_infos()]
    return ModelList(data=rows, count=len(rows))


@router.get("/{name:path}", response_model=ModelOut, summary="Get one model", responses=problems(404, 422))
def get_model_route(settings: SettingsDep, name: str = Path(max_length=200, description="Registry name, alias or Hub id 'org/name'")) -> ModelOut:
    """Parameters (total and active) and KV bytes per token of a registry model or a Hub id."""
    return model_out(load_public_model(name, offline=settings.offline))
