"""One small parser per Hugging Face ``model_type``: config fields → exact parameter counts.

Each parser mirrors the modules transformers (5.24) builds for that model type — the same shapes,
biases, norms and defaults — so ``params_total`` equals ``sum(p.numel() for p in model.parameters())``
with tied embeddings counted once. Shapes: ``h`` hidden size, ``L`` layers, ``a`` query heads,
``kv`` KV heads, ``d`` head dim, ``V`` vocabulary, ``E`` routed experts, ``k`` experts per token.
Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from anchorgpu.architectures._build import Component, Tally, finish
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.spec import MlaSpec, ModelSpec, MoeSpec

__all__ = ["FAMILY_NAMES", "PARSERS", "Parser"]

Parser = Callable[[ConfigReader, str, str], ModelSpec]

# The deepest published decoders have a few hundred layers; the per-layer window tuple is built from this.
MAX_LAYERS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class _Core:
    """The shape every decoder shares."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    context: int
    context_assumed: bool = False  # the config did not say; transformers' default for the model type was used


# transformers' default ``max_position_embeddings`` per model type, used when a config leaves it out (noted).
# GPT-2 and OPT are absent on purpose: their learned position tables make the length a size that must be given.
_CONTEXT_DEFAULTS: dict[str, int] = {
    "llama": 2048, "mistral": 131072, "mixtral": 131072, "qwen2": 32768, "qwen2_moe": 32768, "qwen3": 32768,
    "qwen3_moe": 32768, "gemma": 8192, "gemma2": 8192, "gemma3": 131072, "gemma3_text": 131072, "phi3": 4096,
    "deepseek_v2": 2048, "deepseek_v3": 4096, "falcon": 2048, "gpt_neox": 2048, "gpt_oss": 131072, "starcoder2": 4096,
}


def _core(
    r: ConfigReader,
    *,
    hidden: tuple[str, ...] = ("hidden_size",),
    layers: tuple[str, ...] = ("num_hidden_layers",),
    heads: tuple[str, ...] = ("num_attention_heads",),
    kv: tuple[str, ...] = ("num_key_value_heads",),
    context: tuple[str, ...] = ("max_position_embeddings",),
    context_default: int | None = None,
    vocab_default: int | None = None,
    head_dim_default: int | None = None,
    kv_heads: int | None = None,
    model_type: str | None = None,
) -> _Core:
    h = r.size(*hidden)
    n_layers = r.size(*layers, maximum=MAX_LAYERS)
    n_heads = r.size(*heads)
    n_kv = kv_heads if kv_heads is not None else r.size(*kv, default=n_heads)
    if n_heads % n_kv:
        raise r.fail(kv[0], f"must divide num_attention_heads ({n_heads}), got {n_kv}")
    d = r.opt_size("head_dim")
    if d is None:
        if head_dim_default is not None:
            d = head_dim_default
        elif h % n_heads:
            raise r.fail(heads[0], f"must divide hidden_size ({h}) when head_dim is not given, got {n_heads}")
        else:
            d = h // n_heads
    mt = model_type or str(r.data.get("model_type", ""))
    if context_default is None:
        context_default = _CONTEXT_DEFAULTS.get(mt)
    return _Core(
        hidden=h,
        layers=n_layers,
        heads=n_heads,
        kv_heads=n_kv,
        head_dim=d,
        vocab=r.size("vocab_size", default=vocab_default),
        context=r.size(*context, default=context_default),
        context_assumed=not any(r.has(key) for key in context),
    )


# ---------------------------------------------------------------------------------------------- blocks


def _embeddings(t: Tally, c: _Core, *, tied: bool, width: int | None = None) -> None:
    """Token table ``V × h``; an untied LM head adds another ``h × V`` (no bias)."""
    t.table("embeddings", c.vocab, width or c.hidden)
    if not tied:
        t.table("head", c.vocab, width or c.hidden)


def _gqa(
    t: Tally,
    c: _Core,
    *,
    qkv_bias: bool = False,
    o_bias: bool = False,
    qk_norm: bool = False,
    fused_qkv: bool = False,
) -> None:
    """q ``h→a·d``, k/v ``h→kv·d``, o ``a·d→h`` per layer (+ RMS q/k norms of ``d`` when ``qk_norm``)."""
    q_out, kv_out, n = c.heads * c.head_dim, c.kv_heads * c.head_dim, c.layers
    if fused_qkv:
        t.linear("attention", "qkv", c.hidden, q_out + 2 * kv_out, count=n, bias=qkv_bias,
                 parts=(("q", q_out), ("k", kv_out), ("v", kv_out)))
    else:
        t.linear("attention", "q", c.hidden, q_out, count=n, bias=qkv_bias)
        t.linear("attention", "k", c.hidden, kv_out, count=n, bias=qkv_bias)
        t.linear("attention", "v", c.hidden, kv_out, count=n, bias=qkv_bias)
    t.linear("attention", "o", q_out, c.hidden, count=n, bias=o_bias)
    if qk_norm:
        t.vector("attention", c.head_dim, count=2 * n)


def _gated_mlp(
    t: Tally,
    h: int,
    ffn: int,
    *,
    count: int,
    active_count: int | None = None,
    bias: bool = False,
    fused: bool = False,
    component: Component = "mlp",
    prefix: str = "",
) -> None:
    """SwiGLU/GeGLU: gate and up ``h→ffn``, down ``ffn→h``."""
    if fused:
        t.linear(component, f"{prefix}gate_up", h, 2 * ffn, count=count, active_count=active_count, bias=bias,
                 parts=(("gate", ffn), ("up", ffn)))
    else:
        t.linear(component, f"{prefix}gate", h, ffn, count=count, active_count=active_count, bias=bias)
        t.linear(component, f"{prefix}up", h, ffn, count=count, active_count=active_count, bias=bias)
    t.linear(component, f"{prefix}down", ffn, h, count=count, active_count=active_count, bias=bias)


def _plain_mlp(t: Tally, h: int, ffn: int, *, count: int, bias: bool) -> None:
    """Two-matrix MLP: up ``h→ffn``, down ``ffn→h``."""
    t.linear("mlp", "up", h, ffn, count=count, bias=bias)
    t.linear("mlp", "down", ffn, h, count=count, bias=bias)


def _rms_norms(t: Tally, c: _Core, *, per_layer: int) -> None:
    """RMSNorm has one weight vector of ``h``: ``per_layer`` per block plus the final norm."""
    t.vector("norms", c.hidden, count=per_layer * c.layers + 1)


def _layer_norms(t: Tally, c: _Core, *, per_layer: int, final: bool = True) -> None:
    """LayerNorm has weight and bias (``2h``)."""
    t.vector("norms", 2 * c.hidden, count=per_layer * c.layers + (1 if final else 0))


# --------------------------------------------------------------------------------------------- windows


def _uniform_window(r: ConfigReader, c: _Core) -> tuple[int | None, ...]:
    """Mistral/Mixtral/Phi-3/StarCoder2: ``sliding_window`` (when set) on every layer."""
    return (r.opt_size("sliding_window"),) * c.layers


def _windows_from_types(
    r: ConfigReader, c: _Core, default_types: list[str], *, window_default: int | None
) -> tuple[int | None, ...]:
    """Per-layer windows from ``layer_types`` (or the family's default pattern)."""
    types = r.str_list("layer_types")
    if types is None:
        types_list = default_types
    else:
        if len(types) != c.layers:
            raise r.fail("layer_types", f"must list {c.layers} layers (num_hidden_layers), got {len(types)}")
        types_list = list(types)
    windows: list[int | None] = []
    for kind in types_list:
        if kind == "full_attention":
            windows.append(None)
        elif kind == "sliding_attention":
            window = r.size("sliding_window", default=window_default)
            windows.append(window)
        else:
            raise r.fail("layer_types", f"has an unsupported layer type {kind!r}")
    return tuple(windows)


def _alternating(c: _Core, every: int) -> list[str]:
    """transformers' default: layer i is sliding unless (i + 1) is a multiple of ``every``."""
    return ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(c.layers)]


def _qwen_windows(r: ConfigReader, c: _Core) -> tuple[int | None, ...]:
    """Qwen2/Qwen3: sliding window only when ``use_sliding_window``, on layers ≥ ``max_window_layers``."""
    if not r.flag("use_sliding_window", default=False):
        return (None,) * c.layers
    window = r.size("sliding_window", default=4096)
    first = r.size("max_window_layers", default=28, minimum=0)
    default = ["sliding_attention" if i >= first else "full_attention" for i in range(c.layers)]
    return _windows_from_types(r, c, default, window_default=window)


# -------------------------------------------------------------------------------------------- families


def _llama(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    _gated_mlp(t, c.hidden, ffn, count=c.layers, bias=r.flag("mlp_bias", default=False))
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers)


def _mistral(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c)
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=_uniform_window(r, c))


def _qwen2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=True)  # Qwen2 always has q/k/v biases, never an o bias
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=_qwen_windows(r, c))


def _qwen3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, head_dim_default=128)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=_qwen_windows(r, c))


def _gemma(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, head_dim_default=256)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers)


def _gemma2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, head_dim_default=256)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=4)  # input, post-attention, pre- and post-feedforward
    windows = _windows_from_types(r, c, _alternating(c, 2), window_default=4096)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=windows)


def _gemma3_text(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, head_dim_default=256, vocab_default=262_208, model_type="gemma3_text")
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("attention_bias", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    _gated_mlp(t, c.hidden, ffn, count=c.layers)
    _rms_norms(t, c, per_layer=4)
    pattern = r.size("sliding_window_pattern", default=6)
    windows = _windows_from_types(r, c, _alternating(c, pattern), window_default=4096)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=windows, model_type="gemma3_text")


def _gemma3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """The multimodal Gemma 3 config: its ``text_config`` is the language model counted here."""
    if "text_config" not in r.data:
        return _gemma3_text(r, name, source)
    spec = _gemma3_text(r.sub("text_config"), name, source)
    return _replace_notes(spec, "text model only: the vision tower and projector are not counted")


def _phi3(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, fused_qkv=True)  # one qkv_proj: same count as separate q, k, v
    _gated_mlp(t, c.hidden, ffn, count=c.layers, fused=True)  # one gate_up_proj
    _rms_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=_uniform_window(r, c))


def _starcoder2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("use_bias", default=True)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    _plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    _layer_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=_uniform_window(r, c), gated=False)


def _gpt2(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, hidden=("n_embd",), layers=("n_layer",), heads=("n_head",), kv=("n_head",), context=("n_positions",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    ffn = r.size("n_inner", default=4 * c.hidden)
    _embeddings(t, c, tied=tied)
    t.table("position_embeddings", c.context, c.hidden)
    _gqa(t, c, qkv_bias=True, o_bias=True, fused_qkv=True)  # c_attn (h→3h) and c_proj, both with biases
    _plain_mlp(t, c.hidden, ffn, count=c.layers, bias=True)
    _layer_norms(t, c, per_layer=2)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _opt(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, kv=("num_attention_heads",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("enable_bias", default=True)
    ffn = r.size("ffn_dim")
    proj = r.size("word_embed_proj_dim", default=c.hidden)
    _embeddings(t, c, tied=tied, width=proj)
    t.table("position_embeddings", c.context + 2, c.hidden)  # OPT offsets positions by 2
    if proj != c.hidden:
        t.table("other", 2 * proj, c.hidden)
        t.notes.append(f"other: project_in and project_out between the {proj}-wide embeddings and the {c.hidden}-wide blocks")
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    _plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    if r.flag("layer_norm_elementwise_affine", default=True):
        final = r.flag("do_layer_norm_before", default=True) and not r.flag("_remove_final_layer_norm", default=False)
        _layer_norms(t, c, per_layer=2, final=final)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _falcon(r: ConfigReader, name: str, source: str) -> ModelSpec:
    new_arch = r.flag("new_decoder_architecture", default=False)
    multi_query = r.flag("multi_query", default=True)
    heads = r.size("num_attention_heads", "n_head")
    if new_arch:
        kv_heads = r.size("num_kv_heads", "n_head_kv", default=heads)
    else:
        kv_heads = 1 if multi_query else heads
    c = _core(
        r, hidden=("hidden_size", "n_embed"), layers=("num_hidden_layers", "n_layer"), heads=("num_attention_heads", "n_head"),
        kv=("num_kv_heads", "n_head_kv"), kv_heads=kv_heads,
    )
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=True)
    bias = r.flag("bias", default=False)
    ffn = r.size("ffn_hidden_size", default=4 * c.hidden)
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias, fused_qkv=True)
    _plain_mlp(t, c.hidden, ffn, count=c.layers, bias=bias)
    ln_parallel = r.opt_size("num_ln_in_parallel_attn") or (2 if new_arch else 1)
    per_layer = 2 if (not r.flag("parallel_attn", default=True) or ln_parallel == 2) else 1
    _layer_norms(t, c, per_layer=per_layer)
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


def _gpt_neox(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, kv=("num_attention_heads",))
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=True)
    ffn = r.size("intermediate_size")
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias, fused_qkv=True)
    _plain_mlp(t, c.hidden, ffn, count=c.layers, bias=True)
    _layer_norms(t, c, per_layer=2)
    rotary_pct = r.number("rotary_pct", default=0.25)
    t.notes.append(f"rotary embeddings on {rotary_pct:.0%} of each head (no parameters)")
    return _dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=(None,) * c.layers, gated=False)


# ------------------------------------------------------------------------------------------ MoE families


def _mixtral(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    ffn = r.size("intermediate_size")
    n_exp = r.size("num_local_experts")
    top_k = _top_k(r, n_exp)
    _embeddings(t, c, tied=tied)
    _gqa(t, c)
    t.linear("router", "router", c.hidden, n_exp, count=c.layers)
    _gated_mlp(t, c.hidden, ffn, count=c.layers * n_exp, active_count=c.layers * top_k, component="experts",
               prefix="expert_")
    _rms_norms(t, c, per_layer=2)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                  num_moe_layers=c.layers)
    return _moe(t, r, c, name, source, tied=tied, dense_ffn=0, windows=_uniform_window(r, c), moe=moe)


def _qwen_moe(r: ConfigReader, name: str, source: str, *, qwen3: bool) -> ModelSpec:
    c = _core(r)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    n_exp = r.size("num_experts")
    top_k = _top_k(r, n_exp)
    expert_ffn = r.size("moe_intermediate_size")
    step = r.size("decoder_sparse_step", default=1)
    dense_only = set(r.int_list("mlp_only_layers"))
    moe_layers = sum(1 for i in range(c.layers) if i not in dense_only and (i + 1) % step == 0)
    dense_layers = c.layers - moe_layers
    dense_ffn = r.size("intermediate_size") if dense_layers else 0
    _embeddings(t, c, tied=tied)
    if qwen3:
        bias = r.flag("attention_bias", default=False)
        _gqa(t, c, qkv_bias=bias, o_bias=bias, qk_norm=True)
    else:
        _gqa(t, c, qkv_bias=r.flag("qkv_bias", default=True))
    _gated_mlp(t, c.hidden, dense_ffn, count=dense_layers)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    _gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
               component="experts", prefix="expert_")
    shared = 0
    if not qwen3:
        shared_ffn = r.size("shared_expert_intermediate_size", default=5632)
        _gated_mlp(t, c.hidden, shared_ffn, count=moe_layers, component="shared_experts", prefix="shared_")
        t.linear("router", "shared_expert_gate", c.hidden, 1, count=moe_layers)
        shared = 1
    _rms_norms(t, c, per_layer=2)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=shared,
                  expert_intermediate_size=expert_ffn, num_moe_layers=moe_layers)
    return _moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=_qwen_windows(r, c), moe=moe)


def _qwen2_moe(r: ConfigReader, name: str, source: str) -> ModelSpec:
    return _qwen_moe(r, name, source, qwen3=False)


def _qwen3_moe(r: ConfigReader, name: str, source: str) -> ModelSpec:
    return _qwen_moe(r, name, source, qwen3=True)


def _deepseek(r: ConfigReader, name: str, source: str) -> ModelSpec:
    """DeepSeek-V2/V3: multi-head latent attention, dense first layers, shared + routed experts."""
    c = _core(r)
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
    top_k = _top_k(r, n_exp)
    expert_ffn = r.size("moe_intermediate_size")
    n_shared = r.size("n_shared_experts", default=0, minimum=0)
    _gated_mlp(t, c.hidden, dense_ffn, count=first_dense)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    _gated_mlp(t, c.hidden, expert_ffn, count=moe_layers * n_exp, active_count=moe_layers * top_k,
               component="experts", prefix="expert_")
    if n_shared:
        _gated_mlp(t, c.hidden, expert_ffn * n_shared, count=moe_layers, component="shared_experts", prefix="shared_")
    _embeddings(t, c, tied=tied)
    _rms_norms(t, c, per_layer=2)
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
    return _moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=(None,) * n, moe=moe, mla=mla)


def _gpt_oss(r: ConfigReader, name: str, source: str) -> ModelSpec:
    c = _core(r, head_dim_default=64)
    t = Tally()
    tied = r.flag("tie_word_embeddings", default=False)
    bias = r.flag("attention_bias", default=True)
    ffn = r.size("intermediate_size")
    n_exp = r.size("num_local_experts")
    top_k = _top_k(r, n_exp, keys=("num_experts_per_tok", "experts_per_token"))
    _embeddings(t, c, tied=tied)
    _gqa(t, c, qkv_bias=bias, o_bias=bias)
    t.vector("other", c.heads, count=c.layers)
    t.notes.append("other: one learned attention-sink logit per head and layer")
    t.linear("router", "router", c.hidden, n_exp, count=c.layers, bias=True)
    _gated_mlp(t, c.hidden, ffn, count=c.layers * n_exp, active_count=c.layers * top_k, bias=True, fused=True,
               component="experts", prefix="expert_")
    _rms_norms(t, c, per_layer=2)
    windows = _windows_from_types(r, c, _alternating(c, 2), window_default=128)
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=0, expert_intermediate_size=ffn,
                  num_moe_layers=c.layers)
    return _moe(t, r, c, name, source, tied=tied, dense_ffn=0, windows=windows, moe=moe)


# ------------------------------------------------------------------------------------------- assembly


def _top_k(r: ConfigReader, n_experts: int, *, keys: tuple[str, ...] = ("num_experts_per_tok",)) -> int:
    k = r.size(*keys)
    if k > n_experts:
        raise r.fail(keys[0], f"must not exceed the number of experts ({n_experts}), got {k}")
    return k


def _note_context(t: Tally, c: _Core) -> None:
    if c.context_assumed:
        t.notes.append(f"max_position_embeddings is not in the config: transformers' default of {c.context:,} tokens assumed")


def _replace_notes(spec: ModelSpec, note: str) -> ModelSpec:
    return replace(spec, notes=(*spec.notes, note))


def _dense(
    t: Tally,
    r: ConfigReader,
    c: _Core,
    name: str,
    source: str,
    *,
    tied: bool,
    ffn: int,
    windows: tuple[int | None, ...],
    gated: bool = True,
    model_type: str | None = None,
) -> ModelSpec:
    mt = model_type or r.text("model_type")
    _note_context(t, c)
    return finish(
        t, name=name, model_type=mt, family=FAMILY_NAMES.get(mt, mt), num_layers=c.layers, hidden_size=c.hidden,
        intermediate_size=ffn, num_attention_heads=c.heads, num_kv_heads=c.kv_heads, head_dim=c.head_dim,
        vocab_size=c.vocab, max_context_tokens=c.context, tie_word_embeddings=tied, gated_mlp=gated,
        layer_windows=windows, source=source,
    )


def _moe(
    t: Tally,
    r: ConfigReader,
    c: _Core,
    name: str,
    source: str,
    *,
    tied: bool,
    dense_ffn: int,
    windows: tuple[int | None, ...],
    moe: MoeSpec,
    mla: MlaSpec | None = None,
) -> ModelSpec:
    mt = r.text("model_type")
    _note_context(t, c)
    return finish(
        t, name=name, model_type=mt, family=FAMILY_NAMES.get(mt, mt), num_layers=c.layers, hidden_size=c.hidden,
        intermediate_size=dense_ffn, num_attention_heads=c.heads, num_kv_heads=c.kv_heads, head_dim=c.head_dim,
        vocab_size=c.vocab, max_context_tokens=c.context, tie_word_embeddings=tied, gated_mlp=True,
        layer_windows=windows, source=source, mla=mla, moe=moe,
    )


FAMILY_NAMES: dict[str, str] = {
    "llama": "Llama",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "qwen2": "Qwen2",
    "qwen2_moe": "Qwen2-MoE",
    "qwen3": "Qwen3",
    "qwen3_moe": "Qwen3-MoE",
    "gemma": "Gemma",
    "gemma2": "Gemma 2",
    "gemma3": "Gemma 3",
    "gemma3_text": "Gemma 3",
    "phi3": "Phi-3",
    "deepseek_v2": "DeepSeek-V2",
    "deepseek_v3": "DeepSeek-V3",
    "gpt2": "GPT-2",
    "opt": "OPT",
    "falcon": "Falcon",
    "gpt_neox": "GPT-NeoX",
    "gpt_oss": "gpt-oss",
    "starcoder2": "StarCoder2",
}

PARSERS: dict[str, Parser] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "gemma": _gemma,
    "gemma2": _gemma2,
    "gemma3": _gemma3,
    "gemma3_text": _gemma3_text,
    "phi3": _phi3,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt2": _gpt2,
    "opt": _opt,
    "falcon": _falcon,
    "gpt_neox": _gpt_neox,
    "gpt_oss": _gpt_oss,
    "starcoder2": _starcoder2,
}
