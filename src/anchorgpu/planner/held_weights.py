"""What a plan's GPUs hold its weights as, in words for the faces' headers and columns.

The JSON's ``workload.weights`` / ``precision.weights`` is the weight *format* the plan resolved (bf16 for full
training, a contract the API keeps); FP8 training as Megatron-Core runs it with FP8 parameters (``--fp8-param-gather``,
:mod:`anchorgpu.planner.training`) holds those weights in FP8 with their transposes for the backward pass instead, two
bytes a parameter as the 16-bit weights would be, the fp32 master copy in the optimizer. A header that said "weights
bf16" beside that line named what is not held (stop60_qa26, left 2).
"""

from __future__ import annotations

__all__ = ["FP8_HELD_WEIGHTS", "held_weights"]

FP8_HELD_WEIGHTS = "fp8 + transposes"
"""FP8 training's weights as the GPUs hold them (Megatron-Core ``--fp8-param-gather``: FP8 and its transpose)."""


def held_weights(weights: str, *, task: str, train_precision: str | None, short: bool = False) -> str:
    """``weights`` (the resolved format) as the GPUs hold them: :data:`FP8_HELD_WEIGHTS` under FP8 full training,
    or with ``short`` (a table's narrow column) its format alone, ``fp8``.

    >>> held_weights("bf16", task="train", train_precision="fp8"), held_weights("bf16", task="train", train_precision="mixed")
    ('fp8 + transposes', 'bf16')
    >>> held_weights("bf16", task="train", train_precision="fp8", short=True), held_weights("nf4-dq", task="qlora", train_precision="fp8")
    ('fp8', 'nf4-dq')
    """
    if task != "train" or train_precision != "fp8":
        return weights
    return "fp8" if short else FP8_HELD_WEIGHTS
