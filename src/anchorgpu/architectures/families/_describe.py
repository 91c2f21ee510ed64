"""Decoder families as data: the blocks a ``model_type`` builds, their widths and the config keys that set them.

A :class:`Decoder` row states how transformers (5.24) builds one family's language model — norm kind and
count, attention biases and q/k norms, fused projections, MLP kind, tied-embedding and head-dim defaults,
the per-layer window rule and, for mixture-of-experts families, an :class:`Experts` row (routed and shared
experts, which layers are MoE). :func:`parser` turns a row into the family's parser, so a new family is a
row plus, at most, a small window or layer rule. Families too odd for a row stay small functions
(GPT-2, OPT, Falcon, BLOOM, DeepSeek, gpt-oss). Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import (
    Core,
    Parser,
    assemble_dense,
    assemble_moe,
    core_shape,
    embeddings,
    gated_mlp,
    gqa,
    plain_mlp,
    read_top_k,
)
from anchorgpu.architectures.spec import ModelSpec, MoeSpec

__all__ = ["Decoder", "Experts", "Flag", "MoeLayers", "WindowRule", "full_attention", "parser", "read_flag", "reads_of"]

Flag = bool | tuple[str, bool]
"""A fixed choice, or ``(config key, transformers' default)``."""

WindowRule = Callable[[ConfigReader, Core], tuple[int | None, ...]]
"""(config, core shape) → the attention window of each layer (None: full attention)."""

MoeLayers = Callable[[ConfigReader, Core], tuple[bool, ...]]
"""(config, core shape) → for each layer, whether its MLP is a mixture of experts."""

NormKind = Literal["rms", "layernorm", "none"]
# Values per norm and per unit of width: RMSNorm and bias-free LayerNorm (Cohere) hold a weight; LayerNorm a
# weight and a bias; OLMo's LayerNorm has no parameters at all.
_NORM_VALUES: dict[NormKind, int] = {"rms": 1, "layernorm": 2, "none": 0}

QkNorm = Literal["none", "head", "width"]
"""q/k norms: ``head`` one weight of ``head_dim`` each (Qwen3, Gemma 3, EXAONE 4); ``width`` over all heads
(``a·d`` and ``kv·d``: OLMo 2, Cohere's ``use_qk_norm``)."""


def read_flag(r: ConfigReader, value: Flag) -> bool:
    return value if isinstance(value, bool) else r.flag(value[0], default=value[1])


def full_attention(r: ConfigReader, c: Core) -> tuple[int | None, ...]:
    """Every layer attends to the whole context."""
    return (None,) * c.layers


def every_layer(r: ConfigReader, c: Core) -> tuple[bool, ...]:
    """Every layer's MLP is a mixture of experts."""
    return (True,) * c.layers


@dataclass(frozen=True, slots=True, kw_only=True)
class Experts:
    """The mixture-of-experts MLP of a family: routed experts, shared experts and which layers have them."""

    count: str | tuple[str, ...]  # key (or aliases, first set wins): routed experts per MoE layer
    top_k: str | tuple[str, ...] = "num_experts_per_tok"  # key (or aliases): experts each token is sent to
    width: str = "moe_intermediate_size"  # key: one routed expert's inner width
    shared: int | tuple[str, int] = 0  # shared experts per MoE layer: fixed, or (key, transformers' default)
    # Shared experts are built as one MLP of ``routed width × shared`` (GLM-4.5, ERNIE 4.5, Llama 4).
    layers: MoeLayers = every_layer
    dense_width: str = "intermediate_size"  # key: the MLP width of the layers that are not MoE
    router_vectors: int = 0  # learned vectors of E values per MoE layer besides the router (ERNIE's score bias)
    keys: frozenset[str] = frozenset()  # other count-changing keys the layer rule reads


@dataclass(frozen=True, slots=True, kw_only=True)
class Decoder:
    """One decoder family, as transformers builds it."""

    display: str  # the family's human name
    classes: tuple[str, ...] = ()  # ``architectures`` class names that mean this model type
    tie: bool = False  # default of ``tie_word_embeddings``
    head_dim: int | None = None  # default head_dim when the config has none (else hidden / heads)
    context: int | None = None  # default ``max_position_embeddings``
    vocab: int | None = None  # default ``vocab_size`` (None: the config must say)
    qkv_bias: Flag = False
    o_bias: Flag = False
    fused_qkv: bool = False
    qk_norm: QkNorm = "none"
    qk_norm_if: Flag = True  # q/k norms exist only when this is true (Cohere, GLM-4.5: ``use_qk_norm``)
    mlp: Literal["gated", "plain"] = "gated"
    mlp_bias: Flag = False
    fused_gate_up: bool = False
    norm: NormKind = "rms"
    norms_per_layer: int = 2  # per decoder layer; one more (same kind) after the last layer
    windows: WindowRule = full_attention
    layer_types: frozenset[str] = frozenset({"full_attention"})  # ``layer_types`` values the window rule reads
    experts: Experts | None = None
    head_bias: Flag = False  # the LM head has a bias of V values (PhiMoE, ERNIE 4.5 MoE)
    reads: frozenset[str] = frozenset()  # other count-changing keys this row reads
    notes: tuple[str, ...] = field(default=())  # said with every model of the family
    key_notes: tuple[tuple[str, str], ...] = ()  # (key, note with {value}): said when the config sets the key


def reads_of(d: Decoder) -> frozenset[str]:
    """The count-changing keys a row understands, ``layer_types=VALUE`` for each layer type it reads."""
    keys = set(d.reads) | {f"layer_types={t}" for t in d.layer_types}
    if isinstance(d.qk_norm_if, tuple):
        keys.add(d.qk_norm_if[0])
    if d.experts is not None:
        e = d.experts
        keys |= {*_keys(e.count), *_keys(e.top_k), e.width, e.dense_width, *e.keys}
        if isinstance(e.shared, tuple):
            keys.add(e.shared[0])
    return frozenset(keys)


def _keys(value: str | tuple[str, ...]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else value


def _attention(t: Tally, r: ConfigReader, c: Core, d: Decoder) -> None:
    norm = d.qk_norm if read_flag(r, d.qk_norm_if) else "none"
    gqa(t, c, qkv_bias=read_flag(r, d.qkv_bias), o_bias=read_flag(r, d.o_bias), fused_qkv=d.fused_qkv,
        qk_norm=norm == "head")
    if norm == "width":
        t.vector("attention", (c.heads + c.kv_heads) * c.head_dim, count=c.layers)


def _mlp(t: Tally, r: ConfigReader, c: Core, d: Decoder, ffn: int, count: int) -> None:
    bias = read_flag(r, d.mlp_bias)
    if d.mlp == "plain":
        plain_mlp(t, c.hidden, ffn, count=count, bias=bias)
    else:
        gated_mlp(t, c.hidden, ffn, count=count, bias=bias, fused=d.fused_gate_up)


def _norms_and_head(t: Tally, r: ConfigReader, c: Core, d: Decoder) -> None:
    values = _NORM_VALUES[d.norm] * c.hidden
    if values:
        t.vector("norms", values, count=d.norms_per_layer * c.layers + 1)
    if read_flag(r, d.head_bias):
        t.vector("other", c.vocab)
        t.notes.append("other: the LM head's bias (one value per vocabulary entry)")
    t.notes.extend(d.notes)
    for key, note in d.key_notes:
        value = r.data.get(key)
        if value not in (None, False, 0):
            t.notes.append(note.format(value=value))


def _moe(t: Tally, r: ConfigReader, c: Core, d: Decoder, e: Experts) -> tuple[MoeSpec, int]:
    n_exp = r.size(*_keys(e.count))
    top_k = read_top_k(r, n_exp, keys=_keys(e.top_k))
    width = r.size(e.width)
    is_moe = e.layers(r, c)
    moe_layers = sum(is_moe)
    dense_layers = c.layers - moe_layers
    dense_ffn = r.size(e.dense_width) if dense_layers else 0
    if dense_layers:
        _mlp(t, r, c, d, dense_ffn, dense_layers)
    t.linear("router", "router", c.hidden, n_exp, count=moe_layers)
    if e.router_vectors:
        t.vector("router", n_exp, count=e.router_vectors * moe_layers)
    gated_mlp(t, c.hidden, width, count=moe_layers * n_exp, active_count=moe_layers * top_k, component="experts",
              prefix="expert_")
    shared = e.shared if isinstance(e.shared, int) else r.size(e.shared[0], default=e.shared[1], minimum=0)
    if shared:
        gated_mlp(t, c.hidden, width * shared, count=moe_layers, bias=read_flag(r, d.mlp_bias),
                  component="shared_experts", prefix="shared_")
    moe = MoeSpec(num_experts=n_exp, experts_per_token=top_k, num_shared_experts=shared, expert_intermediate_size=width,
                  num_moe_layers=moe_layers)
    return moe, dense_ffn


def parser(model_type: str, d: Decoder) -> Parser:
    """The parser of a family row: core shape, embeddings, attention, MLP or experts, norms, windows."""

    def parse(r: ConfigReader, name: str, source: str) -> ModelSpec:
        c = core_shape(r, context_default=d.context, vocab_default=d.vocab, head_dim_default=d.head_dim,
                       model_type=model_type)
        t = Tally()
        tied = r.flag("tie_word_embeddings", default=d.tie)
        embeddings(t, c, tied=tied)
        _attention(t, r, c, d)
        windows = d.windows(r, c)
        if d.experts is None:
            ffn = r.size("intermediate_size")
            _mlp(t, r, c, d, ffn, c.layers)
            _norms_and_head(t, r, c, d)
            return assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, windows=windows,
                                  gated=d.mlp == "gated", model_type=model_type)
        moe, dense_ffn = _moe(t, r, c, d, d.experts)
        _norms_and_head(t, r, c, d)
        return assemble_moe(t, r, c, name, source, tied=tied, dense_ffn=dense_ffn, windows=windows, moe=moe,
                            model_type=model_type)

    parse.__name__ = f"parse_{model_type}"
    return parse
