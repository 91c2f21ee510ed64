"""Frozen records of a language model's parts, read by the planner through
:class:`~anchorgpu.architectures.spec.ModelSpec`: exact parameter counts, MLA, a mixture of experts, recurrent
(Mamba/SSM, linear-attention) mixers, image tokens, an encoder, and the groups of linear layers. Pure; stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["EncoderSpec", "ImageRule", "ImageTokens", "LayerKind", "LinearGroup", "MlaSpec", "MoeSpec", "ParamBreakdown",
           "RecurrentSpec"]

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
