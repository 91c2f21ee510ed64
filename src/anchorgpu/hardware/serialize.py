"""The stable JSON form of a :class:`GpuSpec` (``anchorgpu gpus --json``, the API's ``/gpus``). Pure.

Keys are a contract: keep them, add freely. Money is a decimal string; bytes and FLOP/s are numbers.
"""

from __future__ import annotations

from typing import Any

from anchorgpu.hardware.loader import PEAK_KEYS
from anchorgpu.hardware.registry import source_descriptions
from anchorgpu.hardware.spec import PRECISIONS, GpuSpec, Peak

__all__ = ["gpu_to_json", "peak_to_json"]


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
        "memory_headline": gpu.memory_headline,
        "memory_unit": gpu.memory_unit,
        "memory_type": gpu.memory_type,
        "memory_bandwidth_bytes_per_s": _flops(gpu.memory_bandwidth_bytes_per_s),
        "peaks": {k: {**v, "flops_per_s": _flops(v["flops_per_s"])} for k, v in peaks.items()},
        "fp8_hardware": gpu.fp8_hardware,
        "fp4_hardware": gpu.fp4_hardware,
        "fp4_formats": list(gpu.fp4_formats),
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
        "source_details": source_descriptions(gpu.sources),
        "notes": gpu.notes,
    }
