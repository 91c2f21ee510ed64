"""The blocks every family parser is built from: the shared core shape, embeddings, attention, MLPs,
norms, per-layer windows and the final assembly into a :class:`ModelSpec`.

Shapes: ``h`` hidden size, ``L`` layers, ``a`` query heads, ``kv`` KV heads, ``d`` head dim, ``V``
vocabulary, ``E`` routed experts, ``k`` experts per token. Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from anchorgpu.architectures._build import Component, Tally, finish
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.spec import MlaSpec, ModelSpec, MoeSpec

# The deepest published decoders have a few hundred layers; the per-layer window tuple is built from this.
MAX_LAYERS = 100_000

Parser = Callable[[ConfigReader, str, str], ModelSpec]
"""(config reader, model name, source) → the model's exact :class:`ModelSpec`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Core:
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


def core_shape(
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
) -> Core:
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
    return Core(
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


def embeddings(t: Tally, c: Core, *, tied: bool, width: int | None = None) -> None:
    """Token table ``V × h``; an untied LM head adds another ``h × V`` (no bias)."""
    t.table("embeddings", c.vocab, width or c.hidden)
    if not tied:
        t.table("head", c.vocab, width or c.hidden)


def gqa(
    t: Tally,
    c: Core,
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


def gated_mlp(
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


def plain_mlp(t: Tally, h: int, ffn: int, *, count: int, bias: bool) -> None:
    """Two-matrix MLP: up ``h→ffn``, down ``ffn→h``."""
    t.linear("mlp", "up", h, ffn, count=count, bias=bias)
    t.linear("mlp", "down", ffn, h, count=count, bias=bias)


def rms_norms(t: Tally, c: Core, *, per_layer: int) -> None:
    """RMSNorm has one weight vector of ``h``: ``per_layer`` per block plus the final norm."""
    t.vector("norms", c.hidden, count=per_layer * c.layers + 1)


def layer_norms(t: Tally, c: Core, *, per_layer: int, final: bool = True) -> None:
    """LayerNorm has weight and bias (``2h``)."""
    t.vector("norms", 2 * c.hidden, count=per_layer * c.layers + (1 if final else 0))


# --------------------------------------------------------------------------------------------- windows


def uniform_window(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """Mistral/Mixtral/Phi-3/StarCoder2: ``sliding_window`` (when set) on every layer."""
    return (r.opt_size("sliding_window"),) * c.layers


def windows_from_types(
    r: ConfigReader, c: Core, default_types: list[str], *, window_default: int | None, chunk: int | None = None
) -> tuple[int | None, ...]:
    """Per-layer windows from ``layer_types`` (or the family's default pattern).

    ``chunked_attention`` layers (Llama 4) attend within chunks of ``chunk`` tokens: their cache holds at most
    one chunk, so they count as a window of that size.
    """
    types = r.str_list("layer_types")
    if types is None:
        types_list = default_types
    else:
        if len(types) != c.layers:
            raise r.fail("layer_types", f"must list {c.layers} layers (num_hidden_layers), got {len(types)}")
        types_list = list(types)
    # "sliding_window": null, set on purpose, leaves transformers' sliding layers without a window (their attention
    # and cache span every token); only an absent key takes the family's default window.
    unwindowed = "sliding_window" in r.data and r.data["sliding_window"] is None
    windows: list[int | None] = []
    for kind in types_list:
        if kind == "full_attention":
            windows.append(None)
        elif kind == "sliding_attention":
            windows.append(None if unwindowed else r.size("sliding_window", default=window_default))
        elif kind == "chunked_attention" and chunk is not None:
            windows.append(chunk)
        else:
            raise r.fail("layer_types", f"has an unsupported layer type {kind!r}")
    return tuple(windows)


def alternating(c: Core, every: int) -> list[str]:
    """transformers' default: layer i is sliding unless (i + 1) is a multiple of ``every``."""
    return ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(c.layers)]


def every(
    n: int, *, pattern_key: str | None = None, window_default: int | None = 4096
) -> Callable[[ConfigReader, Core], tuple[int | None, ...]]:
    """Window rule: ``layer_types`` when given, else sliding layers with every ``n``-th layer full.

    ``pattern_key`` names the config key that may change ``n`` (Gemma 3, Cohere 2: ``sliding_window_pattern``).
    """

    def rule(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
        period = r.size(pattern_key, default=n) if pattern_key else n
        return windows_from_types(r, c, alternating(c, period), window_default=window_default)

    return rule


def qwen_windows(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """Qwen2/Qwen3: sliding window only when ``use_sliding_window``, on layers ≥ ``max_window_layers``."""
    if not r.flag("use_sliding_window", default=False):
        return (None,) * c.layers
    window = r.size("sliding_window", default=4096)
    first = r.size("max_window_layers", default=28, minimum=0)
    default = ["sliding_attention" if i >= first else "full_attention" for i in range(c.layers)]
    return windows_from_types(r, c, default, window_default=window)


# ------------------------------------------------------------------------------------------- assembly


def read_top_k(r: ConfigReader, n_experts: int, *, keys: tuple[str, ...] = ("num_experts_per_tok",)) -> int:
    k = r.size(*keys)
    if k > n_experts:
        raise r.fail(keys[0], f"must not exceed the number of experts ({n_experts}), got {k}")
    return k


def note_context(t: Tally, c: Core) -> None:
    if c.context_assumed:
        t.notes.append(f"max_position_embeddings is not in the config: transformers' default of {c.context:,} tokens assumed")


def with_note(spec: ModelSpec, note: str) -> ModelSpec:
    return replace(spec, notes=(*spec.notes, note))


def assemble_dense(
    t: Tally,
    r: ConfigReader,
    c: Core,
    name: str,
    source: str,
    *,
    tied: bool,
    ffn: int,
    windows: tuple[int | None, ...],
    gated: bool = True,
    model_type: str | None = None,
    moe: MoeSpec | None = None,
    mla: MlaSpec | None = None,
) -> ModelSpec:
    """The spec of a decoder whose blocks are tallied in ``t`` (``ffn``: the dense MLP width, 0 when every layer is MoE)."""
    mt = model_type or r.text("model_type")
    note_context(t, c)
    return finish(
        t, name=name, model_type=mt, family=mt, num_layers=c.layers, hidden_size=c.hidden,
        intermediate_size=ffn, num_attention_heads=c.heads, num_kv_heads=c.kv_heads, head_dim=c.head_dim,
        vocab_size=c.vocab, max_context_tokens=c.context, tie_word_embeddings=tied, gated_mlp=gated,
        layer_windows=windows, source=source, mla=mla, moe=moe,
    )


def assemble_moe(
    t: Tally,
    r: ConfigReader,
    c: Core,
    name: str,
    source: str,
    *,
    tied: bool,
    dense_ffn: int,
    windows: tuple[int | None, ...],
    moe: MoeSpec,
    mla: MlaSpec | None = None,
    model_type: str | None = None,
) -> ModelSpec:
    """A mixture-of-experts decoder: :func:`assemble_dense` with its experts (gated MLPs throughout)."""
    return assemble_dense(t, r, c, name, source, tied=tied, ffn=dense_ffn, windows=windows, model_type=model_type,
                          moe=moe, mla=mla)
