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
    "LayerKind",
    "DiffusionPipelineSpec",
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

LayerKind = Literal["attention", "recurrent", "attention_recurrent", "mlp"]
"""The token mixer of one layer: ``attention`` (caches K and V per token), ``recurrent`` (a Mamba/SSM or
linear-attention mixer: a fixed-size state per sequence), ``attention_recurrent`` (both: Zamba2's hybrid
layers), ``mlp`` (no token mixer: Nemotron-H's MLP and MoE blocks)."""


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
    recurrent: int = 0  # Mamba/SSM and linear-attention mixers (projections, convolution, A, D, dt, gated norm)
    # vision towers and projectors outside the language model (each named in ``ModelSpec.towers``)
    towers: int = 0

    @property
    def total(self) -> int:
        return (
            self.embeddings + self.position_embeddings + self.attention + self.mlp + self.experts
            + self.shared_experts + self.router + self.norms + self.head + self.other + self.recurrent
            + self.towers
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
    # The clamp on the experts' GLU inputs (gpt-oss: ``swiglu_limit`` 7.0 in its config.json, which Megatron-Core
    # runs as activation_func_clamp_value); None: no clamp
    glu_clamp: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RecurrentSpec:
    """The state one recurrent layer keeps per sequence, whatever the sequence length.

    ``conv_values``: the causal convolution's last ``kernel - 1`` inputs for every convolved channel;
    ``ssm_values``: the SSM (or gated delta-rule) state, e.g. Mamba ``d_inner × d_state``, Mamba-2
    ``heads × head_dim × d_state``, gated DeltaNet ``value_heads × key_dim × value_dim``. Shapes as vLLM
    allocates them per request (``mamba_utils`` state shapes). ``ssm_bytes_per_value`` fixes the SSM
    state's dtype when the model asks for one (Nemotron-H: ``mamba_ssm_cache_dtype`` float32); ``None``
    keeps it in the dtype the caller gives (the model dtype, as vLLM's ``mamba_cache_dtype=auto`` does).
    """

    mixer: str  # mamba | mamba2 | gated_deltanet
    conv_values: int
    ssm_values: int
    ssm_bytes_per_value: int | None = None
    # activation values one token leaves per layer in training (mixer inputs/outputs kept for backward)
    activation_values_per_token: int = 0

    def bytes_per_layer(self, bytes_per_value: float) -> float:
        ssm = self.ssm_bytes_per_value if self.ssm_bytes_per_value is not None else bytes_per_value
        return self.conv_values * bytes_per_value + self.ssm_values * ssm


ImageRule = Literal["fixed", "grid", "pixtral", "anyres", "tiles"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageTokens:
    """How many tokens one image becomes, as the model's processor cuts it (arithmetic in ``architectures.images``).

    ``fixed``: ``tokens_per_image`` whatever the size (Gemma 3's SigLIP pooled to 256, LLaVA-1.5's 576);
    ``grid``: Qwen-VL's smart resize to multiples of ``patch_size · merge`` within ``min_pixels``–``max_pixels``,
    one token per merged patch; ``pixtral``: longest edge capped at ``longest_edge``, ``patch_size · merge`` cells
    plus one break token per row; ``anyres``: LLaVA-NeXT's base image plus the best grid of ``grid_pinpoints``;
    ``tiles``: tiles of ``tile_size`` up to ``max_tiles`` of ``tokens_per_tile`` each (Llama 4 adds a global tile;
    mllama reads them through cross-attention, ``in_context`` False: one placeholder token in the text).
    Counts are the tokens that carry the image (Pixtral's row breaks and Llama 4's tile separators and markers
    included); the one start and one end marker Qwen-VL and Gemma 3 put around them are not.
    """

    rule: ImageRule
    native_resolution: tuple[int, int]  # width, height the processor is built around (the default image)
    tokens_per_image: int = 0
    patch_size: int = 0
    merge: int = 1  # patches merged per side into one token
    min_pixels: int = 0
    max_pixels: int = 0
    longest_edge: int = 0
    tile_size: int = 0
    max_tiles: int = 1
    tokens_per_tile: int = 0
    global_tile: bool = False
    grid_pinpoints: tuple[tuple[int, int], ...] = ()
    in_context: bool = True  # image tokens sit in the language model's context (and its KV cache)
    cross_kv_values_per_token: int = 0  # mllama: K and V values per image token over the cross-attention layers
    encoder_params: int = 0  # vision tower parameters each patch passes through (prefill FLOPs)


@dataclass(frozen=True, slots=True, kw_only=True)
class EncoderSpec:
    """The encoder of an encoder-decoder model (T5, Whisper); the decoder is the ModelSpec itself.

    Each decoder layer cross-attends to the encoder's output: per sequence the cache holds
    ``cross_kv_values_per_token`` values for each encoder position (K and V over all decoder layers).
    ``fixed_tokens`` is the encoder length every input has (Whisper: 1,500 frames for 30 s of audio);
    0 means the encoder reads the prompt (T5).
    """

    modality: Literal["text", "audio"]
    num_layers: int
    hidden_size: int
    params: int  # encoder parameters (its share of params_total)
    fixed_tokens: int
    max_tokens: int
    cross_kv_values_per_token: int


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
        return int(self.kv_values_per_token() * bytes_per_value)

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
