"""Response schema of ``GET /v1/models/{name}``: the document ``anchorgpu model MODEL --json`` prints
(:func:`anchorgpu.architectures.model_to_json`), every key listed with its type, one of two shapes by ``kind``:
a language model or a diffusion pipeline.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from anchorgpu.api.schemas_base import _Schema

__all__ = ["DiffusionPipelineOut", "LanguageModelOut", "ModelOut"]

class ExpertsOut(_Schema):
    num_experts: int = Field(description="Routed experts per MoE layer")
    experts_per_token: int = Field(description="Routed experts each token is sent to")
    shared: int = Field(description="Shared experts every token passes through (0 if none)")
    expert_intermediate_size: int = Field(description="One expert's MLP width")
    moe_layers: int = Field(description="Layers with an MoE block (the others have a dense MLP)")


class MlaOut(_Schema):
    kv_lora_rank: int = Field(description="Width of the compressed KV latent each token caches (DeepSeek's kv_lora_rank)")
    q_lora_rank: int | None = Field(description="Width of the compressed query; null where queries are not compressed")
    qk_rope_head_dim: int = Field(description="Per-head width of the rotary part of queries and keys (cached once per token)")
    qk_nope_head_dim: int = Field(description="Per-head width of the non-rotary part of queries and keys")
    v_head_dim: int = Field(description="Per-head width of the values")


class RecurrentOut(_Schema):
    mixer: str = Field(description="The recurrent token mixer: 'mamba', 'mamba2' or 'gated_deltanet'")
    conv_values_per_layer: int = Field(description="Values of the convolution state one sequence holds per recurrent layer")
    ssm_values_per_layer: int = Field(description="Values of the SSM (or linear-attention) state one sequence holds per recurrent layer")
    ssm_bytes_per_value: int = Field(description="Bytes per SSM-state value: 2 (16-bit), or 4 where the model pins it to float32")


class QuantizationOut(_Schema):
    method: str = Field(description="quantization_config's quant_method, e.g. 'fp8', 'mxfp4', 'modelopt', 'awq'")
    format: str = Field(description="The weight format it stores, as --weights names it, e.g. 'fp8', 'mxfp4', 'nvfp4'")
    description: str = Field(description="How the format stores a weight (bits, block size, scales)")
    quantized_groups: dict[str, float] = Field(description="Linear groups stored in the format, each with the share of its weights quantized (0-1]")
    unquantized_groups: list[str] = Field(description="Linear groups kept in 16 bits")
    head_quantized: bool = Field(description="Whether the LM head is stored in the format")
    ignore: list[str] = Field(description="The checkpoint's list of modules left unquantized, as written")
    kv_cache: str | None = Field(description="The KV-cache dtype the checkpoint was calibrated for and engines run by default (e.g. 'fp8'); null when none")


class ImageTokensOut(_Schema):
    rule: str = Field(description="How an image becomes tokens ('fixed', 'grid', 'pixtral', 'anyres' or 'tiles')")
    native_resolution: list[int] = Field(description="[width, height] in pixels the vision tower is built for")
    tokens_per_image_at_native: int = Field(description="Tokens one image at the native resolution takes")
    patch_size: int | None = Field(description="Vision patch side, pixels; null where the rule has none")
    spatial_merge: int = Field(description="Patches merged per side into one token (1: none)")
    in_context: bool = Field(description="Whether image tokens sit in the language model's context (and its KV cache); false for cross-attention")


class EncoderOut(_Schema):
    modality: Literal["text", "audio"] = Field(description="What the encoder reads")
    layers: int = Field(description="Encoder layers")
    hidden_size: int = Field(description="Encoder width")
    params: int = Field(description="Encoder parameters (part of params_total)")
    tokens_per_input: int | None = Field(description="The fixed encoder length every input has (Whisper: 1,500 frames for 30 s); null where it varies")
    max_tokens: int = Field(description="Longest encoder input, tokens")
    cross_kv_bytes_per_encoder_token: int | float = Field(description="Cross-attention KV-cache bytes per encoder token, all decoder layers, at kv_cache_dtype")


class LinearGroupOut(_Schema):
    name: str = Field(description="Group name, e.g. 'q_proj', 'experts.down_proj'")
    component: str = Field(description="Part of the model it belongs to (a breakdown key: attention, mlp, experts …)")
    d_in: int = Field(description="Input width of each matrix")
    d_out: int = Field(description="Output width of each matrix")
    count: int = Field(description="Matrices of this shape in the model")
    active_count: int = Field(description="Matrices of this shape one token passes through (MoE: the routed experts it is sent to)")
    bias: bool = Field(description="Whether each matrix has a bias")
    parts: dict[str, int] | None = Field(description="A fused matrix's parts and their output widths (e.g. q, k, v); null when not fused")


class BreakdownOut(_Schema):
    """Parameters by component; they add up to params_total."""

    embeddings: int = Field(description="Token embedding table")
    position_embeddings: int = Field(description="Learned position embeddings (0 with rotary)")
    attention: int = Field(description="Attention projections")
    mlp: int = Field(description="Dense MLP blocks")
    experts: int = Field(description="Routed experts of the MoE blocks")
    shared_experts: int = Field(description="Shared experts of the MoE blocks")
    router: int = Field(description="MoE routers")
    norms: int = Field(description="Normalisation weights")
    head: int = Field(description="Untied LM head (0 when tied to the embeddings)")
    other: int = Field(description="Anything not in another key")
    recurrent: int = Field(description="Recurrent (Mamba/SSM, linear-attention) mixers")
    towers: int = Field(description="Towers besides the language model (vision, projector, audio encoder …)")


class PipelineComponentOut(_Schema):
    name: str = Field(description="Component name, e.g. 'transformer', 'text_encoder_2', 'vae'")
    role: str = Field(description="Its role: 'denoiser', 'text_encoder' or 'vae'")
    architecture: str = Field(description="Its architecture class")
    params: int = Field(description="Its parameters, exact count")
    hidden_size: int | None = Field(description="Width used for activation estimates; null where not used")
    num_layers: int | None = Field(description="Layers; null where not used")
    max_tokens: int | None = Field(description="A text encoder's longest prompt, tokens; null for the others")
    source: str = Field(description="Where its config was read")


class _ModelCommon(_Schema):
    name: str = Field(description="Model name (canonical registry name, or the Hub id / config read)")
    display_name: str = Field(description="Human name")
    model_type: str = Field(description="config.json's model_type ('diffusion_pipeline' for a pipeline)")
    family: str = Field(description="Model family")
    params_total: int = Field(description="Parameters in total (every expert of a MoE), exact count")
    source: str = Field(description="Where the config was read: 'registry:NAME', a Hub id or a path")
    notes: list[str] = Field(description="What the planner knows about this model beyond its config")
    max_context_tokens: None = Field(default=None, json_schema_extra={"deprecated": True}, description="Always null on this "
                                     "route (an older key; not in the CLI's JSON): a language model's context length is "
                                     "context_length")


class LanguageModelOut(_ModelCommon):
    """A language model (``kind`` 'language'), with the keys of ``anchorgpu model MODEL --json``."""

    kind: Literal["language"] = Field(description="'language'")
    params_active: int = Field(description="Parameters one token passes through (MoE: active experts only)")
    params_active_matmul: int = Field(description="Active parameters that enter a matrix multiply (params_active less table lookups)")
    embedding_params: int = Field(description="Token embedding parameters")
    untied_head_params: int = Field(description="LM head parameters when untied from the embeddings; 0 when tied")
    position_embedding_params: int = Field(description="Learned position embedding parameters (0 with rotary)")
    kv_bytes_per_token: int = Field(description="KV-cache bytes per token for the whole model at kv_cache_dtype, before sliding-window caps; attention layers only (a hybrid's Mamba/linear-attention layers cache none)")
    kv_cache_dtype: str = Field(description="KV-cache precision the KV figures use: the checkpoint's (shipped_quantization.kv_cache), else 'bf16'")
    kv_bytes_per_sequence_at_context: int = Field(description="KV-cache bytes one sequence of context_length tokens holds, sliding-window layers capped")
    state_bytes_per_sequence: int = Field(description="Recurrent (Mamba/SSM, linear-attention) state one sequence holds at any length, bytes (16-bit; a float32 SSM state where the model pins it); 0 for a transformer")
    attention_layers: int = Field(description="Layers with attention (that cache KV)")
    recurrent_layers: int = Field(description="Layers with a recurrent mixer (0 for a transformer)")
    recurrent: RecurrentOut | None = Field(description="The recurrent layers' state shape; null without recurrent layers")
    layers: int = Field(description="Decoder layers (num_hidden_layers)")
    hidden_size: int = Field(description="Model width")
    intermediate_size: int = Field(description="Dense MLP width")
    heads: int = Field(description="Attention (query) heads")
    kv_heads: int = Field(description="Key/value heads (fewer than heads with GQA/MQA)")
    head_dim: int = Field(description="Per-head width")
    vocab_size: int = Field(description="Vocabulary size")
    experts: ExpertsOut | None = Field(description="The mixture of experts; null for a dense model")
    mla: MlaOut | None = Field(description="Multi-head latent attention's shape; null without MLA")
    context_length: int = Field(description="Longest context the config allows, tokens")
    attention: str = Field(description="Attention kind: 'mha', 'gqa', 'mqa', 'mla', or 'none' (no attention layer)")
    sliding_window_layers: int = Field(description="Layers that attend only to a sliding window")
    sliding_windows: list[int] = Field(description="The distinct window sizes, tokens (empty without sliding windows)")
    tie_word_embeddings: bool = Field(description="Whether the LM head shares the embedding table")
    gated_mlp: bool = Field(description="Gated MLP (SwiGLU/GeGLU, three matrices) rather than two matrices")
    breakdown: BreakdownOut = Field(description="Parameters by component, adding up to params_total")
    linear_groups: list[LinearGroupOut] = Field(description="Every matrix shape of the model with its count (what the speed model multiplies)")
    shipped_weights: str = Field(description="The weight format the checkpoint ships in (its quantization_config's), else 'bf16'; the planner's default weights")
    shipped_quantization: QuantizationOut | None = Field(description="The checkpoint's quantization_config as read; null for 16-bit weights")
    towers: dict[str, int] = Field(description="Parameters per tower (language_model; vision, projector, audio_encoder; encoder, decoder, shared_embeddings), adding up to params_total")
    image_tokens: ImageTokensOut | None = Field(description="How images become tokens; null for a text-only model")
    encoder: EncoderOut | None = Field(description="An encoder-decoder's encoder (text or audio); null for a decoder-only model")


class DiffusionPipelineOut(_ModelCommon):
    """A diffusion pipeline (``kind`` 'diffusion'), with the keys of ``anchorgpu model PIPELINE --json``."""

    kind: Literal["diffusion"] = Field(description="'diffusion'")
    params_active: int = Field(description="Parameters of the whole pipeline (every component runs): params_total")
    kv_bytes_per_token: None = Field(description="Always null: a pipeline has no KV cache")
    state_bytes_per_sequence: None = Field(description="Always null: a pipeline has no recurrent state")
    components: list[PipelineComponentOut] = Field(description="The pipeline's components (denoiser, text encoders, VAE)")
    vae_latent_channels: int = Field(description="Channels of the VAE's latent")
    vae_scale_factor: int = Field(description="Pixels per latent cell along each side")
    vae_scaling_factor: float = Field(description="The VAE's latent scaling factor (config scaling_factor)")
    patch_size: int = Field(description="Latent cells per denoiser token along each side (2 for DiT/FLUX, 1 for a UNet)")
    default_resolution: list[int] = Field(description="[width, height] in pixels planned by default")
    default_steps: int = Field(description="Denoising steps planned by default")
    latent_shape: list[int] = Field(description="Latent tensor shape at the default resolution, [channels, height, width]")
    denoiser_tokens: int = Field(description="Tokens the denoiser sees per image at the default resolution")


ModelOut = Annotated[LanguageModelOut | DiffusionPipelineOut, Field(discriminator="kind")]
"""One model: a language model or a diffusion pipeline, told apart by ``kind``."""

