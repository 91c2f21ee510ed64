"""Mixture-of-experts decoder families: routed (and shared) experts, MLA for DeepSeek."""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
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
from anchorgpu.architectures.spec import MlaSpec, ModelSpec, MoeSpec


def _mixtral(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    n_exp = r.size("num_local_experts")
    top_k = read_top_k(r, n_exp)
    embeddings(t, c, tied=tied)
    gqa(t, c)
    t.linear("router", "router", c.hidden, n_exp, count=c.layers)
    gated_mlp(t, c.hidden, ffn, count=c.layers * n_exp, active_count=c.layers * top_k, component="experts",
               prefix="expert_")
    rms_norms(t, c, per_layer=2)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                  num_moe_layers=c.layers)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=0, windows=uniform_window(r, c), moe=moe)


def _qwen_moe(r: ConfigReader, name: str, source: str, *, qwen3: bool) -> ModelSpec:
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
    if qwen3:
        bias = r.flag("attention_bias", default=False)
        gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    else:
        gqa(t, c, qkv_bias=r.flag("qkv_bias", default=True))
    gated_mlp(t, c.hidden, dense_ffn, count=dense_layers)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
               component="experts", prefix="expert_")
    shared = 0
    if not qwen3:
        shared_ffn = r.size("shared_expert_intermediate_size", default=5632)
        gated_mlp(t, c.hidden, shared_ffn, count=moe_layers, component="shared_experts", prefix="shared_")
        t.linear("router", "shared_expert_gate", c.hidden, 1, count=moe_layers)
        shared = 1
    rms_norms(t, c, per_layer=2)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=shared,
                  expert_intermediate_size=expert_ffn, num_moe_layers=moe_layers)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=qwen_windows(r, c), moe=moe)


def _qwen2_moe(r: ConfigReader, name: str, source: str) -> ModelSpec:
    return _qwen_moe(r, name, source, qwen3=False)


def _qwen3_moe(r: ConfigReader, name: str, source: str) -> ModelSpec:
    return _qwen_moe(r, name, source, qwen3=True)


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
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                  num_moe_layers=c.layers)
    return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=0, windows=windows, moe=moe)


FAMILY_NAMES: dict[str, str] = {
    "mixtral": "Mixtral",
    "qwen2_moe": "Qwen2-MoE",
    "qwen3_moe": "Qwen3-MoE",
    "deepseek_v2": "DeepSeek-V2",
    "deepseek_v3": "DeepSeek-V3",
    "gpt_oss": "gpt-oss",
}

PARSERS: dict[str, Parser] = {
    "mixtral": _mixtral,
    "qwen2_moe": _qwen2_moe,
    "qwen3_moe": _qwen3_moe,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt_oss": _gpt_oss,
}
