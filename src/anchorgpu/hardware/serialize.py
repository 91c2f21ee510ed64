"""The stable JSON form of a :class:`GpuSpec` (``anchorgpu gpus --json``, the API's ``/gpus``). Pure.

Keys are a contract: keep them, add freely. Money is a decimal string; bytes and FLOP/s are numbers.
"""

from __future__ import annotations

from dataclasses import asdict
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from anchorgpu.hardware.display import fmt_training_stacks
from anchorgpu.hardware.loader import PEAK_KEYS
from anchorgpu.hardware.registry import source_descriptions
from anchorgpu.hardware.spec import PRECISIONS, GpuSpec, Peak

if TYPE_CHECKING:
    from anchorgpu.hardware.compare import GpuComparison, MetricComparison

__all__ = ["comparison_to_json", "gpu_to_json", "metric_to_json", "peak_to_json"]


def peak_to_json(peak: Peak) -> dict[str, Any]:
    """``{"status", "flops_per_s", "uncertain"}``; ``flops_per_s`` is null unless status is "known"."""
    return {"status": peak.status, "flops_per_s": peak.flops_per_s, "uncertain": peak.uncertain}


def _flops(value: float | None) -> float | int | None:
    # Whole numbers print without ".0" (989e12 -> 989000000000000) so JSON readers see exact integers.
    if value is None:
        return None
    return int(value) if value == int(value) else value


def gpu_to_json(gpu: GpuSpec) -> dict[str, Any]:
    """Plain JSON types for one GPU (see the module docstring for the contract)."""
    order = [*PRECISIONS, *(k for k in PEAK_KEYS if k not in PRECISIONS)]
    peaks = {k: peak_to_json(gpu.peaks[k]) for k in order if k in gpu.peaks}
    price = gpu.indicative_price_usd_per_gpu_hour
    return {
        "name": gpu.name,
        "display_name": gpu.display_name,
        "aliases": list(gpu.aliases),
        "vendor": gpu.vendor,
        "architecture": gpu.architecture,
        "form_factor": gpu.form_factor,
        "memory_bytes": gpu.memory_bytes,
        "memory_physical_bytes": gpu.memory_physical_bytes,
        "memory_nominal_bytes": gpu.memory_nominal_bytes,
        "memory_runtime_sources": list(gpu.memory_runtime_sources),
        "memory_smi_mib": gpu.memory_smi_mib,
        "memory_smi_sources": list(gpu.memory_smi_sources),
        "memory_headline": gpu.memory_headline,
        "memory_unit": gpu.memory_unit,
        "memory_type": gpu.memory_type,
        "memory_bandwidth_bytes_per_s": _flops(gpu.memory_bandwidth_bytes_per_s),
        "peaks": {k: {**v, "flops_per_s": _flops(v["flops_per_s"])} for k, v in peaks.items()},
        "fp8_hardware": gpu.fp8_hardware,
        "fp4_hardware": gpu.fp4_hardware,
        "fp4_formats": list(gpu.fp4_formats),
        # the framework that trains in FP8 / FP4 here (null: none does, or no such units), as plan and recommend read it
        "training_stacks": {precision: gpu.training_stack(precision) for precision in ("fp8", "fp4")},
        "training_sources": list(gpu.training_sources),
        "interconnect": gpu.interconnect,
        "interconnect_bandwidth_bytes_per_s": _flops(gpu.interconnect_bandwidth_bytes_per_s),
        "scaleup_domain_gpus": gpu.scaleup_domain_gpus,
        "tdp_w": gpu.tdp_w,
        "pcie_gen": gpu.pcie_gen,
        "pcie_bandwidth_bytes_per_s": _flops(gpu.pcie_bandwidth_bytes_per_s),
        "compute_capability": gpu.compute_capability,
        "rocm_gfx_target": gpu.rocm_gfx_target,
        "software_stack": gpu.software_stack,
        "partitioning": gpu.partitioning,
        "uncertain_fields": list(gpu.uncertain_fields),
        "indicative_price_usd_per_gpu_hour": None
        if price is None
        else {"low": str(price[0]), "high": str(price[1]), "observed": gpu.indicative_price_observed},
        "sources": list(gpu.sources),
        # the training stacks' sources too (S32, S33), as the CLI's sources row explains them
        "source_details": source_descriptions(dict.fromkeys((*gpu.sources, *gpu.training_sources))),
        "notes": gpu.notes,
    }


def _plain(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)  # money stays exact
    if isinstance(value, float):
        return _flops(value)
    return value


def metric_to_json(row: MetricComparison) -> dict[str, Any]:
    """One comparison row; money as decimal strings, whole floats as integers."""
    return {key: _plain(value) for key, value in asdict(row).items()}


def comparison_to_json(comparison: GpuComparison, *, price_notes: tuple[str, str] | None = None) -> dict[str, Any]:
    """``anchorgpu gpus compare A B --json``: both GPUs, ratios ``a / b`` by metric, rows, statements, workload.

    >>> from anchorgpu.hardware import compare_gpus, get_gpu
    >>> data = comparison_to_json(compare_gpus(get_gpu("h200"), get_gpu("h100")))
    >>> data["ratio_is"], round(data["ratios"]["memory_bytes"], 4), data["ratios"]["bf16_flops_per_s"]
    ('a / b', 1.7656, 1.0)
    >>> data["training"]["a"]
    'FP8: Transformer Engine; FP4: none (no FP4 tensor cores) (S32)'
    """
    return {
        "a": gpu_to_json(comparison.a),
        "b": gpu_to_json(comparison.b),
        "ratio_is": "a / b",
        "ratios": {row.metric: row.ratio for row in comparison.metrics},
        "metrics": [metric_to_json(row) for row in comparison.metrics],
        # the table's "FP8 / FP4 training" row, worded as `gpus show` words it (no ratio: a framework's name)
        "training": {"a": fmt_training_stacks(comparison.a), "b": fmt_training_stacks(comparison.b)},
        "price_notes": None if price_notes is None else {"a": price_notes[0], "b": price_notes[1]},
        "statements": list(comparison.statements),
        "workload": None if comparison.workload is None else {k: _plain(v) for k, v in asdict(comparison.workload).items()},
        "fits": None if comparison.fits is None else [{k: _plain(v) for k, v in asdict(f).items()} for f in comparison.fits],
        "predicted": [asdict(row) for row in comparison.predicted],
    }
