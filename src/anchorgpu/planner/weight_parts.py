"""The bytes a model's weights take in a weight format, split the way parallelism splits them (dense linears TP
splits, routed experts EP splits, the small per-layer tensors, embeddings, the LM head), and its parameters split
the same way; memoised per (model, format) object pair. Pure; the formats themselves are :mod:`.formats`'."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from anchorgpu.architectures.quantization import QuantStorage
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.formats import WeightFormat

__all__ = ["ModelParts", "model_param_parts", "model_weight_parts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelParts:
    """A model split the way parallelism splits it (units: parameters or bytes, as the caller built it).

    ``dense`` are linear layers inside the transformer layers that TP splits; ``experts`` the routed
    experts EP (or TP) splits; ``layer_other`` the small per-layer tensors TP replicates (norms,
    biases, routers); ``embed`` the token (+ position) embeddings; ``head`` the untied LM head.
    ``largest_layer`` is one transformer layer's share (for ZeRO-3/FSDP gather buffers).
    """

    dense: float
    experts: float
    layer_other: float
    embed: float
    head: float
    num_layers: int
    tied: bool
    detail: Mapping[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.dense + self.experts + self.layer_other + self.embed + self.head

    @property
    def largest_layer(self) -> float:
        return (self.dense + self.experts + self.layer_other) / max(1, self.num_layers)


def _linear_split_params(model: ModelSpec) -> tuple[int, int]:
    """(dense linear params, routed-expert linear params) from ``linear_groups`` (or the breakdown)."""
    if model.linear_groups:
        experts = sum(g.params for g in model.linear_groups if g.name.startswith("expert"))
        dense = sum(g.params for g in model.linear_groups if not g.name.startswith("expert"))
        return dense, experts
    p = model.params
    return p.attention + p.mlp + p.shared_experts, p.experts


_PARTS_MEMO: dict[tuple[int, int], tuple[object, object, ModelParts]] = {}


def _memo(model: ModelSpec, fmt: WeightFormat | None, compute: Callable[[], ModelParts]) -> ModelParts:
    """``compute()`` once per (model, format) object pair: both are frozen, so the parts never change.

    Keyed by identity and holding both objects, so a key cannot be reused by another object; bounded."""
    key = (id(model), id(fmt))
    hit = _PARTS_MEMO.get(key)
    if hit is not None and hit[0] is model and hit[1] is fmt:
        return hit[2]
    if len(_PARTS_MEMO) >= 512:
        _PARTS_MEMO.clear()
    parts = compute()
    _PARTS_MEMO[key] = (model, fmt, parts)
    return parts


def model_param_parts(model: ModelSpec) -> ModelParts:
    """The model's parameters split as parallelism splits them (all counts in parameters).

    >>> from anchorgpu.planner._examples import tiny_model
    >>> parts = model_param_parts(tiny_model())
    >>> int(parts.total) == tiny_model().params_total
    True
    """
    return _memo(model, None, lambda: _model_param_parts(model))


def _model_param_parts(model: ModelSpec) -> ModelParts:
    p = model.params
    dense, experts = _linear_split_params(model)
    embed = p.embeddings + p.position_embeddings
    other = p.total - dense - experts - embed - p.head
    return ModelParts(dense=dense, experts=experts, layer_other=other, embed=embed, head=p.head,
                      num_layers=model.num_layers, tied=model.tie_word_embeddings)


def model_weight_parts(model: ModelSpec, fmt: WeightFormat) -> ModelParts:
    """The model's weight bytes in ``fmt``, split as parallelism splits them.

    Linear groups take ``fmt.group_bits`` (metadata included) plus per-matrix/row/column extras;
    embeddings ``embed_bits``; the untied head ``head_bits``; the remaining tensors ``other_bits``.

    >>> from anchorgpu.planner._examples import tiny_model
    >>> from anchorgpu.planner.formats import get_format
    >>> int(model_weight_parts(tiny_model(), get_format("bf16")).total) == 2 * tiny_model().params_total
    True
    """
    return _memo(model, fmt, lambda: _model_weight_parts(model, fmt))


def _model_weight_parts(model: ModelSpec, fmt: WeightFormat) -> ModelParts:
    params = model_param_parts(model)
    dense_b = experts_b = 0.0
    detail: dict[str, float] = {}
    if fmt.storage is not None and model.linear_groups:
        return _storage_weight_parts(model, fmt, fmt.storage, params)
    if model.linear_groups:
        for g in model.linear_groups:
            group_params = g.params
            if fmt.pad_expert_width_to and g.name.startswith("expert") and model.moe is not None:
                width = model.moe.expert_intermediate_size
                padded = -(-width // fmt.pad_expert_width_to) * fmt.pad_expert_width_to
                group_params = g.params * padded // width
            group_bytes = group_params * fmt.group_bits(g.name, is_moe=model.is_moe) / 8
            if fmt.group_bits(g.name, is_moe=model.is_moe) < 16:
                group_bytes += g.count * (fmt.per_matrix_bytes + g.d_out * fmt.per_out_row_bytes
                                          + g.d_in * fmt.per_in_col_bytes)
            detail[g.name] = group_bytes
            if g.name.startswith("expert"):
                experts_b += group_bytes
            else:
                dense_b += group_bytes
    else:
        dense_b = params.dense * fmt.group_bits("dense", is_moe=model.is_moe) / 8
        experts_b = params.experts * fmt.group_bits("expert", is_moe=model.is_moe) / 8
    return ModelParts(
        dense=dense_b, experts=experts_b, layer_other=params.layer_other * fmt.other_bits / 8,
        embed=params.embed * fmt.embed_bits / 8, head=params.head * fmt.head_bits / 8,
        num_layers=model.num_layers, tied=model.tie_word_embeddings, detail=detail,
    )


def _storage_weight_parts(model: ModelSpec, fmt: WeightFormat, storage: QuantStorage, params: ModelParts) -> ModelParts:
    """Weight bytes with an exact storage: each quantized matrix by its shape (values + one scale per
    block), the unquantized share of each group, the embeddings and (unless quantized) the head in 16 bit.

    Coverage: the shipped quantization's fractions when the format is the checkpoint's own; otherwise every
    linear group but the routers (MXFP4 named by the user: the routed experts only, on a MoE model).
    """
    shipped = fmt.shipped
    dense_b = experts_b = 0.0
    detail: dict[str, float] = {}
    for g in model.linear_groups:
        if shipped is not None:
            frac = shipped.fraction(g.name)
        elif g.name == "router" or g.component == "router":
            frac = 0.0
        elif fmt.moe_experts_only and model.is_moe:
            frac = 1.0 if g.name.startswith("expert") else 0.0
        else:
            frac = 1.0
        each = storage.matrix_bytes(g.d_in, g.d_out)
        if storage.pad_expert_width_to and g.name.startswith("expert") and model.moe is not None:
            width = model.moe.expert_intermediate_size
            padded = -(-width // storage.pad_expert_width_to) * storage.pad_expert_width_to
            each = each * padded / width
        group_bytes = g.count * (frac * each + (1 - frac) * g.d_in * g.d_out * 2)
        detail[g.name] = group_bytes
        if g.name.startswith("expert"):
            experts_b += group_bytes
        else:
            dense_b += group_bytes
    head_quantized = shipped is not None and shipped.head_quantized
    head = storage.matrix_bytes(model.hidden_size, model.vocab_size) if head_quantized else params.head * 2
    return ModelParts(
        dense=dense_b, experts=experts_b, layer_other=params.layer_other * 2, embed=params.embed * 2, head=head,
        num_layers=model.num_layers, tied=model.tie_word_embeddings, detail=detail,
    )
