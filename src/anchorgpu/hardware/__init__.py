"""AnchorGPU hardware: GPU specifications as versioned data, looked up by name or alias. Pure; stdlib only.

Public API (other areas code against these names):

- :func:`get_gpu` ``(name) -> GpuSpec``: canonical name or alias, case/space/hyphen-insensitive; raises
  :class:`~anchorgpu.errors.UnknownGpu` with "did you mean" suggestions.
- :func:`list_gpus` ``() -> tuple[GpuSpec, ...]``: every shipped GPU (cached).
- :class:`GpuSpec`, :class:`Peak`, :data:`PRECISIONS`: the frozen records (``hardware/spec.py``).
- :func:`source_descriptions`: what the source keys (``S2``, ``P6`` ...) of ``GpuSpec.sources`` mean.
- :func:`parse_gpus` / :func:`parse_sources`: validate data text (tests feed broken files to them).
- :func:`gpu_to_json`: the stable JSON form used by ``anchorgpu gpus --json`` and the API.
- :func:`compare_gpus` ``(a, b, *, price_a_usd_per_gpu_hour, price_b_usd_per_gpu_hour, workload)`` ->
  :class:`GpuComparison` (ratios ``a / b`` and plain-language statements); :func:`comparison_to_json` gives
  the ``anchorgpu gpus compare --json`` form (for the API and the web page's comparison view);
  :func:`compared_pair` ``(a_name, b_name)`` looks both up, refusing one GPU named twice.

Memory: ``GpuSpec.memory_bytes`` is the usable/platform capacity the planner budgets against (B200: 180 GiB
of 192 physical); ``memory_headline`` keeps the vendor's figure and ``memory_unit`` what its "GB" means.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from anchorgpu.hardware.spec import PRECISIONS, GpuSpec, Peak, PeakStatus, Precision

if TYPE_CHECKING:
    from anchorgpu.hardware.compare import (
        FEATURED_COMPARISONS,
        GpuComparison,
        MetricComparison,
        compare_gpus,
        compared_pair,
    )
    from anchorgpu.hardware.loader import normalize_name, parse_gpus, parse_sources
    from anchorgpu.hardware.registry import GpuIndex, get_gpu, list_gpus, source_descriptions
    from anchorgpu.hardware.resident_fit import Workload, WorkloadFit, workload_fit
    from anchorgpu.hardware.serialize import comparison_to_json, gpu_to_json

# Public name -> the submodule that defines it, imported on first use (PEP 562) so that importing the
# package (or one of its submodules) does not load the rest: ``anchorgpu plan`` must start fast.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        ("FEATURED_COMPARISONS", "GpuComparison", "MetricComparison", "compare_gpus", "compared_pair"),
        "anchorgpu.hardware.compare",
    ),
    **dict.fromkeys(("Workload", "WorkloadFit", "workload_fit"), "anchorgpu.hardware.resident_fit"),
    **dict.fromkeys(("normalize_name", "parse_gpus", "parse_sources"), "anchorgpu.hardware.loader"),
    **dict.fromkeys(("GpuIndex", "get_gpu", "list_gpus", "source_descriptions"), "anchorgpu.hardware.registry"),
    **dict.fromkeys(("comparison_to_json", "gpu_to_json"), "anchorgpu.hardware.serialize"),
}

__all__ = [
    "FEATURED_COMPARISONS",
    "PRECISIONS",
    "GpuComparison",
    "GpuIndex",
    "GpuSpec",
    "MetricComparison",
    "Peak",
    "PeakStatus",
    "Precision",
    "Workload",
    "WorkloadFit",
    "compare_gpus",
    "compared_pair",
    "comparison_to_json",
    "get_gpu",
    "gpu_to_json",
    "list_gpus",
    "normalize_name",
    "parse_gpus",
    "parse_sources",
    "source_descriptions",
    "workload_fit",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
