"""``/v1/models``: the built-in model registry, and one model's shape as the planner reads it (public)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path
from pydantic import TypeAdapter

from anchorgpu.api.deps import SettingsDep
from anchorgpu.api.models_ref import load_public_model, server_offline
from anchorgpu.api.schemas import DiffusionPipelineOut, LanguageModelOut, ModelList, ModelOut, ModelSummary, problems
from anchorgpu.architectures import model_infos

router = APIRouter(prefix="/models", tags=["planner"])


_MODEL_OUT: TypeAdapter[LanguageModelOut | DiffusionPipelineOut] = TypeAdapter(ModelOut)


def model_out(spec: Any) -> LanguageModelOut | DiffusionPipelineOut:
    """The API view of a ``ModelSpec`` or ``DiffusionPipelineSpec`` (``anchorgpu model --json``)."""
    from anchorgpu.architectures import model_to_json

    return _MODEL_OUT.validate_python(model_to_json(spec))


@router.get("", response_model=ModelList, summary="List registry models")
def list_models_route() -> ModelList:
    """Every model of the built-in registry (language models and diffusion pipelines)."""
    rows = [ModelSummary(name=i.name, kind=i.kind, display_name=i.display_name, family=i.family, hub_id=i.hub_id, aliases=list(i.aliases))
            for i in model_infos()]
    return ModelList(data=rows, count=len(rows))


@router.get("/{name:path}", response_model=ModelOut, summary="Get one model", responses=problems(404, 422))
def get_model_route(settings: SettingsDep, name: str = Path(max_length=200, description="Registry name, alias or Hub id 'org/name'"),
                    ) -> LanguageModelOut | DiffusionPipelineOut:
    """Parameters (total and active) and KV bytes per token of a registry model or a Hub id."""
    return model_out(load_public_model(name, offline=server_offline(settings)))
