"""Frozen records describing a model's architecture: what the planner reads about a model.

This module is the contract between ``architectures`` (which builds these records from the registry
and from Hugging Face ``config.json`` files) and ``planner`` (which only reads them). Pure; stdlib only.
Fields may be added; existing names and meanings stay stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "AttentionKind",
    "DiffusionComponent",
    "DiffusionPipelineSpec",
    "LinearGroup",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "ParamBreakdown",
]

AttentionKind = Literal["mha", "gqa", "mqa", "mla"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamBreakdown:
    """Exact parameter counts per component (tied embeddings counted once, under ``embeddings``)."""

    embeddings: int  # token embedding table
    position_embeddings: int  # learned absolute positions (GPT-2, OPT); 0 for RoPE models
    attention: int  # all attention projections (+ their biases and q/k norms) over all layers
    mlp: int  # dense MLP blocks over all dense layers
    experts: int  # routed experts over all MoE layers (all experts, all layers)
    shared_experts: int  # always-active shared experts over all MoE layers
    router: int  # MoE gate/router weights
    norms: int  # every norm weight/bias, including the final norm
    head: int  # untied LM head (0 when tied to the embeddings)
    other: int = 0  # anything else the architecture has (e.g. attention sinks), named in ``notes``

    @property
    def total(self) -> int:
        return (
            self.embeddings + self.position_embeddings + self.attention + self.mlp + self.experts
            + self.shared_experts + self.router + self.norms + self.head + self.other
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3): the cache holds one latent per token and layer."""

    kv_lora_rank: int
    q_lora_rank: int | None
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int

    @property
    def cache_values_per_token_per_layer(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True, slots=True, kw_only=True)
class MoeSpec:
    num_experts: int  # routed experts per MoE layer
    experts_per_token: int  # top-k
    num_shared_experts: int  # always-active experts per MoE layer (0 if none)
    expert_intermediate_size: int
    num_moe_layers: int  # layers whose MLP is MoE (the rest are dense)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearGroup:
    """A family of same-shaped linear layers, for LoRA targeting and quantization.

    ``name`` is one of q, k, v, o, gate, up, down (or q_a, q_b, kv_a, kv_b for MLA; expert_gate,
    expert_up, expert_down, shared_gate … for MoE). ``count`` is how many such matrices the whole
    model holds (layers × experts). ``active_count`` is how many a single token passes through.
    """

    name: str
    d_in: int
    d_out: int
    count: int
    active_count: int

    @property
    def params(self) -> int:
        return self.d_in * self.d_out * self.count


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """A transformer language model, as the planner needs it."""

    name: str
    model_type: str  # Hugging Face model_type (llama, qwen2_moe, deepseek_v3 …)
    family: str  # human family name (Llama 3.1, Qwen2.5 …)
    num_layers: int
    hidden_size: int
    intermediate_size: int  # dense MLP width (0 if every layer is MoE)
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_context_tokens: int
    tie_word_embeddings: bool
    attention_kind: AttentionKind
    gated_mlp: bool  # SwiGLU/GeGLU (three matrices) vs plain two-matrix MLP
    params: ParamBreakdown
    params_active: int  # parameters one token passes through (== total for dense models)
    linear_groups: tuple[LinearGroup, ...]
    # Per-layer attention window in tokens; None means full attention. Length == num_layers.
    layer_windows: tuple[int | None, ...]
    mla: MlaSpec | None = None
    moe: MoeSpec | None = None
    source: str = ""  # where the config came from (registry file, path, Hub id)
    notes: tuple[str, ...] = field(default=())

    @property
    def params_total(self) -> int:
        return self.params.total

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    def kv_values_per_token(self) -> int:
        """Values cached per token for the whole model at full context (K and V, every layer).

        MHA/GQA/MQA: 2 · L · kv_heads · head_dim; MLA: L · (kv_lora_rank + qk_rope_head_dim).
        """
        if self.mla is not None:
            return self.num_layers * self.mla.cache_values_per_token_per_layer
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim

    def kv_bytes_per_token(self, bytes_per_value: float = 2) -> int:
        """KV-cache bytes per token for all layers (bf16 unless told), ignoring window caps."""
        return int(self.kv_values_per_token() * bytes_per_value)


DiffusionRole = Literal["denoiser", "text_encoder", "vae"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffusionComponent:
    name: str  # e.g. "transformer", "text_encoder_2", "vae"
    role: DiffusionRole
    architecture: str  # e.g. "FluxTransformer2DModel", "T5EncoderModel", "AutoencoderKL"
    params: int
    hidden_size: int = 0  # denoiser/encoder width, used for activation estimates
    num_layers: int = 0
    max_tokens: int = 0  # text encoders: max prompt tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class DiffusionPipelineSpec:
    name: str
    family: str
    components: tuple[DiffusionComponent, ...]
    vae_latent_channels: int
    vae_scale_factor: int  # pixels per latent cell along one side (8 for SD/SDXL/FLUX)
    patch_size: int  # denoiser patchify size on the latent (2 for DiT/FLUX, 1 for UNet)
    default_resolution: tuple[int, int]  # width, height in pixels
    default_steps: int
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def params_total(self) -> int:
        return sum(c.params for c in self.components)
