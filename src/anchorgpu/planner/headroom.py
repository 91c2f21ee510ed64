"""Whether a training plan that fits leaves too little headroom for what its own measured error allows.

The plan's total already holds the CUDA context, library workspaces, NCCL buffers and a fragmentation allowance of
``Overheads.fragmentation_fraction`` of the tensors (``training.py``). Measured Megatron-Core peaks have still come out
above the planned tensors by more than that allowance, and the caching allocator reserves beyond the tensors it
hands out (``data/training_headroom.json``, from ``benchmarks/megatron_memory_checks.md``). A headroom below that
remainder (:func:`thin_share`, about 2% of the planned total) is spent if the run lands where the worst measured one
did: the plan says so, with the first remedy Megatron-Bridge's memory guide gives near the limit. Pure (the data
file is read with ``importlib.resources``, as every planner table is).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from anchorgpu.errors import said
from anchorgpu.planner.eager_stack import eager_headroom_warning
from anchorgpu.planner.inputs import TRAINING_TASKS, Overheads
from anchorgpu.planner.warnings import PlanWarning, make_warning
from anchorgpu.units import fmt_bytes

__all__ = ["fit_headroom_warnings", "thin_headroom_warning", "thin_share"]


@lru_cache(maxsize=1)
def _measured() -> tuple[float, float]:
    doc = json.loads(resources.files("anchorgpu.planner").joinpath("data/training_headroom.json").read_text("utf-8"))
    return float(doc["peak_over_planned_tensors"]), float(doc["reserved_over_allocated"])


@lru_cache(maxsize=16)  # a constant of the data file and the allowance (the default Overheads' on almost every plan)
def thin_share(fragmentation_fraction: float = Overheads().fragmentation_fraction) -> float:
    """The share of the planned total the worst measured run would take beyond it: its peak over the planned tensors
    times the allocator's reserve over its allocations, less the plan's own fragmentation allowance.

    >>> round(thin_share(), 4)  # 1.0604 x 1.0103 - 1 - 0.05
    0.0213
    """
    peak, reserved = _measured()
    return max(0.0, peak * reserved - 1.0 - fragmentation_fraction)


def thin_headroom_warning(total_bytes: int, headroom_bytes: int,
                          fragmentation_fraction: float = Overheads().fragmentation_fraction) -> PlanWarning | None:
    """``thin_training_headroom`` where a training plan fits with less headroom than :func:`thin_share` of its
    total, else None.

    >>> gib = 2**30
    >>> thin_headroom_warning(int(139.78 * gib), 17 * 2**20).code
    'thin_training_headroom'
    >>> thin_headroom_warning(int(120 * gib), 19 * gib) is None
    True
    """
    share = thin_share(fragmentation_fraction)
    if headroom_bytes < 0 or headroom_bytes >= share * total_bytes:
        return None
    peak, reserved = _measured()
    return make_warning(
        "thin_training_headroom",
        said("headroom {headroom} is under {share:.1%} of the {total} planned, what the worst measured Megatron-Core run "
             "would take beyond the plan (a peak {peak:.1%} over the planned tensors, the allocator reserving "
             "{reserved:.1%} more, less the {fragmentation:.0%} fragmentation allowance); set "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, or take a layout with more room",
             headroom=fmt_bytes(headroom_bytes), share=share, total=fmt_bytes(total_bytes), peak=peak - 1,
             reserved=reserved - 1, fragmentation=fragmentation_fraction))


def fit_headroom_warnings(total_bytes: int, headroom_bytes: int, *, task: str, activations_bytes: int,
                          recompute: str, train_stack: str, fragmentation_fraction: float,
                          language_model: bool = True) -> tuple[PlanWarning, ...]:
    """The warnings a plan that fits carries about its headroom, as ``plan`` gives them and ``recommend``'s training
    rows carry them: a full-training plan of a language model whose headroom would not hold what an eager stack
    keeps (:func:`~anchorgpu.planner.eager_stack.eager_headroom_warning`), and a training plan with less headroom
    than its measured error on the planned stack (:func:`thin_headroom_warning`), each where it applies: both where
    both do (Qwen3-30B-A3B on 16 H100, 620 MiB free on Megatron, 0.77% of its total: the eager stack's warning is
    about another stack, the thin one about this). None for serving, or for a plan that does not fit
    (``headroom_bytes`` below 0).

    >>> gib = 2**30
    >>> [w.code for w in fit_headroom_warnings(int(139.78 * gib), 17 * 2**20, task="train", activations_bytes=gib,
    ...                                        recompute="full", train_stack="megatron", fragmentation_fraction=0.05)]
    ['thin_training_headroom']
    >>> fit_headroom_warnings(int(139.78 * gib), 17 * 2**20, task="inference", activations_bytes=gib,
    ...                       recompute="none", train_stack="megatron", fragmentation_fraction=0.05)
    ()
    """
    if headroom_bytes < 0 or task not in TRAINING_TASKS:
        return ()
    eager = (eager_headroom_warning(activations_bytes, recompute, headroom_bytes, total_bytes=total_bytes,
                                    train_stack=train_stack) if task == "train" and language_model else None)
    thin = thin_headroom_warning(total_bytes, headroom_bytes, fragmentation_fraction)
    return tuple(w for w in (eager, thin) if w is not None)
