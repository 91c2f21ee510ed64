"""Compatibility names for the speed model, which lives in :mod:`anchorgpu.planner.speed`.

``anchorgpu.planner.performance`` was the first, roofline-only module; its public names now point at the
calibrated package so that callers keep working.
"""

from __future__ import annotations

from anchorgpu.planner.speed.calibration import Overrides, calibration
from anchorgpu.planner.speed.estimate import (
    DEFAULT_STORAGE_BYTES_PER_S,
    SERVER_GPUS,
    attach_performance,
    plan_performance,
)
from anchorgpu.planner.speed.flops import (
    Recompute,
    TrainKind,
    attention_flops_per_token,
    forward_matmul_params,
    prefill_flops,
    training_flops_per_token,
)
from anchorgpu.planner.speed.links import (
    ComputePrecision,
    Link,
    PeakChoice,
    allreduce_s,
    compute_precision_for_weights,
    peak_for,
    tp_link,
)
from anchorgpu.planner.speed.serving import moe_expert_fraction_read
from anchorgpu.planner.speed.training import (
    ACTIVATION_BYTES,
    DEFAULT_GLOBAL_BATCH_TOKENS,
    TrainingStep,
    TrainLayout,
    pipeline_bubble_fraction,
    training_step,
)

__all__ = [
    "ACTIVATION_BYTES",
    "DEFAULT_EFFICIENCIES",
    "DEFAULT_GLOBAL_BATCH_TOKENS",
    "DEFAULT_NETWORK_BYTES_PER_S",
    "DEFAULT_STORAGE_BYTES_PER_S",
    "SERVER_GPUS",
    "ComputePrecision",
    "Efficiencies",
    "Link",
    "PeakChoice",
    "Recompute",
    "TrainKind",
    "TrainLayout",
    "TrainingStep",
    "allreduce_s",
    "attach_performance",
    "attention_flops_per_token",
    "calibration",
    "compute_precision_for_weights",
    "forward_matmul_params",
    "moe_expert_fraction_read",
    "peak_for",
    "pipeline_bubble_fraction",
    "plan_performance",
    "prefill_flops",
    "tp_link",
    "training_flops_per_token",
    "training_step",
]

DEFAULT_NETWORK_BYTES_PER_S = calibration().network_bytes_per_s
Efficiencies = Overrides
"""The user's ``--mfu``/``--mbu`` in place of the calibrated constants (``None`` keeps them)."""
DEFAULT_EFFICIENCIES = Overrides()
