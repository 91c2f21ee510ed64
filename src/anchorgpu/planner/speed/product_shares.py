"""Which of a token's products run at the weight format's own precision, and which stay 16-bit. Pure; stdlib only.

A format that keeps some linear layers 16-bit (gpt-oss's MXFP4 experts beside BF16 attention; a ModelOpt or
compressed-tensors checkpoint's exclusions; the LM head, which every FP8/FP4 format here keeps 16-bit unless the
checkpoint says otherwise) runs those layers' products at the BF16 rate: engines multiply a 16-bit weight in 16 bit.
The serving step divides the quantized share of the products by the format's rate and the rest by BF16's
(:func:`mixed_rate`); the sweep and the single plan both read the shares here.
"""

from __future__ import annotations

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.speed.flops import forward_matmul_params, lm_head_params

__all__ = ["head_quantized_share", "mixed_rate", "quantized_product_shares"]


def _group_share(fmt: WeightFormat, name: str, is_moe: bool) -> float:
    """Share of one linear group's matrices stored in the format's quantized storage."""
    if fmt.shipped is not None:
        return fmt.shipped.fraction(name)
    return 1.0 if fmt.group_bits(name, is_moe=is_moe) < 16 else 0.0


def _quantized_product_shares(model: ModelSpec, fmt: WeightFormat) -> tuple[float, float]:
    """(share of a token's forward products whose weights are in ``fmt``'s quantized storage, the same share of the
    routed experts' products) by active parameters; (1.0, 1.0) where the format is not quantized or the model has no
    linear groups (then one precision, as before). The LM head counts as 16-bit unless the checkpoint quantizes it.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("gpt-oss-120b")
    >>> q, e = quantized_product_shares(m, format_for_model(m, None)); round(q, 3), e
    (0.698, 1.0)
    """
    if not fmt.quantized or fmt.native is None or not model.linear_groups:
        return 1.0, 1.0
    total = float(forward_matmul_params(model))
    quantized = expert_all = expert_q = 0.0
    for g in model.linear_groups:
        active = float(g.d_in * g.d_out * g.active_count)
        share = _group_share(fmt, g.name, model.is_moe)
        quantized += active * share
        if g.name.startswith("expert"):
            expert_all += active
            expert_q += active * share
    if fmt.shipped is not None and fmt.shipped.head_quantized:
        quantized += float(lm_head_params(model))
    q = min(1.0, quantized / total) if total > 0 else 1.0
    return q, (expert_q / expert_all if expert_all > 0 else 1.0)


quantized_product_shares = memo_on_frozen(_quantized_product_shares, frozen=2)
"""The shares of one model in one format (:func:`_quantized_product_shares`), memoised on the two frozen specs."""


def head_quantized_share(model: ModelSpec, fmt: WeightFormat) -> float:
    """Share of the LM head's product that runs at the format's rate, as :func:`quantized_product_shares` counts it:
    1.0 where every product runs at one precision (a 16-bit format, a model without linear groups, or a quantized
    share counted whole) or the checkpoint quantizes its head; 0.0 where the head stays 16-bit. A serving step reads
    it to take the head's product off the prompt tokens it never reaches at the rate that product runs at.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.formats import format_for_model
    >>> m = load_model("gpt-oss-120b")
    >>> head_quantized_share(m, format_for_model(m, None)), head_quantized_share(m, format_for_model(m, "bf16"))
    (0.0, 1.0)
    """
    if quantized_product_shares(model, fmt)[0] >= 1.0:  # one rate for every product (the clamped share included)
        return 1.0
    return 1.0 if fmt.shipped is not None and fmt.shipped.head_quantized else 0.0


def mixed_rate(low: float, bf16: float, share: float) -> float:
    """The rate a step's products reach when ``share`` of them run at ``low`` and the rest at ``bf16``: the harmonic
    mean by share (``low`` itself at share 1, ``bf16`` at 0, so a one-precision plan's rate is unchanged).

    >>> mixed_rate(4.0, 1.0, 0.5)
    1.6
    """
    if share >= 1.0:
        return low
    if share <= 0.0:
        return bf16
    return 1.0 / (share / low + (1.0 - share) / bf16)
