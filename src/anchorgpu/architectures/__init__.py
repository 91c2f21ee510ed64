"""Model architectures: the built-in registry and Hugging Face ``config.json`` import.

Public API (pure; stdlib only — ``huggingface_hub`` is imported only to fetch a Hub id):

- :func:`load_model` — registry name/alias, path to ``config.json`` or its folder, or Hub id
  → :class:`ModelSpec` (language model) or :class:`DiffusionPipelineSpec`.
- :func:`from_hf_config` — a config mapping → :class:`ModelSpec` with exact parameter counts.
- :func:`list_models` — canonical registry names; :func:`model_infos` — their metadata rows.
- :func:`model_to_json` — the JSON contract of ``anchorgpu model --json`` (DESIGN.md section 5).
"""

from __future__ import annotations

from anchorgpu.architectures.hf import SUPPORTED_MODEL_TYPES, from_hf_config
from anchorgpu.architectures.loader import load_model
from anchorgpu.architectures.registry import ModelInfo, list_models, model_info, model_infos
from anchorgpu.architectures.serialize import kv_bytes_per_value, model_to_json
from anchorgpu.architectures.spec import (
    AttentionKind,
    DiffusionComponent,
    DiffusionPipelineSpec,
    LinearGroup,
    MlaSpec,
    ModelSpec,
    MoeSpec,
    ParamBreakdown,
)

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "AttentionKind",
    "DiffusionComponent",
    "DiffusionPipelineSpec",
    "LinearGroup",
    "MlaSpec",
    "ModelInfo",
    "ModelSpec",
    "MoeSpec",
    "ParamBreakdown",
    "from_hf_config",
    "kv_bytes_per_value",
    "list_models",
    "load_model",
    "model_info",
    "model_infos",
    "model_to_json",
]
