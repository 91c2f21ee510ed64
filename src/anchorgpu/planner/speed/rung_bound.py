"""A bound on a layout's speed at a rung past the micro-batch ladder read off its micro-batch below, with no micro-batch
timed at the rung (:func:`rung_tokens_per_s_bound`): the chooser's search past its first layout
(:func:`~anchorgpu.planner.speed.chooser_climb.climbers`) drops with it most of the layouts whose climb cannot win
before it times their bound there. Pure.

:func:`~anchorgpu.planner.speed.training.tokens_per_s_bound` at micro-batch ``r x b`` adds up the same parts as at
``b`` (:func:`~anchorgpu.planner.speed.micro_step.micro_step`), each for ``r`` times the tokens a micro-batch:

* the parts in proportion to the tokens (:attr:`~.micro_step.MicroStep.linear_s`: the products at their full
  efficiency, attention, the elementwise traffic, the MoE permutations; the TP and EP exchanges' bytes) take ``r``
  times as long;
* the rest of the computation (the routed experts' falloff, ``tokens x factor - tokens``, which grows as the rows an
  expert gets do and the share of experts touched; QLoRA's dequantization, once a micro-batch), the exchanges'
  latencies and the MoE launches (by the layers and experts alone) take no less;
* the context-parallel ring's exposed time (its transfers less the attention they hide behind) may shrink, but not
  below nothing.

So a micro-batch at the rung takes at least ``per - cp + (r - 1) x linear`` of the parts at ``b``, and the bound over
it at the rung's micro-batches and bubble is at least the bound there (tests/speed/test_chooser_rung_bound.py checks
both over a sample of real layouts). :data:`RUNG_SLACK` keeps the subtraction's rounding on the safe side.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT
from anchorgpu.planner.speed.experts import MoeDispatcher
from anchorgpu.planner.speed.flops import Recompute, TrainKind
from anchorgpu.planner.speed.micro_step import micro_step
from anchorgpu.planner.speed.pipeline import PipelineSchedule, microbatches_for, pipeline_bubble_stage_times
from anchorgpu.planner.speed.train_layout import (
    AttentionKernel,
    TrainLayout,
    _check,
    _check_interleaving,
    sequence_parallel_of,
)
from anchorgpu.planner.speed.training import BOUND_SLACK

__all__ = ["RUNG_SLACK", "Growth", "growth_of", "rung_bound_of", "rung_bounds", "rung_tokens_per_s_bound"]

RUNG_SLACK = 1e-6
"""How far below ``kept + (r - 1) x linear`` the bound takes a micro-batch at the rung: ``linear_s`` holds differences
(``compute_s`` less the parts not in proportion, an exchange at twice the bytes less at once), whose rounding is some
units in the last place of the micro-batch's time; a millionth of it covers that with room, and costs the filter
nothing it needs."""


class Growth(NamedTuple):
    """What a micro-batch at least takes at ``r`` times the tokens of one whose parts these are (seconds):
    ``kept_s + (r - 1) x linear_s``."""

    kept_s: float  # the parts that never shrink: all but the context-parallel ring's exposed time
    linear_s: float  # the part in proportion to the tokens


def growth_of(
    model: ModelSpec,
    gpu: GpuSpec,
    lay: TrainLayout,
    *,
    seq_tokens: int,
    micro_batch: int,
    cal: Calibration,
    recompute: Recompute = "none",
    kind: TrainKind = "full",
    precision: str = "bf16",
    gpus_per_server: int = 8,
    network_bytes_per_s: float | None = None,
    attention_kernel: AttentionKernel = "flash",
    train_stack: str = "megatron",
    moe_dispatcher: MoeDispatcher = "alltoall",
    base_format: str = QLORA_BASE_FORMAT,
) -> Growth:
    """The :class:`Growth` of a layout's micro-batch of ``micro_batch`` sequences (its parts memoised:
    :func:`~anchorgpu.planner.speed.micro_step.micro_step`)."""
    b = micro_step(
        model,
        gpu,
        cal,
        lay.tp,
        lay.pp,
        lay.cp,
        lay.ep,
        lay.virtual_stages,
        lay.tp_overlap,
        lay.ep_overlap,
        seq_tokens,
        micro_batch,
        recompute,
        kind,
        precision,
        gpus_per_server,
        network_bytes_per_s,
        attention_kernel,
        train_stack,
        lay.pipeline_layout,
        sequence_parallel_of(lay),
        moe_dispatcher,
        base_format,
    )
    return Growth(b.compute_s + b.tp_s + b.ep_s + b.launch_s, b.linear_s)


def rung_bound_of(
    growth: Growth,
    lay: TrainLayout,
    micro_batch: int,
    rung: int,
    seq_tokens: int,
    global_batch_tokens: int,
    schedule: PipelineSchedule = "1f1b",
) -> float:
    """At least the speed bound at micro-batch ``rung`` of a layout whose micro-batch of ``micro_batch`` sequences
    grows so (:func:`growth_of`), where that bound is not refused and ``global_batch_tokens`` holds one micro-batch
    a rank (this checks nothing). By position: the chooser reads it for most of its layouts."""
    m = math.ceil(global_batch_tokens / (lay.dp * rung * seq_tokens))  # as microbatches_for
    per_micro = (growth.kept_s + (rung / micro_batch - 1.0) * growth.linear_s) * (1.0 - RUNG_SLACK)
    step_s = (m + pipeline_bubble_stage_times(lay.pp, m, lay.virtual_stages, schedule)) * per_micro
    return m * lay.dp * rung * seq_tokens / step_s * (1.0 + BOUND_SLACK)


def rung_tokens_per_s_bound(
    model: ModelSpec,
    gpu: GpuSpec,
    lay: TrainLayout,
    *,
    seq_tokens: int,
    micro_batch: int,
    rung: int,
    global_batch_tokens: int,
    cal: Calibration,
    recompute: Recompute = "none",
    kind: TrainKind = "full",
    precision: str = "bf16",
    gpus_per_server: int = 8,
    network_bytes_per_s: float | None = None,
    attention_kernel: AttentionKernel = "flash",
    train_stack: str = "megatron",
    moe_dispatcher: MoeDispatcher = "alltoall",
    schedule: PipelineSchedule = "1f1b",
    base_format: str = QLORA_BASE_FORMAT,
) -> float:
    """At least :func:`~anchorgpu.planner.speed.training.tokens_per_s_bound` at micro-batch ``rung`` (a multiple of
    ``micro_batch``) and ``global_batch_tokens``, from the micro-batch parts at ``micro_batch``; refused where that
    bound is.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> from anchorgpu.planner.speed.training import tokens_per_s_bound
    >>> lay, cal = TrainLayout(gpus=4, tp=2, pp=2), calibration()
    >>> at_8 = tokens_per_s_bound(toy_model(), toy_gpu(), lay, seq_tokens=128, micro_batch=8, global_batch_tokens=8192)
    >>> at_4 = tokens_per_s_bound(toy_model(), toy_gpu(), lay, seq_tokens=128, micro_batch=4, global_batch_tokens=8192)
    >>> up = rung_tokens_per_s_bound(toy_model(), toy_gpu(), lay, seq_tokens=128, micro_batch=4, rung=8,
    ...                              global_batch_tokens=8192, cal=cal)
    >>> at_8 <= up < 2 * at_4
    True
    """
    _check(model, lay, seq_tokens)
    growth = growth_of(
        model,
        gpu,
        lay,
        seq_tokens=seq_tokens,
        micro_batch=micro_batch,
        cal=cal,
        recompute=recompute,
        kind=kind,
        precision=precision,
        gpus_per_server=gpus_per_server,
        network_bytes_per_s=network_bytes_per_s,
        attention_kernel=attention_kernel,
        train_stack=train_stack,
        moe_dispatcher=moe_dispatcher,
        base_format=base_format,
    )
    _check_interleaving(
        lay, microbatches_for(global_batch_tokens, dp=lay.dp, micro_batch=rung, seq_tokens=seq_tokens), train_stack
    )
    return rung_bound_of(growth, lay, micro_batch, rung, seq_tokens, global_batch_tokens, schedule)


def rung_bounds(
    grows: Callable[[TrainLayout, int], Growth],
    seq_tokens: int,
    batch_tokens: int,
    schedule: PipelineSchedule,
    least: int,
) -> tuple[Callable[[TrainLayout, int, int], float], Callable[[TrainLayout, int], float | None]]:
    """One search's bounds (memoised by TP, CP, PP, interleave and EP, the same for every ZeRO stage of a layout, as
    its ``bound``): ``rung_bound(lay, mb, low)``, at least the bound at ``mb`` from the parts at ``low``
    (``grows``: :func:`growth_of` for the search), and ``over(lay, mb)``, that from ``least`` (the search's smallest
    micro-batch; ``None`` at it), :func:`~.chooser_order.fastest_first`'s ``over``. ``batch_tokens``: the global
    batch, raised to one micro-batch a rank where smaller."""
    growths: dict[tuple[int, int, int, int, int, int], Growth] = {}
    values: dict[tuple[int, int, int, int, int, int, int], float] = {}

    def rung_bound(lay: TrainLayout, mb: int, low: int) -> float:
        key = (lay.tp, lay.cp, lay.pp, lay.virtual_stages, lay.ep, low, mb)
        found = values.get(key)
        if found is None:
            growth = growths.get(key[:6])
            if growth is None:
                growth = growths[key[:6]] = grows(lay, low)
            found = values[key] = rung_bound_of(
                growth, lay, low, mb, seq_tokens, max(batch_tokens, lay.dp * mb * seq_tokens), schedule
            )
        return found

    def over(lay: TrainLayout, mb: int) -> float | None:
        if mb <= least:
            return None
        found = values.get((lay.tp, lay.cp, lay.pp, lay.virtual_stages, lay.ep, least, mb))
        return rung_bound(lay, mb, least) if found is None else found

    return rung_bound, over
