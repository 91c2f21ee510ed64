"""Frozen records describing a model's architecture: what the planner reads about a model.

This module is the contract between ``architectures`` (which builds these records from the registry
and from Hugging Face ``config.json`` files) and ``planner`` (which only reads them). Pure; stdlib only.
Fields may be added; existing names and meanings stay stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from anchorgpu.architectures.quantization import ShippedQuantization

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
    attention: int  # all attention projections (+ their biases, q/k norms, MLA q_a/kv_a norms) over all layers
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

    Fused modules keep their real shape, because LoRA adds ``r·(d_in + d_out)`` per *module*:
    ``qkv`` (Phi-3 qkv_proj, GPT-2 c_attn, Falcon/GPT-NeoX query_key_value), ``gate_up`` (Phi-3),
    ``expert_gate_up`` (gpt-oss). Plain two-matrix MLPs (GPT-2, OPT, Falcon, GPT-NeoX, StarCoder2)
    use ``up`` and ``down``. Routers are ``router`` (and Qwen2-MoE's ``shared_expert_gate``), with
    ``component == "router"``. Groups cover the transformer blocks only: the token embeddings and
    the LM head are in :class:`ParamBreakdown` (``embeddings``, ``head``), not here.
    """

    name: str
    d_in: int
    d_out: int
    count: int
    active_count: int
    bias: bool = False  # each matrix also has a bias vector of d_out values
    component: str = ""  # attention | mlp | experts | shared_experts | router (the ParamBreakdown field)
    # Output slices of a fused module, in order, as (part name, d_out): ``(("q", a·d), ("k", kv·d), ("v", kv·d))``
    # for ``qkv``, ``(("gate", ffn), ("up", ffn))`` for ``gate_up``/``expert_gate_up``; empty when not fused.
    # The d_out values add up to ``d_out``. LoRA on some parts of a fused module adapts those rows only.
    parts: tuple[tuple[str, int], ...] = ()

    @property
    def params(self) -> int:
        """Weight values of the whole family (biases excluded; see :attr:`bias_params`)."""
        return self.d_in * self.d_out * self.count

    @property
    def bias_params(self) -> int:
        return self.d_out * self.count if self.bias else 0


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
    num_kv_heads: int  # MLA: equal to the query heads (the cache holds the latent instead, see ``mla``)
    head_dim: int  # config ``head_dim`` when given (Gemma), else hidden / heads; MLA: qk_nope + qk_rope
    vocab_size: int
    max_context_tokens: int
    tie_word_embeddings: bool
    attention_kind: AttentionKind
    gated_mlp: bool  # SwiGLU/GeGLU (three matrices) vs plain two-matrix MLP
    params: ParamBreakdown
    params_active: int  # one token: everything except the routed experts it is not sent to (== total if dense)
    linear_groups: tuple[LinearGroup, ...]
    # Per-layer attention window in tokens; None means full attention. Length == num_layers.
    layer_windows: tuple[int | None, ...]
    mla: MlaSpec | None = None
    moe: MoeSpec | None = None
    source: str = ""  # where the config came from (registry file, path, Hub id)
    # What the checkpoint ships: quantized storage and the layers in it (None: 16-bit weights). Built by
    # ``architectures.quantization`` from the config's quantization_config.
    quantization: ShippedQuantization | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def params_total(self) -> int:
        return self.params.total

    @property
    def is_moe(self) -> bool:
        return self.moe is not None

    @property
    def params_active_matmul(self) -> int:
        """Active parameters that enter a matrix multiply per token (≈ 2 FLOPs each in a forward pass).

        ``params_active`` minus the table lookups (token embeddings when untied, learned positions);
        a tied table still counts once, as the LM head it also is. gpt-oss-20b: 3,608,307,264, the
        "3.6B active" of OpenAI's gpt-oss model card.
        """
        lookups = self.params.position_embeddings + (0 if self.tie_word_embeddings else self.params.embeddings)
        return self.params_active - lookups

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

    @property
    def sliding_window_layers(self) -> int:
        """How many layers attend only to a sliding window (their cache stops growing at the window)."""
        return sum(1 for w in self.layer_windows if w is not None)

    def kv_values_for_context(self, context_tokens: int) -> int:
        """Values cached for ONE sequence of ``context_tokens`` tokens, sliding-window layers capped.

        Σ over layers of ``min(context, window)`` × values per token per layer (K and V, or MLA's latent).

        >>> # 2 layers, 1 KV head of dim 4: full layer keeps 10 tokens, windowed layer keeps 3
        >>> spec = _example_spec(layer_windows=(None, 3))
        >>> spec.kv_values_for_context(10)
        104
        """
        if context_tokens < 0:
            raise ValueError("context_tokens must be >= 0")
        per_layer = self.kv_values_per_token() // self.num_layers
        return sum(per_layer * (context_tokens if w is None else min(context_tokens, w)) for w in self.layer_windows)


def _example_spec(*, layer_windows: tuple[int | None, ...]) -> ModelSpec:
    """A tiny two-layer model for the doctests above (not a real model)."""
    zero = ParamBreakdown(
        embeddings=0, position_embeddings=0, attention=0, mlp=0, experts=0, shared_experts=0, router=0, norms=0, head=0
    )
    return ModelSpec(
        name="example", model_type="llama", family="example", num_layers=2, hidden_size=4, intermediate_size=8,
        num_attention_heads=1, num_kv_heads=1, head_dim=4, vocab_size=8, max_context_tokens=16,
        tie_word_embeddings=True, attention_kind="mha", gated_mlp=True, params=zero, params_active=0,
        linear_groups=(), layer_windows=layer_windows,
    )


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
    source: str = ""  # where the parameter count comes from (published config + how it was counted)


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
    vae_scaling_factor: float = 0.0  # latents are multiplied by this before the denoiser (0 = unknown)
    source: str = ""
    notes: tuple[str, ...] = field(default=())

    @property
    def params_total(self) -> int:
        return sum(c.params for c in self.components)

    def latent_shape(self, width_px: int, height_px: int) -> tuple[int, int, int]:
        """(channels, height, width) of the latent for an image of ``width_px × height_px``.

        >>> DiffusionPipelineSpec(name="x", family="x", components=(), vae_latent_channels=16, vae_scale_factor=8,
        ...     patch_size=2, default_resolution=(1024, 1024), default_steps=28).latent_shape(1024, 768)
        (16, 96, 128)
        """
        f = self.vae_scale_factor
        return (self.vae_latent_channels, height_px // f, width_px // f)

    def denoiser_tokens(self, width_px: int, height_px: int) -> int:
        """Image tokens the denoiser sees: latent cells / patch_size² (DiT/FLUX); cells for a UNet."""
        _, h, w = self.latent_shape(width_px, height_px)
        return (h // self.patch_size) * (w // self.patch_size)
