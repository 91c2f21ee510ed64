"""The pure memory planner: will this workload fit, per GPU, in integer bytes, and what was assumed.

Public API (stdlib only; imports ``anchorgpu.units``, ``errors``, ``architectures.spec``, ``hardware.spec``):

- :func:`plan` — ``plan(model, workload, *, precision, layout, gpu, overheads) -> Plan``.
- :class:`Workload`, :class:`PrecisionPlan`, :class:`Layout`, :class:`Overheads` — frozen inputs.
- :class:`Plan`, :class:`MemoryBreakdown`, :class:`ResolvedLayout`, :class:`Suggestion` — frozen output.
- :func:`plan_to_json` — the DESIGN.md section 5 JSON contract (``Plan.extra`` adds sections such as
  ``performance``).
- :data:`WARNING_CODES`, :class:`PlanWarning` — the one warning registry (code → glossary concept).
- :data:`WEIGHT_FORMATS`, :func:`get_format` — weight formats with their metadata bits.
- :mod:`anchorgpu.planner.memory`, :mod:`anchorgpu.planner.diffusion` — one function per memory term.
"""

from __future__ import annotations

from anchorgpu.planner.formats import WEIGHT_FORMATS, WeightFormat, get_format
from anchorgpu.planner.inputs import (
    KV_CACHE_DTYPES,
    OFFLOADS,
    OPTIMIZER_STATES,
    OPTIMIZERS,
    RECOMPUTES,
    TASKS,
    Layout,
    Overheads,
    PrecisionPlan,
    Workload,
)
from anchorgpu.planner.plan import MemoryBreakdown, Plan, ResolvedLayout, Suggestion, plan
from anchorgpu.planner.report import model_to_json, plan_to_json
from anchorgpu.planner.warnings import WARNING_CODES, PlanWarning, WarningCode

__all__ = [
    "KV_CACHE_DTYPES",
    "OFFLOADS",
    "OPTIMIZER_STATES",
    "OPTIMIZERS",
    "RECOMPUTES",
    "TASKS",
    "WARNING_CODES",
    "WEIGHT_FORMATS",
    "Layout",
    "MemoryBreakdown",
    "Overheads",
    "Plan",
    "PlanWarning",
    "PrecisionPlan",
    "ResolvedLayout",
    "Suggestion",
    "WarningCode",
    "WeightFormat",
    "Workload",
    "get_format",
    "model_to_json",
    "plan",
    "plan_to_json",
]
