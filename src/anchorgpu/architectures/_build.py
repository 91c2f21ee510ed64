"""Counting helpers shared by the family parsers: a tally of parameters per component.

A family parser describes its modules (``linear``, ``vector``) with the shapes transformers builds;
the tally adds them up into a :class:`ParamBreakdown`, the linear-layer families and the number of
parameters a token does *not* pass through (unchosen routed experts). Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from anchorgpu.architectures.spec import (
    AttentionKind,
    LinearGroup,
    MlaSpec,
    ModelSpec,
    MoeSpec,
    ParamBreakdown,
)

__all__ = ["Component", "Tally", "attention_kind", "finish"]

Component = Literal[
    "embeddings", "position_embeddings", "attention", "mlp", "experts", "shared_experts", "router", "norms", "head",
    "other", "recurrent",
]
_COMPONENTS: tuple[Component, ...] = (
    "embeddings", "position_embeddings", "attention", "mlp", "experts", "shared_experts", "router", "norms", "head",
    "other", "recurrent",
)


class Tally:
    """Running parameter counts of one model while its parser walks the modules.

    >>> t = Tally()
    >>> t.linear("attention", "q", 8, 8, count=2, bias=True)
    >>> t.vector("norms", 8, count=3)
    >>> t.breakdown().total
    168
    """

    __slots__ = ("_groups", "_counts", "inactive", "notes")

    def __init__(self) -> None:
        self._counts: dict[Component, int] = dict.fromkeys(_COMPONENTS, 0)
        self._groups: dict[tuple[str, str, int, int, bool, tuple[tuple[str, int], ...]], list[int]] = {}
        self.inactive = 0  # parameters a single token does not pass through
        self.notes: list[str] = []

    def linear(
        self,
        component: Component,
        name: str,
        d_in: int,
        d_out: int,
        *,
        count: int,
        active_count: int | None = None,
        bias: bool = False,
        parts: tuple[tuple[str, int], ...] = (),
    ) -> None:
        """``count`` matrices of ``d_in × d_out`` (+ a ``d_out`` bias each); ``active_count`` used per token.

        ``parts`` names the output slices of a fused module (``qkv``, ``gate_up``); they must add up to ``d_out``.
        """
        if count <= 0:
            return
        active = count if active_count is None else active_count
        each = d_in * d_out + (d_out if bias else 0)
        self._counts[component] += each * count
        self.inactive += each * (count - active)
        key = (component, name, d_in, d_out, bias, parts)
        if key in self._groups:
            self._groups[key][0] += count
            self._groups[key][1] += active
        else:
            self._groups[key] = [count, active]

    def vector(self, component: Component, size: int, *, count: int = 1) -> None:
        """``count`` parameter vectors (norm weights, biases, sinks) of ``size`` values each."""
        self._counts[component] += size * count

    def table(self, component: Component, rows: int, width: int) -> None:
        """An embedding table (``rows × width``); not a linear layer for LoRA purposes."""
        self._counts[component] += rows * width

    def breakdown(self) -> ParamBreakdown:
        return ParamBreakdown(**self._counts)

    def linear_groups(self) -> tuple[LinearGroup, ...]:
        return tuple(
            LinearGroup(name=name, d_in=d_in, d_out=d_out, count=c, active_count=a, bias=bias, component=comp,
                        parts=parts)
            for (comp, name, d_in, d_out, bias, parts), (c, a) in self._groups.items()
        )


def attention_kind(num_heads: int, num_kv_heads: int, *, mla: bool = False) -> AttentionKind:
    """mla / mha (one KV head per query head) / mqa (one KV head) / gqa (anything between).

    >>> attention_kind(32, 8), attention_kind(32, 32), attention_kind(71, 1)
    ('gqa', 'mha', 'mqa')
    """
    if mla:
        return "mla"
    if num_kv_heads == num_heads:
        return "mha"
    if num_kv_heads == 1:
        return "mqa"
    return "gqa"


def finish(
    tally: Tally,
    *,
    name: str,
    model_type: str,
    family: str,
    num_layers: int,
    hidden_size: int,
    intermediate_size: int,
    num_attention_heads: int,
    num_kv_heads: int,
    head_dim: int,
    vocab_size: int,
    max_context_tokens: int,
    tie_word_embeddings: bool,
    gated_mlp: bool,
    layer_windows: Sequence[int | None],
    source: str,
    mla: MlaSpec | None = None,
    moe: MoeSpec | None = None,
) -> ModelSpec:
    """Freeze a tally into a :class:`ModelSpec` (params_active = total − unchosen experts)."""
    params = tally.breakdown()
    return ModelSpec(
        name=name,
        model_type=model_type,
        family=family,
        num_layers=num_layers,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_attention_heads=num_attention_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        vocab_size=vocab_size,
        max_context_tokens=max_context_tokens,
        tie_word_embeddings=tie_word_embeddings,
        attention_kind=attention_kind(num_attention_heads, num_kv_heads, mla=mla is not None),
        gated_mlp=gated_mlp,
        params=params,
        params_active=params.total - tally.inactive,
        linear_groups=tally.linear_groups(),
        layer_windows=tuple(layer_windows),
        mla=mla,
        moe=moe,
        source=source,
        notes=tuple(tally.notes),
    )
