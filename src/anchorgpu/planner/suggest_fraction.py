"""The memory fraction "What would fit" offers a serving plan that does not fit: the smallest
``--gpu-memory-utilization`` (two decimals, rounded up) that makes the request fit, no larger than the most the
engine starts with, and what it leaves the GPU's other processes; or, where even that most does not fit, a line
saying so. Pure; :func:`~anchorgpu.planner.suggest.suggestions_for` calls it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import DEFAULT_GPU_MEMORY_UTILIZATION, Layout, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.terms import context_bytes
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.result import Plan

__all__ = ["TRTLLM_MOST_FRACTION", "fraction_grid", "memory_fraction_suggestion", "vllm_most_fraction"]

TRTLLM_MOST_FRACTION = 0.95
"""The largest ``free_gpu_memory_fraction`` offered for TensorRT-LLM: the 0.95 the suggestion always offered (its
KV cache takes that share of what profiling leaves free, so there is no start-up check to bound it the way vLLM's
is; nothing here says how close to 1 it may go)."""


def vllm_most_fraction(gpu: GpuSpec, ov: Overheads) -> float:
    """The largest ``gpu_memory_utilization`` (three decimals, rounded down) vLLM starts with on an empty ``gpu``:
    the memory left free once its CUDA (or ROCm) context exists, over the total
    (:func:`~anchorgpu.planner.engine_startup.startup_refusal` refuses above it).

    >>> from anchorgpu.hardware import get_gpu
    >>> vllm_most_fraction(get_gpu("h100"), Overheads())
    0.993
    """
    return math.floor((gpu.memory_bytes - context_bytes(gpu, ov)) / gpu.memory_bytes * 1000) / 1000


def fraction_grid(now: float, most: float) -> tuple[float, ...]:
    """The fractions tried above ``now``: every two-decimal one up to ``most``, then ``most`` itself where it has
    more decimals (the two-decimal step past it would not start).

    >>> fraction_grid(0.9, 0.993)
    (0.91, 0.92, 0.93, 0.94, 0.95, 0.96, 0.97, 0.98, 0.99, 0.993)
    >>> fraction_grid(0.9, 0.95), fraction_grid(0.95, 0.95)
    ((0.91, 0.92, 0.93, 0.94, 0.95), ())
    """
    first, last = math.floor(round(now * 100, 6)) + 1, math.floor(round(most * 100, 6))
    grid = [k / 100 for k in range(first, last + 1)]
    if most > now and (not grid or grid[-1] < most):
        grid.append(most)
    return tuple(grid)


def memory_fraction_suggestion(model: ModelSpec, w: Workload, precision: PrecisionPlan, layout: Layout,
                               gpu: GpuSpec, overheads: Overheads, short_bytes: int
                               ) -> tuple[tuple[str, str, Plan] | None, str | None]:
    """(change, description, the plan at that fraction) for the smallest fraction of :func:`fraction_grid` that
    fits, found by bisection (a larger fraction only widens the engine's budget: the weights, activations and the
    requested sequences' KV cache do not move with it), else None; and, where none up to the most fits although
    the plan falls ``short_bytes`` short of its budget by less than the memory its fraction leaves out (so a larger
    fraction looks like the remedy), the line that says so (None otherwise: past that, not even the whole GPU
    would hold it, as the plan's does_not_fit warning already says). vLLM's and TensorRT-LLM's fractions only:
    SGLang's mem_fraction_static already leaves only the reserve its activations and CUDA graphs take."""
    from anchorgpu.planner.plan import plan  # plan() asks for suggestions; each one is planned again

    if w.engine not in ("vllm", "trtllm"):
        return None, None
    vllm = w.engine == "vllm"
    most = vllm_most_fraction(gpu, overheads) if vllm else TRTLLM_MOST_FRACTION
    now = w.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    grid = fraction_grid(now, most)
    if not grid:
        return None, None
    within_reach = vllm and short_bytes <= (1.0 - now) * gpu.memory_bytes

    def planned(u: float) -> Plan | None:
        try:
            return plan(model, evolve(w, gpu_memory_utilization=u), precision=precision, layout=layout, gpu=gpu,
                        overheads=overheads, suggest=False, choose_layout=False)
        except InvalidWorkload:
            return None

    top = planned(grid[-1])
    if top is None or not top.fits or top.headroom_bytes is None:
        if top is None or top.headroom_bytes is None or not within_reach:
            return None, None
        return None, (f"No --gpu-memory-utilization makes this fit: at {grid[-1]:g}, the most vLLM starts with on "
                      f"{gpu.name}, it needs "
                      f"{fmt_bytes(top.per_gpu.total_bytes)} per GPU, {fmt_bytes(-top.headroom_bytes)} more than the "
                      f"{fmt_bytes(top.per_gpu.total_bytes + top.headroom_bytes)} available.")
    lo, hi, best = 0, len(grid) - 1, top  # grid[hi] fits; bisect for the first that does
    while lo < hi:
        mid = (lo + hi) // 2
        alt = planned(grid[mid])
        if alt is not None and alt.fits and alt.headroom_bytes is not None:
            hi, best = mid, alt
        else:
            lo = mid + 1
    u = grid[hi]
    if vllm:
        outside = gpu.memory_bytes - int(u * gpu.memory_bytes)
        left = max(0, outside - context_bytes(gpu, overheads))
        runtime = gpu.runtime_name
        description = (f"let vLLM use {round(u * 100, 1):g} % of GPU memory, the least that fits (at "
                       f"most {most:g} starts on {gpu.name}); it leaves {fmt_bytes(outside)} outside vLLM's budget, "
                       f"{fmt_bytes(left)} of it for other processes after vLLM's {runtime} context")
    else:
        description = (f"let TensorRT-LLM's KV cache take {round(u * 100, 1):g} % of the memory free after profiling, the least "
                       "that fits")
    return (f"--gpu-memory-utilization {u:g}", description, best), None
