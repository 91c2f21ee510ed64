"""How many GPUs a training job needs when none is given: the counts tried, fewest first, and the fewest on which
the layout chosen for the user fits (:mod:`anchorgpu.planner.suggest` offers them, :func:`~anchorgpu.planner.plan.plan`
plans them). Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload

if TYPE_CHECKING:  # the layout chooser imports the planner: types only here
    from anchorgpu.planner.result import Plan
    from anchorgpu.planner.speed.layouts import Choice
    from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["TRAINING_GPU_COUNTS", "fewest_fitting_gpus", "model_states_bytes", "training_gpu_counts"]

TRAINING_GPU_COUNTS: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
"""The GPU counts tried, fewest first, for a training job given no GPU count (nor TP, PP and DP, which would make
one): one GPU, part of a server, then whole 8-GPU servers in powers of two (data parallelism splits a global batch
of a power of two)."""


def training_gpu_counts(layout: Layout) -> tuple[int, ...]:
    """The counts tried for ``layout``: :data:`TRAINING_GPU_COUNTS` times what its given TP, PP, CP and DP fix (their
    product must divide the count), up to the same 1,024 GPUs. A power of two keeps the ladder's own multiples of it;
    ``--pp 5`` tries 5, 10, 20 ... 640, where the powers of two held no multiple of 5 and nothing was planned.

    A product past 1,024 (``--dp 2000``) is tried alone: the count it fixes.

    >>> training_gpu_counts(Layout())[:4], training_gpu_counts(Layout(tp=8))[:3], training_gpu_counts(Layout(pp=5))
    ((1, 2, 4, 8), (8, 16, 32), (5, 10, 20, 40, 80, 160, 320, 640))
    >>> training_gpu_counts(Layout(pp=5, dp=300))
    (1500,)
    """
    step = 1
    for fixed in (layout.tp, layout.pp, layout.cp, layout.dp):
        step *= fixed or 1
    # a split given past 1,024 GPUs (--dp 2000, --pp 5 --dp 300) fixes its own count: that one is tried
    return tuple(step * c for c in TRAINING_GPU_COUNTS if step * c <= TRAINING_GPU_COUNTS[-1]) or (step,)


def fewest_fitting_gpus(model: ModelSpec, w: Workload, prec: PrecisionPlan, layout: Layout, gpu: GpuSpec, ov: Overheads,
                        *, above: int = 0, efficiencies: Overrides | None = None
                        ) -> tuple[int, int, tuple[Choice, Plan]] | None:
    """(GPUs, the count tried before them, the chooser's choice and plan) for the fewest of
    :func:`training_gpu_counts` above ``above`` on which the layout chosen for the user fits, whatever ``layout``
    fixes kept; None when none does. A count whose GPUs cannot hold the job's model state even spread evenly is
    skipped without planning its layouts. ``efficiencies`` (``--mfu``/``--mbu``) rank each count's layouts."""
    from anchorgpu.planner.speed import layouts

    states = model_states_bytes(model, w, prec, layout, gpu, ov)
    fewer = above
    for gpus in training_gpu_counts(layout):
        if gpus <= above:
            continue
        found = None
        if states <= gpus * gpu.memory_bytes:
            try:
                found = layouts.choose_training_layout(model, w, prec, evolve(layout, gpus=gpus), gpu, ov, efficiencies)
            except InvalidWorkload:
                found = None
        if found is not None:
            return gpus, fewer, found
        fewer = gpus
    return None


def model_states_bytes(model: ModelSpec, w: Workload, prec: PrecisionPlan, layout: Layout, gpu: GpuSpec,
                        ov: Overheads) -> int:
    """The weights, gradients and optimizer state the whole job keeps on GPUs (its offload kept): spread evenly
    over n GPUs, each holds at least 1/n of it, so fewer GPUs than ``states / memory`` cannot hold the job (0 when
    one GPU cannot be planned)."""
    from anchorgpu.planner.plan import plan

    try:
        one = plan(model, w, precision=prec, layout=Layout(gpus=1, offload=layout.offload), gpu=gpu, overheads=ov,
                   suggest=False, choose_layout=False).per_gpu
    except InvalidWorkload:
        return 0
    return one.weights_bytes + one.gradients_bytes + one.optimizer_bytes
