"""The stable JSON form of a model (``anchorgpu model --json``, the API's ``/models``). Pure.

Keys are a contract (DESIGN.md section 5): keep them, add freely. Counts are integers; bytes are integers.
"""

from __future__ import annotations

import math
from typing import Any

from anchorgpu.architectures.registry import resolve
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidInput

__all__ = ["KV_CACHE_BYTES", "kv_bytes_per_value", "model_to_json", "shipped_weights"]

# Bytes per cached value for each KV-cache precision the CLI accepts (nvfp4: half a byte and an FP8 scale per 16
# values, as anchorgpu.planner.inputs.KV_CACHE_DTYPES states with its sources).
KV_CACHE_BYTES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "nvfp4": 0.5625}

BREAKDOWN_KEYS = (
    "embeddings", "position_embeddings", "attention", "mlp", "experts", "shared_experts", "router", "norms", "head",
    "other", "recurrent", "towers",
)


def kv_bytes_per_value(kv_cache: str) -> float:
    """Bytes per cached value for ``kv_cache`` (bf16/fp16 → 2, fp8 → 1, nvfp4 → 0.5625).

    >>> kv_bytes_per_value("fp8"), kv_bytes_per_value("nvfp4")
    (1, 0.5625)
    """
    try:
        return KV_CACHE_BYTES[kv_cache.lower()]
    except KeyError:
        raise InvalidInput(
            f"--kv-cache must be one of {', '.join(KV_CACHE_BYTES)}, got {kv_cache!r}", code="invalid_kv_cache"
        ) from None


def shipped_weights(spec: ModelSpec | DiffusionPipelineSpec) -> str:
    """The weight format a checkpoint ships in: its quantization_config's format, else bf16 (16-bit weights).

    >>> from anchorgpu.architectures import load_model
    >>> shipped_weights(load_model("gpt-oss-20b")), shipped_weights(load_model("llama-3.1-8b"))
    ('mxfp4', 'bf16')
    """
    quantization = getattr(spec, "quantization", None)
    return "bf16" if quantization is None else str(quantization.name)


def model_to_json(spec: ModelSpec | DiffusionPipelineSpec, *, kv_cache: str | None = None) -> dict[str, Any]:
    """Plain JSON types for a model or a diffusion pipeline. ``kv_cache`` None: the KV dtype the checkpoint
    ships (``shipped_quantization.kv_cache``), else bf16.

    >>> from anchorgpu.architectures import load_model
    >>> doc = model_to_json(load_model("llama-3.1-8b"))
    >>> doc["params_total"], doc["kv_bytes_per_token"], doc["breakdown"]["head"]
    (8030261248, 131072, 525336576)
    """
    if isinstance(spec, DiffusionPipelineSpec):
        return _pipeline_to_json(spec)
    if kv_cache is None:
        kv_cache = (spec.quantization.kv_cache if spec.quantization is not None else None) or "bf16"
    per_value = kv_bytes_per_value(kv_cache)
    info = resolve(spec.name) if spec.source.startswith("registry:") else None  # a config file: no registry read
    windows = sorted({w for w in spec.layer_windows if w is not None})
    ctx = spec.max_context_tokens
    return {
        "name": spec.name,
        "kind": "language",
        "display_name": info.display_name if info is not None and spec.source.startswith("registry:") else spec.name,
        "model_type": spec.model_type,
        "family": spec.family,
        "params_total": spec.params_total,
        "params_active": spec.params_active,
        "params_active_matmul": spec.params_active_matmul,
        # the names of shared/reference/configs/expected_params.json, for a direct comparison
        "embedding_params": spec.params.embeddings,
        "untied_head_params": spec.params.head,
        "position_embedding_params": spec.params.position_embeddings,
        "kv_bytes_per_token": spec.kv_bytes_per_token(per_value),
        "kv_cache_dtype": kv_cache.lower(),
        "kv_bytes_per_sequence_at_context": math.ceil(spec.kv_values_for_context(ctx) * per_value),
        # recurrent (Mamba/SSM, linear-attention) state one sequence holds at any length, 16-bit unless the
        # model pins its SSM state to float32; 0 for a transformer. KV above is on the attention layers only.
        "state_bytes_per_sequence": spec.state_bytes_per_sequence(2),
        "attention_layers": spec.attention_layers,
        "recurrent_layers": spec.recurrent_layers,
        "recurrent": None
        if spec.recurrent is None
        else {
            "mixer": spec.recurrent.mixer,
            "conv_values_per_layer": spec.recurrent.conv_values,
            "ssm_values_per_layer": spec.recurrent.ssm_values,
            "ssm_bytes_per_value": spec.recurrent.ssm_bytes_per_value or 2,
        },
        "layers": spec.num_layers,
        "hidden_size": spec.hidden_size,
        "intermediate_size": spec.intermediate_size,
        "heads": spec.num_attention_heads,
        "kv_heads": spec.num_kv_heads,
        "head_dim": spec.head_dim,
        "vocab_size": spec.vocab_size,
        "experts": None
        if spec.moe is None
        else {
            "num_experts": spec.moe.num_experts,
            "experts_per_token": spec.moe.experts_per_token,
            "shared": spec.moe.num_shared_experts,
            "expert_intermediate_size": spec.moe.expert_intermediate_size,
            "moe_layers": spec.moe.num_moe_layers,
        },
        "mla": None
        if spec.mla is None
        else {
            "kv_lora_rank": spec.mla.kv_lora_rank,
            "q_lora_rank": spec.mla.q_lora_rank,
            "qk_rope_head_dim": spec.mla.qk_rope_head_dim,
            "qk_nope_head_dim": spec.mla.qk_nope_head_dim,
            "v_head_dim": spec.mla.v_head_dim,
        },
        "context_length": ctx,
        "attention": spec.attention_kind,
        "sliding_window_layers": spec.sliding_window_layers,
        "sliding_windows": windows,
        "tie_word_embeddings": spec.tie_word_embeddings,
        "gated_mlp": spec.gated_mlp,
        "breakdown": {key: getattr(spec.params, key) for key in BREAKDOWN_KEYS},
        "linear_groups": [
            {"name": g.name, "component": g.component, "d_in": g.d_in, "d_out": g.d_out, "count": g.count,
             "active_count": g.active_count, "bias": g.bias, "parts": {name: size for name, size in g.parts} or None}
            for g in spec.linear_groups
        ],
        # the precision the checkpoint ships in (its quantization_config), the planner's default --weights
        "shipped_weights": shipped_weights(spec),
        "shipped_quantization": None if spec.quantization is None else {
            "method": spec.quantization.method,
            "format": spec.quantization.name,
            "description": spec.quantization.storage.description,
            "quantized_groups": {name: frac for name, frac in spec.quantization.groups if frac > 0},
            "unquantized_groups": list(spec.quantization.kept_16bit),
            "head_quantized": spec.quantization.head_quantized,
            "ignore": list(spec.quantization.ignore),
            # the KV-cache dtype it was calibrated for and engines run by default (fp8), or None
            "kv_cache": spec.quantization.kv_cache,
        },
        # every tower's parameters (vision, projector, language_model; encoder/decoder), adding up to params_total
        "towers": dict(spec.towers) or {"language_model": spec.params_total},
        "image_tokens": _image_json(spec),
        "encoder": None if spec.encoder is None else {
            "modality": spec.encoder.modality, "layers": spec.encoder.num_layers, "hidden_size": spec.encoder.hidden_size,
            "params": spec.encoder.params, "tokens_per_input": spec.encoder.fixed_tokens or None,
            "max_tokens": spec.encoder.max_tokens,
            "cross_kv_bytes_per_encoder_token": spec.encoder.cross_kv_values_per_token * per_value,
        },
        "source": spec.source,
        "notes": list(spec.notes),
    }


def _image_json(spec: ModelSpec) -> dict[str, Any] | None:
    """How images become tokens: the rule, the native resolution and the tokens one image takes there."""
    rule = spec.image
    if rule is None:
        return None
    from anchorgpu.architectures.images import image_tokens

    width, height = rule.native_resolution
    return {"rule": rule.rule, "native_resolution": [width, height],
            "tokens_per_image_at_native": image_tokens(rule, width, height), "patch_size": rule.patch_size or None,
            "spatial_merge": rule.merge, "in_context": rule.in_context}


def _pipeline_to_json(spec: DiffusionPipelineSpec) -> dict[str, Any]:
    info = resolve(spec.name)
    width, height = spec.default_resolution
    return {
        "name": spec.name,
        "kind": "diffusion",
        "display_name": info.display_name if info is not None else spec.name,
        "model_type": "diffusion_pipeline",
        "family": spec.family,
        "params_total": spec.params_total,
        "params_active": spec.params_total,
        "kv_bytes_per_token": None,
        "state_bytes_per_sequence": None,  # no recurrent state (a language model's key, null here as on the API)
        "components": [
            {"name": c.name, "role": c.role, "architecture": c.architecture, "params": c.params,
             "hidden_size": c.hidden_size or None, "num_layers": c.num_layers or None,
             "max_tokens": c.max_tokens or None, "source": c.source}
            for c in spec.components
        ],
        "vae_latent_channels": spec.vae_latent_channels,
        "vae_scale_factor": spec.vae_scale_factor,
        "vae_scaling_factor": spec.vae_scaling_factor,
        "patch_size": spec.patch_size,
        "default_resolution": [width, height],
        "default_steps": spec.default_steps,
        "latent_shape": list(spec.latent_shape(width, height)),
        "denoiser_tokens": spec.denoiser_tokens(width, height),
        "source": spec.source,
        "notes": list(spec.notes),
    }
