"""Mixture-of-experts decoder families: routed (and shared) experts, MLA for DeepSeek."""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Core,
    Parser,
    alternating,
    assemble_moe,
    core_shape,
    embeddings,
    gated_mlp,
    gqa,
    qwen_windows,
    read_top_k,
    rms_norms,
    uniform_window,
    windows_from_types,
)
from anchorgpu.architectures.families._describe import Decoder, Experts, parser, reads_of
from anchorgpu.architectures.spec import MlaSpec, ModelSpec, MoeSpec


def _qwen2_moe(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """Qwen2-MoE: sparse-step MoE layers, one shared expert of its own width behind a sigmoid gate."""
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    n_exp = r.size("num_experts")
    top_k = read_top_k(r, n_exp)
    expert_ffn = r.size("moe_intermediate_size")
    step = r.size("decoder_sparse_step", default=1)
    dense_only = set(r.int_list("mlp_only_layers"))
    moe_layers = sum(1 for i in range(c.layers) if i not in dense_only and (i + 1) % step == 0)
    dense_layers = c.layers - moe_layers
    dense_ffn = r.size("intermediate_size") if dense_layers else 0
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=r.flag("qkv_bias", default=True))
    gated_mlp(t, c.hidden, dense_ffn, count=dense_layers)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
               component="experts", prefix="expert_")
    shared_ffn = r.size("shared_expert_intermediate_size", default=5632)
    gated_mlp(t, c.hidden, shared_ffn, count=moe_layers, component="shared_experts", prefix="shared_")
    t.linear("router", "shared_expert_gate", c.hidden, 1, count=moe_layers)
    rms_norms(t, c, per_layer=2)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=1,
                  expert_intermediate_size=expert_ffn, num_moe_layers=moe_layers)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=qwen_windows(r, c), moe=moe)


def _deepseek(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """DeepSeek-V2/V3: multi-head latent attention, dense first layers, shared + routed experts."""
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=False)
    kv_rank = r.size("kv_lora_rank")
    q_rank = r.opt_size("q_lora_rank")
    rope, nope, v_dim = r.size("qk_rope_head_dim"), r.size("qk_nope_head_dim"), r.size("v_head_dim")
    qk_dim = nope + rope
    n = c.layers
    # attention (MLA)
    if q_rank is None:
        t.linear("attention", "q", c.hidden, c.heads * qk_dim, count=n)
    else:
        t.linear("attention", "q_a", c.hidden, q_rank, count=n, bias=bias)
        t.vector("attention", q_rank, count=n)  # q_a_layernorm
        t.linear("attention", "q_b", q_rank, c.heads * qk_dim, count=n)
    t.linear("attention", "kv_a", c.hidden, kv_rank + rope, count=n, bias=bias)  # kv_a_proj_with_mqa
    t.vector("attention", kv_rank, count=n)  # kv_a_layernorm
    t.linear("attention", "kv_b", kv_rank, c.heads * (nope + v_dim), count=n)
    t.linear("attention", "o", c.heads * v_dim, c.hidden, count=n, bias=bias)
    # MLP: transformers makes layer i MoE when i >= first_k_dense_replace (moe_layer_freq is not read)
    first_dense = min(r.size("first_k_dense_replace", default=0, minimum=0), n)
    moe_layers = n - first_dense
    dense_ffn = r.size("intermediate_size") if first_dense else 0
    n_exp = r.size("n_routed_experts")
    top_k = read_top_k(r, n_exp)
    expert_ffn = r.size("moe_intermediate_size")
    n_shared = r.size("n_shared_experts", default=0, minimum=0)
    gated_mlp(t, c.hidden, dense_ffn, count=first_dense)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
               component="experts", prefix="expert_")
    if n_shared:
        gated_mlp(t, c.hidden, expert_ffn * n_shared, count=moe_layers, component="shared_experts", prefix="shared_")
    embeddings(t, c, tied=tied)
    rms_norms(t, c, per_layer=2)
    if r.size("moe_layer_freq", default=1) != 1:
        t.notes.append("moe_layer_freq is not 1: counted as transformers builds it (every layer past the dense ones is MoE)")
    mtp = r.size("num_nextn_predict_layers", default=0, minimum=0)
    if mtp:
        t.notes.append(f"{mtp} multi-token-prediction layer(s) in the checkpoint are not counted (transformers does not build them)")
    if r.text("model_type") == "deepseek_v3":
        t.notes.append("router e_score_correction_bias is a buffer in transformers, not a parameter: not counted")
    mla = MlaSpec(kv_lora_rank=kv_rank, q_lora_rank=q_rank, qk_rope_head_dim=rope, qk_nope_head_dim=nope,
                  v_head_dim=v_dim)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=n_shared,
                  expert_intermediate_size=expert_ffn, num_moe_layers=moe_layers)
    c = replace(c, kv_heads=c.heads, head_dim=qk_dim)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=(None,) * n, moe=moe, mla=mla)


def _gpt_oss(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, head_dim_default=64)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=True)
    ffn = r.size("intermediate_size")
    n_exp = r.size("num_local_experts")
    top_k = read_top_k(r, n_exp, keys=("num_experts_per_tok", "experts_per_token"))
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    t.vector("other", c.heads, count=c.layers)
    t.notes.append("other: one learned attention-sink logit per head and layer")
    t.linear("router", "router", c.hidden, n_exp, count=c.layers, bias=True)
    gated_mlp(t, c.hidden, ffn, count=c.layers * n_exp, active_count=c.layers * top_k, bias=True, fused=True,
               component="experts", prefix="expert_")
    rms_norms(t, c, per_layer=2)
    windows = windows_from_types(r, c, alternating(c, 2), window_default=128)
    # the clamp on the experts' gate and up outputs: "swiglu_limit": 7.0 in openai/gpt-oss-20b's and -120b's
    # config.json (transformers' GptOssExperts clamps at self.limit); absent: no clamp
    clamp = r.number("swiglu_limit", default=0.0)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                  num_moe_layers=c.layers, glu_clamp=clamp or None)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=0, windows=windows, moe=moe)


# ----------------------------------------------------------------------------------------- layer rules


def _qwen_moe_layers(r: ConfigReader, c: Core) -> tuple[bool, ...]:
    """Qwen MoE: layer i is MoE unless listed in ``mlp_only_layers``, when (i + 1) is a multiple of the step."""
    step = r.size("decoder_sparse_step", default=1)
    dense_only = set(r.int_list("mlp_only_layers"))
    return tuple(i not in dense_only and (i + 1) % step == 0 for i in range(c.layers))


def _first_k_dense(r: ConfigReader, c: Core) -> tuple[bool, ...]:
    """GLM-4.5: the first ``first_k_dense_replace`` layers are dense, the rest MoE."""
    first = r.size("first_k_dense_replace", default=1, minimum=0)
    return tuple(i >= first for i in range(c.layers))


def _ernie_moe_layers(r: ConfigReader, c: Core) -> tuple[bool, ...]:
    """ERNIE 4.5: MoE from ``moe_layer_start_index`` to ``moe_layer_end_index`` (-1: the last), every interval."""
    start = r.size("moe_layer_start_index", default=1, minimum=0)
    end = c.layers - 1 if r.data.get("moe_layer_end_index", -1) in (-1, None) else r.size("moe_layer_end_index", minimum=0)
    interval = r.size("moe_layer_interval", default=1)
    return tuple((i + 1) % interval == 0 and start <= i <= end for i in range(c.layers))


def _llama4_moe_layers(r: ConfigReader, c: Core) -> tuple[bool, ...]:
    """Llama 4: the layers in ``moe_layers``, else every ``interleave_moe_layer_step``-th layer."""
    if r.data.get("moe_layers") is not None:
        chosen = set(r.int_list("moe_layers"))
        if any(i >= c.layers for i in chosen):
            raise r.fail("moe_layers", f"lists a layer past the last one ({c.layers - 1})")
    else:
        step = r.size("interleave_moe_layer_step", default=1)
        chosen = set(range(step - 1, c.layers, step))
    return tuple(i in chosen for i in range(c.layers))


def _llama4_windows(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """Llama 4: RoPE layers use chunked attention (``attention_chunk_size``, 8192 unless set); NoPE layers are full."""
    chunk = r.opt_size("attention_chunk_size") if "attention_chunk_size" in r.data else 8192
    interval = r.size("no_rope_layer_interval", default=4)
    rope = r.int_list("no_rope_layers") or tuple(int((i + 1) % interval != 0) for i in range(c.layers))
    if len(rope) != c.layers:
        raise r.fail("no_rope_layers", f"must list {c.layers} layers (num_hidden_layers), got {len(rope)}")
    types = ["chunked_attention" if use_rope and chunk is not None else "full_attention" for use_rope in rope]
    return windows_from_types(r, c, types, window_default=None, chunk=chunk)


# ----------------------------------------------------------------------------------------- family rows

_ATTN_BIAS = ("attention_bias", False)
_BUFFER_NOTE = "router e_score_correction_bias is a buffer in transformers, not a parameter: not counted"
_MTP_NOTE = ("num_nextn_predict_layers",
             "{value} multi-token-prediction layer(s) in the checkpoint are not counted (transformers does not build them)")

DECODERS: dict[str, Decoder] = {
    "mixtral": Decoder(display="Mixtral", classes=("MixtralForCausalLM",), context=131072, windows=uniform_window,
                       experts=Experts(count="num_local_experts", width="intermediate_size")),
    "qwen3_moe": Decoder(display="Qwen3-MoE", classes=("Qwen3MoeForCausalLM",), context=32768, qkv_bias=_ATTN_BIAS,
                         o_bias=_ATTN_BIAS, qk_norm="head", windows=qwen_windows,
                         layer_types=frozenset({"full_attention", "sliding_attention"}),
                         experts=Experts(count="num_experts", layers=_qwen_moe_layers,
                                         keys=frozenset({"decoder_sparse_step", "mlp_only_layers"}))),
    "granitemoe": Decoder(display="Granite MoE", classes=("GraniteMoeForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS,
                          o_bias=_ATTN_BIAS, experts=Experts(count="num_local_experts", width="intermediate_size")),
    "phimoe": Decoder(display="Phi-3.5-MoE", classes=("PhimoeForCausalLM",), context=131072, qkv_bias=_ATTN_BIAS,
                      o_bias=_ATTN_BIAS, norm="layernorm", windows=uniform_window, head_bias=("lm_head_bias", False),
                      experts=Experts(count="num_local_experts", width="intermediate_size")),
    "glm4_moe": Decoder(display="GLM-4.5", classes=("Glm4MoeForCausalLM",), context=131072, qkv_bias=_ATTN_BIAS,
                        qk_norm="head", qk_norm_if=("use_qk_norm", False), notes=(_BUFFER_NOTE,), key_notes=(_MTP_NOTE,),
                        experts=Experts(count="n_routed_experts", shared=("n_shared_experts", 1), layers=_first_k_dense,
                                        keys=frozenset({"first_k_dense_replace"}))),
    "ernie4_5_moe": Decoder(display="ERNIE 4.5 MoE", classes=("Ernie4_5_MoeForCausalLM",), tie=True, context=131072,
                            qkv_bias=("use_bias", False), o_bias=("use_bias", False), mlp_bias=("use_bias", False),
                            head_bias=("use_bias", False),
                            experts=Experts(count=("moe_num_experts", "num_experts"),
                                            top_k=("num_experts_per_tok", "moe_k"), shared=("moe_num_shared_experts", 2),
                                            layers=_ernie_moe_layers, router_vectors=1,
                                            keys=frozenset({"moe_layer_start_index", "moe_layer_end_index",
                                                            "moe_layer_interval"}))),
    # Llama 4 text: routed experts and one shared expert of intermediate_size; the dense layers between MoE
    # layers use intermediate_size_mlp; q/k L2 norms have no weights.
    "llama4_text": Decoder(display="Llama 4", classes=("Llama4ForCausalLM",), context=131072, head_dim=128,
                           qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS, windows=_llama4_windows,
                           layer_types=frozenset({"full_attention", "chunked_attention"}),
                           reads=frozenset({"attention_chunk_size", "no_rope_layers", "use_qk_norm"}),
                           key_notes=(("attention_chunk_size", "chunked-attention layers cache at most one chunk of "
                                                               "{value} tokens: counted as a window of that size"),),
                           experts=Experts(count="num_local_experts", width="intermediate_size", shared=1,
                                           layers=_llama4_moe_layers, dense_width="intermediate_size_mlp",
                                           keys=frozenset({"moe_layers", "interleave_moe_layer_step"}))),
}

_MOE_KEYS = frozenset({"layer_types=full_attention", "layer_types=sliding_attention"})
_FUNCTIONS: dict[str, tuple[str, Parser, tuple[str, ...], frozenset[str]]] = {
    "qwen2_moe": ("Qwen2-MoE", _qwen2_moe, ("Qwen2MoeForCausalLM",),
                  _MOE_KEYS | {"num_experts", "num_experts_per_tok", "moe_intermediate_size", "decoder_sparse_step",
                               "mlp_only_layers", "shared_expert_intermediate_size"}),
    "deepseek_v2": ("DeepSeek-V2", _deepseek, ("DeepseekV2ForCausalLM",),
                    frozenset({"layer_types=full_attention", "n_routed_experts", "num_experts_per_tok",
                               "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq",
                               "q_lora_rank", "kv_lora_rank"})),
    "deepseek_v3": ("DeepSeek-V3", _deepseek, ("DeepseekV3ForCausalLM",),
                    frozenset({"layer_types=full_attention", "n_routed_experts", "num_experts_per_tok",
                               "moe_intermediate_size", "n_shared_experts", "first_k_dense_replace", "moe_layer_freq",
                               "q_lora_rank", "kv_lora_rank"})),
    "gpt_oss": ("gpt-oss", _gpt_oss, ("GptOssForCausalLM",),
                _MOE_KEYS | {"num_local_experts", "num_experts_per_tok", "experts_per_token"}),
}

FAMILY_NAMES: dict[str, str] = {
    **{mt: d.display for mt, d in DECODERS.items()},
    **{mt: row[0] for mt, row in _FUNCTIONS.items()},
}

PARSERS: dict[str, Parser] = {
    **{mt: parser(mt, d) for mt, d in DECODERS.items()},
    **{mt: row[1] for mt, row in _FUNCTIONS.items()},
}

READS: dict[str, frozenset[str]] = {
    **{mt: reads_of(d) for mt, d in DECODERS.items()},
    **{mt: row[3] for mt, row in _FUNCTIONS.items()},
}
"""Per model type, the count-changing config keys its parser reads (``layer_types=VALUE`` for layer types)."""

CLASSES: dict[str, str] = {
    **{cls: mt for mt, d in DECODERS.items() for cls in d.classes},
    **{cls: mt for mt, row in _FUNCTIONS.items() for cls in row[2]},
}
"""``architectures`` class name → the model type it is loaded as."""
