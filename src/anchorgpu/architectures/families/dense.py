"""Dense decoder families: a :class:`Decoder` row each, or a small function where a row cannot say it."""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Core,
    Parser,
    assemble_dense,
    core_shape,
    embeddings,
    every,
    gqa,
    layer_norms,
    plain_mlp,
    qwen_windows,
    uniform_window,
    windows_from_types,
    with_note,
)
from anchorgpu.architectures.families._describe import Decoder, parser, reads_of
from anchorgpu.architectures.spec import ModelSpec


def _gemma3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """The multimodal Gemma 3 config: its ``text_config`` is the language model counted here."""
    if "text_config" not in r.data:
        return _GEMMA3_TEXT(r, name, source)
    spec = _GEMMA3_TEXT(r.sub("text_config"), name, source)
    return with_note(spec, "text model only: the vision tower and projector are not counted")


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


def _bloom(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """BLOOM: ALiBi positions (no table), LayerNorms with biases (one more after the embeddings), 4h MLP."""
    heads = ("n_head", "num_attention_heads")
    c = core_shape(r, hidden=("n_embed", "hidden_size"), layers=("n_layer", "num_hidden_layers"), heads=heads, kv=heads,
                   context=("seq_length",), context_default=2048)
    c = replace(c, head_dim=c.hidden // c.heads, context_assumed=False)  # BloomAttention: hidden / heads, always
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    ffn = 4 * c.hidden  # BloomMLP: dense_h_to_4h, whatever the config says
    embeddings(t, c, tied=tied)
    t.vector("norms", 2 * c.hidden)  # word_embeddings_layernorm
    gqa(t, c, qkv_bias=True, o_bias=True, fused_qkv=True)  # query_key_value (h→3h) and dense
    plain_mlp(t, c.hidden, ffn, count=c.layers, bias=True)
    layer_norms(t, c, per_layer=2)
    if not r.has("seq_length"):
        t.notes.append("BLOOM has no position table (ALiBi): planned at its 2,048-token training length")
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False,
                          model_type="bloom")


# ------------------------------------------------------------------------------------------ window rules


def _exaone4_windows(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """EXAONE 4: ``layer_types``, else ``sliding_window_pattern`` (every n-th layer full, or letters like "LLLG")."""
    if r.has("layer_types") or ("sliding_window" in r.data and not r.has("sliding_window")):
        return windows_from_types(r, c, ["full_attention"] * c.layers, window_default=None)
    pattern = r.data.get("sliding_window_pattern", 4)
    if isinstance(pattern, str) and pattern and set(pattern) <= {"L", "G"}:
        types = ["sliding_attention" if pattern[i % len(pattern)] == "L" else "full_attention" for i in range(c.layers)]
        return windows_from_types(r, c, types, window_default=4096)
    return every(4, pattern_key="sliding_window_pattern")(r, c)


def _smollm3_windows(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """SmolLM3: sliding only on the NoPE layers, and only with ``use_sliding_window`` and a ``sliding_window``."""
    interval = r.size("no_rope_layer_interval", default=4)
    rope = r.int_list("no_rope_layers") or tuple(int((i + 1) % interval != 0) for i in range(c.layers))
    if len(rope) != c.layers:
        raise r.fail("no_rope_layers", f"must list {c.layers} layers (num_hidden_layers), got {len(rope)}")
    sliding = r.flag("use_sliding_window", default=False) and r.has("sliding_window")
    types = ["sliding_attention" if sliding and not use_rope else "full_attention" for use_rope in rope]
    return windows_from_types(r, c, types, window_default=None)


# ----------------------------------------------------------------------------------------- family rows

_SLIDING = frozenset({"full_attention", "sliding_attention"})
_ATTN_BIAS = ("attention_bias", False)

DECODERS: dict[str, Decoder] = {
    "llama": Decoder(display="Llama", classes=("LlamaForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS,
                     o_bias=_ATTN_BIAS, mlp_bias=("mlp_bias", False)),
    "mistral": Decoder(display="Mistral", classes=("MistralForCausalLM",), context=131072, windows=uniform_window),
    "qwen2": Decoder(display="Qwen2", classes=("Qwen2ForCausalLM",), context=32768, qkv_bias=True, windows=qwen_windows,
                     layer_types=_SLIDING),
    "qwen3": Decoder(display="Qwen3", classes=("Qwen3ForCausalLM",), context=32768, head_dim=128, qkv_bias=_ATTN_BIAS,
                     o_bias=_ATTN_BIAS, qk_norm="head", windows=qwen_windows, layer_types=_SLIDING),
    "gemma": Decoder(display="Gemma", classes=("GemmaForCausalLM",), tie=True, context=8192, head_dim=256,
                     qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS),
    "gemma2": Decoder(display="Gemma 2", classes=("Gemma2ForCausalLM",), tie=True, context=8192, head_dim=256,
                      qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS, norms_per_layer=4, windows=every(2),
                      layer_types=_SLIDING),
    "gemma3_text": Decoder(display="Gemma 3", classes=("Gemma3ForCausalLM",), tie=True, context=131072, head_dim=256,
                           vocab=262_208, qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS, qk_norm="head", norms_per_layer=4,
                           windows=every(6, pattern_key="sliding_window_pattern"), layer_types=_SLIDING),
    "phi3": Decoder(display="Phi-3", classes=("Phi3ForCausalLM",), context=4096, fused_qkv=True, fused_gate_up=True,
                    windows=uniform_window),
    "starcoder2": Decoder(display="StarCoder2", classes=("Starcoder2ForCausalLM",), tie=True, context=4096,
                          qkv_bias=("use_bias", True), o_bias=("use_bias", True), mlp="plain",
                          mlp_bias=("use_bias", True), norm="layernorm", windows=uniform_window),
    # OLMo: LayerNorms without parameters; OLMo 2/3: RMS norms after attention and MLP, q/k norms over all heads.
    "olmo": Decoder(display="OLMo", classes=("OlmoForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS,
                    norm="none"),
    "olmo2": Decoder(display="OLMo 2", classes=("Olmo2ForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS,
                     o_bias=_ATTN_BIAS, qk_norm="width"),
    "olmo3": Decoder(display="OLMo 3", classes=("Olmo3ForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS,
                     o_bias=_ATTN_BIAS, qk_norm="width", windows=every(4), layer_types=_SLIDING),
    "granite": Decoder(display="Granite", classes=("GraniteForCausalLM",), context=2048, qkv_bias=_ATTN_BIAS,
                       o_bias=_ATTN_BIAS, mlp_bias=("mlp_bias", False)),
    # Cohere: one bias-free LayerNorm per layer (attention and MLP in parallel).
    "cohere": Decoder(display="Command R", classes=("CohereForCausalLM",), tie=True, context=8192, qkv_bias=_ATTN_BIAS,
                      o_bias=_ATTN_BIAS, qk_norm="width", qk_norm_if=("use_qk_norm", False), norms_per_layer=1),
    "cohere2": Decoder(display="Command A", classes=("Cohere2ForCausalLM",), tie=True, context=8192, qkv_bias=_ATTN_BIAS, o_bias=_ATTN_BIAS, norms_per_layer=1,
                       windows=every(4, pattern_key="sliding_window_pattern"), layer_types=_SLIDING),
    "glm4": Decoder(display="GLM-4", classes=("Glm4ForCausalLM",), context=131072, head_dim=128,
                    qkv_bias=("attention_bias", True), fused_gate_up=True, norms_per_layer=4),
    "ernie4_5": Decoder(display="ERNIE 4.5", classes=("Ernie4_5ForCausalLM",), tie=True, context=131072, head_dim=128,
                        qkv_bias=("use_bias", False), o_bias=("use_bias", False), mlp_bias=("use_bias", False)),
    "exaone4": Decoder(display="EXAONE 4.0", classes=("Exaone4ForCausalLM",), context=2048, qk_norm="head",
                       windows=_exaone4_windows, layer_types=_SLIDING),
    "smollm3": Decoder(display="SmolLM3", classes=("SmolLM3ForCausalLM",), tie=True, context=32768, qkv_bias=_ATTN_BIAS,
                       o_bias=_ATTN_BIAS, mlp_bias=("mlp_bias", False), windows=_smollm3_windows, layer_types=_SLIDING),
}

_GEMMA3_TEXT = parser("gemma3_text", DECODERS["gemma3_text"])

# Families whose modules a row cannot state: small functions, with the keys they read stated beside them.
_FUNCTIONS: dict[str, tuple[str, Parser, tuple[str, ...], frozenset[str]]] = {
    "gemma3": ("Gemma 3", _gemma3, ("Gemma3ForConditionalGeneration",),
               frozenset({"text_config", "vision_config", *(f"layer_types={t}" for t in _SLIDING)})),
    "gpt2": ("GPT-2", _gpt2, ("GPT2LMHeadModel",), frozenset({"layer_types=full_attention"})),
    "opt": ("OPT", _opt, ("OPTForCausalLM",), frozenset({"layer_types=full_attention"})),
    "falcon": ("Falcon", _falcon, ("FalconForCausalLM",), frozenset({"layer_types=full_attention"})),
    "gpt_neox": ("GPT-NeoX", _gpt_neox, ("GPTNeoXForCausalLM",), frozenset({"layer_types=full_attention"})),
    "bloom": ("BLOOM", _bloom, ("BloomForCausalLM",), frozenset({"layer_types=full_attention"})),
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
