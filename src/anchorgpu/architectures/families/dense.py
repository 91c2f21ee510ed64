"""Dense decoder families: one small parser per Hugging Face ``model_type``."""

from __future__ import annotations

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Parser,
    alternating,
    assemble_dense,
    core_shape,
    embeddings,
    gated_mlp,
    gqa,
    layer_norms,
    plain_mlp,
    qwen_windows,
    rms_norms,
    uniform_window,
    windows_from_types,
    with_note,
)
from anchorgpu.architectures.spec import ModelSpec


def _llama(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    gated_mlp(t, c.hidden, ffn, count=c.layers, bias=r.flag("mlp_bias", default=False))
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers)


def _mistral(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c)
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=uniform_window(r, c))


def _qwen2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=True)  # Qwen2 always has q/k/v biases, never an o bias
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=qwen_windows(r, c))


def _qwen3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, head_dim_default=128)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=qwen_windows(r, c))


def _gemma(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, head_dim_default=256)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers)


def _gemma2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, head_dim_default=256)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=4)  # input, post-attention, pre- and post-feedforward
    windows = windows_from_types(r, c, alternating(c, 2), window_default=4096)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=windows)


def _gemma3_text(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, head_dim_default=256, vocab_default=262_208, model_type="gemma3_text")
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    gated_mlp(t, c.hidden, ffn, count=c.layers)
    rms_norms(t, c, per_layer=4)
    pattern = r.size("sliding_window_pattern", default=6)
    windows = windows_from_types(r, c, alternating(c, pattern), window_default=4096)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=windows, model_type="gemma3_text")


def _gemma3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """The multimodal Gemma 3 config: its ``text_config`` is the language model counted here."""
    if "text_config" not in r.data:
        return _gemma3_text(r, name, source)
    spec = _gemma3_text(r.sub("text_config"), name, source)
    return with_note(spec, "text model only: the vision tower and projector are not counted")


def _phi3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, fused_qkv=True)  # one qkv_proj: same count as separate q, k, v
    gated_mlp(t, c.hidden, ffn, count=c.layers, fused=True)  # one gate_up_proj
    rms_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=uniform_window(r, c))


def _starcoder2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("use_bias", default=True)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    layer_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=uniform_window(r, c), gated=False)


def _gpt2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, hidden=("n_embd",), layers=("n_layer",), heads=("n_head",), kv=("n_head",), context=("n_positions",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    ffn = r.size("n_inner", default=4 * c.hidden)
    embeddings(t, c, tied=tied)
    t.table("position_embeddings", c.context, c.hidden)
    gqa(t, c, qkv_bias=True, o_bias=True, fused_qkv=True)  # c_attn (h→3h) and c_proj, both with biases
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=True)
    layer_norms(t, c, per_layer=2)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _opt(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, kv=("num_attention_heads",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("enable_bias", default=True)
    ffn = r.size("ffn_dim")
    proj = r.size("word_embed_proj_dim", default=c.hidden)
    embeddings(t, c, tied=tied, width=proj)
    t.table("position_embeddings", c.context + 2, c.hidden)  # OPT offsets positions by 2
    if proj != c.hidden:
        t.table("other", 2 * proj, c.hidden)
        t.notes.append(f"other: project_in and project_out between the {proj}-wide embeddings and the {c.hidden}-wide blocks")
    gqa(t, c, qkv_bias=bias, o_bias=bias)
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    if r.flag("layer_norm_elementwise_affine", default=True):
        final = r.flag("do_layer_norm_before", default=True) and not r.flag("_remove_final_layer_norm", default=False)
        layer_norms(t, c, per_layer=2, final=final)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _falcon(r: ConfigReader, name: str, source: str) -> ModelSpec:
    new_arch = r.flag("new_decoder_architecture", default=False)
    multi_query = r.flag("multi_query", default=True)
    heads = r.size("num_attention_heads", "n_head")
    if new_arch:
        kv_heads = r.size("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv_heads = 1 if multi_query else heads
    c = core_shape(
        r, hidden=("hidden_size", "n_embed"), layers=("num_hidden_layers", "n_layer"), heads=("num_attention_heads", "n_head"),
        kv=("num_kv_heads", "n_head_kv"), kv_heads=kv_heads,
    )
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("bias", default=False)
    ffn = r.size("ffn_hidden_size", default=4 * c.hidden)
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias, fused_qkv=True)
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    ln_parallel = r.opt_size("num_ln_in_parallel_attn") or (2 if new_arch else 1)
    per_layer = 2 if (not r.flag("parallel_attn", default=True) or ln_parallel == 2) else 1
    layer_norms(t, c, per_layer=per_layer)
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _gpt_neox(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = core_shape(r, kv=("num_attention_heads",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=True)
    ffn = r.size("intermediate_size")
    embeddings(t, c, tied=tied)
    gqa(t, c, qkv_bias=bias, o_bias=bias, fused_qkv=True)
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=True)
    layer_norms(t, c, per_layer=2)
    rotary_pct = r.number("rotary_pct", default=0.25)
    t.notes.append(f"rotary embeddings on {rotary_pct:.0%} of each head (no parameters)")
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


FAMILY_NAMES: dict[str, str] = {
    "llama": "Llama",
    "mistral": "Mistral",
    "qwen2": "Qwen2",
    "qwen3": "Qwen3",
    "gemma": "Gemma",
    "gemma2": "Gemma 2",
    "gemma3": "Gemma 3",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
    "gpt2": "GPT-2",
    "opt": "OPT",
    "falcon": "Falcon",
    "gpt_neox": "GPT-NeoX",
    "starcoder2": "StarCoder2",
}

PARSERS: dict[str, Parser] = {
    "llama": _llama,
    "mistral": _mistral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "gpt2": _gpt2,
    "opt": _opt,
    "falcon": _falcon,
    "gpt_neox": _gpt_neox,
    "starcoder2": _starcoder2,
}
