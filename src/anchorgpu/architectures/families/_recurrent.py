"""Recurrent token mixers (Mamba, Mamba-2, gated DeltaNet) and the assembly of state-space and hybrid models.

Each mixer adds its modules to a :class:`Tally` with the shapes transformers 5.24 builds and returns the
:class:`RecurrentSpec` of the state one layer keeps per sequence, as vLLM allocates it: the causal
convolution's last ``kernel - 1`` inputs and the SSM (or delta-rule) state. Shapes: ``h`` hidden, ``I``
inner width, ``N`` state size, ``R`` time-step rank, ``H`` heads, ``P`` head dim, ``G`` groups, ``k``
convolution kernel. Pure; stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from anchorgpu.architectures._build import Tally
from anchorgpu.architectures._config import ConfigReader
from anchorgpu.architectures.families._blocks import Core, assemble_dense
from anchorgpu.architectures.spec import LayerKind, ModelSpec, MoeSpec, RecurrentSpec

# A pure state-space model has no position table and no KV cache: its state is the same size at any length.
# Planning needs some longest context; this one is stated in the model's notes.
SSM_CONTEXT_TOKENS = 1 << 20


def time_step_rank(r: ConfigReader, key: str, hidden: int) -> int:
    """``"auto"`` (transformers' default) is ⌈h / 16⌉; otherwise a positive integer."""
    value = r.data.get(key)
    if value is None or value == "auto":
        return math.ceil(hidden / 16)
    return r.size(key)


def mamba_mixer(
    t: Tally, *, h: int, inner: int, state: int, rank: int, kernel: int, count: int, proj_bias: bool,
    conv_bias: bool, dt_bc_norms: bool = False,
) -> RecurrentSpec:
    """Mamba (v1): in_proj ``h→2I``, depthwise conv ``I·k``, x_proj ``I→R+2N``, dt_proj ``R→I`` (+bias),
    A_log ``I·N``, D ``I``, out_proj ``I→h``; Jamba adds RMS norms on dt (``R``), B and C (``N`` each).

    State per layer: conv ``I·(k-1)``, SSM ``I·N``.
    """
    t.linear("recurrent", "in_proj", h, 2 * inner, count=count, bias=proj_bias)
    t.linear("recurrent", "x_proj", inner, rank + 2 * state, count=count)
    t.linear("recurrent", "dt_proj", rank, inner, count=count, bias=True)
    t.linear("recurrent", "out_proj", inner, h, count=count, bias=proj_bias)
    t.vector("recurrent", inner * kernel + (inner if conv_bias else 0) + inner * state + inner, count=count)
    if dt_bc_norms:
        t.vector("norms", rank + 2 * state, count=count)
    return RecurrentSpec(mixer="mamba", conv_values=inner * (kernel - 1), ssm_values=inner * state,
                         activation_values_per_token=5 * inner + rank + 2 * state)


def mamba2_mixer(
    t: Tally, *, h: int, heads: int, head_dim: int, groups: int, state: int, kernel: int, count: int,
    proj_bias: bool, conv_bias: bool, ssm_bytes_per_value: int | None = None,
) -> RecurrentSpec:
    """Mamba-2: in_proj ``h → I + (I + 2GN) + H``, depthwise conv over ``I + 2GN`` channels, dt_bias,
    A_log and D of ``H``, a gated RMS norm of ``I``, out_proj ``I→h`` (``I = H·P``).

    State per layer: conv ``(I + 2GN)·(k-1)``, SSM ``H·P·N``.
    """
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * state
    t.linear("recurrent", "in_proj", h, inner + conv_dim + heads, count=count, bias=proj_bias)
    t.linear("recurrent", "out_proj", inner, h, count=count, bias=proj_bias)
    t.vector("recurrent", conv_dim * kernel + (conv_dim if conv_bias else 0) + 3 * heads, count=count)
    t.vector("norms", inner, count=count)
    return RecurrentSpec(mixer="mamba2", conv_values=conv_dim * (kernel - 1), ssm_values=heads * head_dim * state,
                         ssm_bytes_per_value=ssm_bytes_per_value,
                         activation_values_per_token=5 * inner + 4 * groups * state + heads)


def gated_deltanet_mixer(
    t: Tally, *, h: int, key_heads: int, value_heads: int, key_dim: int, value_dim: int, kernel: int, count: int,
) -> RecurrentSpec:
    """Gated DeltaNet (Qwen3-Next linear attention): in_proj_qkvz ``h → 2K + 2V``, in_proj_ba ``h → 2Hv``,
    depthwise conv (no bias) over ``2K + V`` channels, dt_bias and A_log of ``Hv``, a gated RMS norm of one
    value head, out_proj ``V→h`` (``K = Hk·dk``, ``V = Hv·dv``).

    State per layer: conv ``(2K + V)·(k-1)``, recurrent ``Hv·dk·dv``.
    """
    keys, values = key_heads * key_dim, value_heads * value_dim
    conv_dim = 2 * keys + values
    t.linear("recurrent", "in_proj_qkvz", h, 2 * keys + 2 * values, count=count)
    t.linear("recurrent", "in_proj_ba", h, 2 * value_heads, count=count)
    t.linear("recurrent", "out_proj", values, h, count=count)
    t.vector("recurrent", conv_dim * kernel + 2 * value_heads, count=count)
    t.vector("norms", value_dim, count=count)
    return RecurrentSpec(mixer="gated_deltanet", conv_values=conv_dim * (kernel - 1),
                         ssm_values=value_heads * key_dim * value_dim,
                         activation_values_per_token=4 * keys + 5 * values + 2 * value_heads)


def ssm_dtype_bytes(r: ConfigReader, key: str, default: str | None) -> int | None:
    """Bytes of an SSM-state dtype the config pins (``float32`` → 4; 16-bit → 2; absent/auto → None)."""
    value = r.data.get(key, default)
    if value is None or value == "auto":
        return None
    sizes = {"float32": 4, "bfloat16": 2, "float16": 2}
    if not isinstance(value, str) or value not in sizes:
        raise r.fail(key, f"must be one of {', '.join(sizes)} or auto, got {value!r}")
    return sizes[value]


def layer_types(r: ConfigReader, key: str, n_layers: int, aliases: dict[str, str]) -> tuple[str, ...] | None:
    """A per-layer type list mapped through ``aliases`` (legacy names → canonical); None when absent."""
    types = r.str_list(key)
    if types is None:
        return None
    if len(types) != n_layers:
        raise r.fail(key, f"must list {n_layers} layers (num_hidden_layers), got {len(types)}")
    out = []
    for kind in types:
        if kind not in aliases:
            raise r.fail(key, f"has an unsupported layer type {kind!r} (expected one of {', '.join(sorted(aliases))})")
        out.append(aliases[kind])
    return tuple(out)


def assemble_recurrent(
    t: Tally,
    r: ConfigReader,
    c: Core,
    name: str,
    source: str,
    *,
    tied: bool,
    ffn: int,
    gated: bool,
    kinds: Sequence[LayerKind],
    recurrent: RecurrentSpec,
    windows: Sequence[int | None] | None = None,
    moe: MoeSpec | None = None,
    mlp_layers: int | None = None,
) -> ModelSpec:
    """Freeze a hybrid or state-space model: per-layer kinds, the recurrent state, KV on attention layers only."""
    attention = sum(1 for k in kinds if k in ("attention", "attention_recurrent"))
    rec = sum(1 for k in kinds if k in ("recurrent", "attention_recurrent"))
    spec = assemble_dense(t, r, c, name, source, tied=tied, ffn=ffn, gated=gated, moe=moe,
                          windows=tuple(windows) if windows is not None else (None,) * c.layers)
    kv_note = (f"KV cache on the {attention} attention layer(s) only; the {rec} recurrent layer(s) keep a "
               "fixed-size state per sequence instead" if attention
               else "no attention layer: no KV cache, only a fixed-size recurrent state per sequence")
    spec = replace(spec, notes=(*spec.notes, kv_note))
    return replace(spec, layer_kinds=tuple(kinds), recurrent=recurrent, mlp_layers=mlp_layers,
                   attention_kind="none" if attention == 0 else spec.attention_kind)
