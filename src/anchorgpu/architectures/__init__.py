"""Model architectures: the built-in registry and Hugging Face ``config.json`` import.

Public API (pure; stdlib only — ``huggingface_hub`` is imported only to fetch a Hub id):

- :func:`load_model` — registry name/alias, path to ``config.json`` or its folder, or Hub id
  → :class:`ModelSpec` (language model) or :class:`DiffusionPipelineSpec`.
- :func:`from_hf_config` — a config mapping → :class:`ModelSpec` with exact parameter counts.
- :func:`list_models` — canonical registry names; :func:`model_infos` — their metadata rows.
- :func:`model_to_json` — the JSON contract of ``anchorgpu model --json`` (DESIGN.md section 5).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from anchorgpu.architectures.hf import SUPPORTED_MODEL_TYPES, from_hf_config
    from anchorgpu.architectures.loader import load_model
    from anchorgpu.architectures.registry import ModelInfo, list_models, model_info, model_infos
    from anchorgpu.architectures.serialize import kv_bytes_per_value, model_to_json

# Public name -> the submodule that defines it, imported on first use (PEP 562) so that importing the
# package (or one of its submodules) does not load the rest: ``anchorgpu plan`` must start fast.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("SUPPORTED_MODEL_TYPES", "from_hf_config"), "anchorgpu.architectures.hf"),
    **dict.fromkeys(("load_model",), "anchorgpu.architectures.loader"),
    **dict.fromkeys(("ModelInfo", "list_models", "model_info", "model_infos"), "anchorgpu.architectures.registry"),
    **dict.fromkeys(("kv_bytes_per_value", "model_to_json"), "anchorgpu.architectures.serialize"),
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
