"""Frozen records describing a model's architecture: what the planner reads about a model.

This module is the contract between ``architectures`` (which builds these records from the registry
and from Hugging Face ``config.json`` files) and ``planner`` (which only reads them). Pure; stdlib only.
Fields may be added; existing names and meanings stay stable. The parts of a language model (parameter counts,
MLA, MoE, recurrent mixers, image tokens, encoders, linear groups) live in :mod:`~anchorgpu.architectures.model_parts`
and a diffusion pipeline's records in :mod:`~anchorgpu.architectures.diffusion_spec`; all are re-exported here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from anchorgpu.architectures.diffusion_spec import DiffusionComponent, DiffusionPipelineSpec, DiffusionRole
from anchorgpu.architectures.model_parts import (
    EncoderSpec,
    ImageTokens,
    LayerKind,
    LinearGroup,
    MlaSpec,
    MoeSpec,
    ParamBreakdown,
    RecurrentSpec,
)

if TYPE_CHECKING:
    from anchorgpu.architectures.quantization import ShippedQuantization

__all__ = [
    "AttentionKind",
    "DiffusionComponent",
    "LayerKind",
    "DiffusionPipelineSpec",
    "DiffusionRole",
    "EncoderSpec",
    "ImageTokens",
    "LinearGroup",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "ParamBreakdown",
    "RecurrentSpec",
]

AttentionKind = Literal["mha", "gqa", "mqa", "mla", "none"]


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
    # Per-layer token mixer (length num_layers); empty means every layer is attention (a transformer).
    layer_kinds: tuple[LayerKind, ...] = ()
    recurrent: RecurrentSpec | None = None  # the state of each recurrent layer (None: no recurrent layer)
    mlp_layers: int | None = None  # layers with an MLP or MoE block (None: every layer)
    # Every tower's parameters, name -> count, adding up to params_total (language_model, vision, projector,
    # audio_encoder, encoder, decoder …); empty for a plain decoder-only language model.
    towers: tuple[tuple[str, int], ...] = ()
    image: ImageTokens | None = None  # how images become tokens (None: the model takes no images)
    encoder: EncoderSpec | None = None  # encoder-decoder models: the encoder side
    source: str = ""  # where the config came from (registry file, path, Hub id)
    # What the checkpoint ships: quantized storage and the layers in it (None: 16-bit weights). Built by
    # ``architectures.quantization`` from the config's quantization_config.
    quantization: ShippedQuantization | None = None
    # Dropout on the residual stream while training (config's hidden_dropout, resid_pdrop …; 0.0 when it states none,
    # as Llama-style configs do): with p = 0 no dropout mask is kept for the backward pass.
    hidden_dropout: float = 0.0
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

    @property
    def attention_layers(self) -> int:
        """Layers that cache K and V per token (every layer of a transformer; Jamba-v0.1: 4 of 32)."""
        if not self.layer_kinds:
            return self.num_layers
        return sum(1 for k in self.layer_kinds if k in ("attention", "attention_recurrent"))

    @property
    def recurrent_layers(self) -> int:
        """Layers that keep a fixed-size recurrent state per sequence (Mamba, SSM, linear attention)."""
        return sum(1 for k in self.layer_kinds if k in ("recurrent", "attention_recurrent"))

    @property
    def attention_windows(self) -> tuple[int | None, ...]:
        """The attention window of each KV-caching layer, in order (None: full attention)."""
        windows = self.layer_windows or (None,) * self.num_layers
        if not self.layer_kinds:
            return windows
        return tuple(w for w, k in zip(windows, self.layer_kinds, strict=False)
                     if k in ("attention", "attention_recurrent"))

    def kv_values_per_layer_per_token(self) -> int:
        """Values one attention layer caches per token: 2 · kv_heads · head_dim, or MLA's latent."""
        if self.mla is not None:
            return self.mla.cache_values_per_token_per_layer
        return 2 * self.num_kv_heads * self.head_dim

    def kv_values_per_token(self) -> int:
        """Values cached per token for the whole model at full context (K and V of every attention layer).

        MHA/GQA/MQA: 2 · L_attn · kv_heads · head_dim; MLA: L_attn · (kv_lora_rank + qk_rope_head_dim).
        ``L_attn`` counts only the layers that attend (:attr:`attention_layers`): the Mamba and
        linear-attention layers of a hybrid keep a state per sequence instead (:meth:`state_bytes_per_sequence`).
        """
        return self.attention_layers * self.kv_values_per_layer_per_token()

    def kv_bytes_per_token(self, bytes_per_value: float = 2) -> int:
        """KV-cache bytes per token for all attention layers (bf16 unless told), ignoring window caps."""
        return math.ceil(self.kv_values_per_token() * bytes_per_value)

    @property
    def sliding_window_layers(self) -> int:
        """How many layers attend only to a sliding window (their cache stops growing at the window)."""
        return sum(1 for w in self.attention_windows if w is not None)

    def kv_values_for_context(self, context_tokens: int) -> int:
        """Values cached for ONE sequence of ``context_tokens`` tokens, sliding-window layers capped.

        Σ over attention layers of ``min(context, window)`` × values per token per layer (K and V, or MLA's latent).

        >>> # 2 layers, 1 KV head of dim 4: full layer keeps 10 tokens, windowed layer keeps 3
        >>> spec = _example_spec(layer_windows=(None, 3))
        >>> spec.kv_values_for_context(10)
        104
        """
        if context_tokens < 0:
            raise ValueError("context_tokens must be >= 0")
        per_layer = self.kv_values_per_layer_per_token()
        return sum(per_layer * (context_tokens if w is None else min(context_tokens, w)) for w in self.attention_windows)

    def state_values_per_sequence(self) -> int:
        """Recurrent-state values one sequence holds, at any length: Σ over recurrent layers of conv + SSM state."""
        if self.recurrent is None:
            return 0
        return self.recurrent_layers * (self.recurrent.conv_values + self.recurrent.ssm_values)

    def state_bytes_per_sequence(self, bytes_per_value: float = 2) -> int:
        """Recurrent-state bytes one sequence holds (0 for a transformer), independent of its length.

        ``bytes_per_value`` is the state dtype (the model's 16-bit dtype unless told); an SSM state the
        model pins to float32 (:attr:`RecurrentSpec.ssm_bytes_per_value`) stays at 4 bytes.

        >>> spec = _example_spec(layer_windows=(None, None), layer_kinds=("attention", "recurrent"),
        ...                      recurrent=RecurrentSpec(mixer="mamba", conv_values=3 * 8, ssm_values=8 * 16))
        >>> spec.state_bytes_per_sequence(2), spec.kv_values_for_context(10)  # (24 + 128) · 2; one layer · 8 · 10
        (304, 80)
        """
        if self.recurrent is None:
            return 0
        return int(self.recurrent_layers * self.recurrent.bytes_per_layer(bytes_per_value))


def _example_spec(
    *, layer_windows: tuple[int | None, ...], layer_kinds: tuple[LayerKind, ...] = (),
    recurrent: RecurrentSpec | None = None,
) -> ModelSpec:
    """A tiny two-layer model for the doctests above (not a real model)."""
    zero = ParamBreakdown(
        embeddings=0, position_embeddings=0, attention=0, mlp=0, experts=0, shared_experts=0, router=0, norms=0, head=0
    )
    return ModelSpec(
        name="example", model_type="llama", family="example", num_layers=2, hidden_size=4, intermediate_size=8,
        num_attention_heads=1, num_kv_heads=1, head_dim=4, vocab_size=8, max_context_tokens=16,
        tie_word_embeddings=True, attention_kind="mha", gated_mlp=True, params=zero, params_active=0,
        linear_groups=(), layer_windows=layer_windows, layer_kinds=layer_kinds, recurrent=recurrent,
    )


