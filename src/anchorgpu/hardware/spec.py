"""Frozen records for GPU hardware: what the planner and catalog read about a GPU. Pure; stdlib only.

Peak throughputs keep "absent in hardware" distinct from "unknown": ``Peak.status`` says which, and
``Peak.uncertain`` marks a value the source flags as doubtful (a ``?`` in the reference table).

``GpuSpec.peaks`` holds one :class:`Peak` for every name in :data:`PRECISIONS`, plus two details of
FP64: ``"fp64_vector"`` (CUDA cores / SIMD) and ``"fp64_tensor"`` (tensor / matrix cores). ``"fp64"`` is
the faster of the two that is known (the tensor figure when the GPU has FP64 tensor cores).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from anchorgpu.errors import said

__all__ = ["GpuSpec", "Peak", "PeakStatus", "Precision", "PRECISIONS"]

Precision = Literal["fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4"]
PRECISIONS: tuple[Precision, ...] = ("fp64", "fp32", "tf32", "bf16", "fp8", "int8", "fp4")
PeakStatus = Literal["known", "absent", "unknown"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Peak:
    """Dense (no sparsity) peak throughput for one precision, in FLOP/s (OP/s for int8)."""

    status: PeakStatus
    flops_per_s: float | None = None  # None unless status == "known"
    uncertain: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSpec:
    name: str  # canonical id, e.g. "h100-sxm"
    display_name: str  # e.g. "NVIDIA H100 SXM 80GB"
    aliases: tuple[str, ...]
    vendor: Literal["NVIDIA", "AMD"]
    architecture: str
    form_factor: str
    memory_bytes: int  # what the planner budgets against: the runtime total where sourced, else the usable figure
    memory_headline: str  # the vendor's figure as written, e.g. "80 GB", "192 GiB"
    memory_unit: Literal["GB", "GiB"]  # which unit the vendor's headline means
    memory_type: str
    memory_bandwidth_bytes_per_s: float
    peaks: dict[str, Peak]  # keyed by Precision
    fp8_hardware: bool
    fp4_hardware: bool
    interconnect: str  # "none (PCIe only)" when there is no scale-up link
    interconnect_bandwidth_bytes_per_s: float | None  # per GPU, bidirectional; None if none/unknown
    pcie_gen: str
    pcie_bandwidth_bytes_per_s: float | None
    tdp_w: int | None
    compute_capability: str | None  # CUDA, e.g. "9.0"
    rocm_gfx_target: str | None  # ROCm, e.g. "gfx942"
    partitioning: str  # e.g. "MIG up to 7 (10 GB each)" — AnchorGPU rents whole GPUs regardless
    sources: tuple[str, ...]
    notes: str = ""
    uncertain_fields: tuple[str, ...] = field(default=())
    # Fields added after the first contract (all defaulted so that hand-built fakes keep working):
    memory_physical_bytes: int | None = None  # physical capacity when the platform exposes less (B200 192 vs 180)
    fp4_formats: tuple[str, ...] = ()  # e.g. ("NVFP4", "MXFP4"); empty when fp4_hardware is False
    scaleup_domain_gpus: int = 1  # GPUs reachable over the scale-up link (8 in HGX, 72 in NVL72, 2 bridged, 1 none)
    indicative_price_usd_per_gpu_hour: tuple[Decimal, Decimal] | None = None  # market (low, high); NOT our price
    indicative_price_observed: str = ""  # when those market prices were seen
    sm_count: int | None = None  # SMs (NVIDIA) / compute units (AMD) enabled; None: not in the catalog
    # The vendor's usable/platform figure (80 GiB for an "80 GB" H100) when ``memory_bytes`` is the runtime total
    # instead (what CUDA/ROCm report: torch.cuda.get_device_properties(0).total_memory, vLLM's total_gpu_memory);
    # None where no runtime figure is sourced and ``memory_bytes`` is that figure itself.
    memory_nominal_bytes: int | None = None
    memory_runtime_sources: tuple[str, ...] = ()  # where the runtime total was reported (repo@commit path, runs)
    # The total the vendor's management tool reports, MiB: ``nvidia-smi --query-gpu=memory.total`` (81,559 on an H100
    # 80GB HBM3, above CUDA's 79.18 GiB), on AMD rocminfo's GPU pool; what SGLang sizes its tiers and
    # mem_fraction_static by. None where no report is sourced.
    memory_smi_mib: int | None = None
    memory_smi_sources: tuple[str, ...] = ()  # where that total was reported (repo@commit path, runs)
    # The framework that runs TRAINING in each low-precision unit the GPU has ("fp8", "fp4"), None where none does;
    # a precision not listed is unrecorded (hand-built fakes): it follows the hardware flag, as Transformer Engine. Keys of sources.toml
    # in ``training_sources``. Serving a format is another matter (the serving engines' own checks).
    training_stacks: dict[str, str | None] = field(default_factory=dict)
    training_sources: tuple[str, ...] = ()
    # The devices its software sees in one package (MI250X: 2 GCDs of 64 GB, each its own ROCm device); every figure
    # above is the package's, as its vendor counts it. 1 for a GPU that is one device.
    devices_per_package: int = 1

    @property
    def memory_is_runtime(self) -> bool:
        """Whether ``memory_bytes`` is the total the CUDA/ROCm runtime reports (sourced), not the vendor's figure."""
        return self.memory_nominal_bytes is not None

    @property
    def is_uncertain(self) -> bool:
        """True when any field or peak of this GPU rests on a secondary source or conflicting sources."""
        return bool(self.uncertain_fields) or any(p.uncertain for p in self.peaks.values())

    @property
    def software_stack(self) -> Literal["cuda", "rocm"]:
        return "rocm" if self.vendor == "AMD" else "cuda"

    @property
    def runtime_name(self) -> Literal["CUDA", "ROCm"]:
        """The runtime's name as written in sentences (the memory total it reports, its stack)."""
        return "ROCm" if self.vendor == "AMD" else "CUDA"

    def computes_in(self, precision: str) -> bool:
        """Whether the tensor cores compute in ``precision``: FP8 and FP4 need their own units
        (``fp8_hardware``/``fp4_hardware``); any other precision runs everywhere.

        >>> from anchorgpu.hardware import get_gpu
        >>> get_gpu("a100").computes_in("fp8"), get_gpu("h100").computes_in("fp8"), get_gpu("h100").computes_in("bf16")
        (False, True, True)
        """
        if precision == "fp8":
            return self.fp8_hardware
        if precision == "fp4":
            return self.fp4_hardware
        return True

    def training_stack(self, precision: str) -> str | None:
        """The framework that trains in ``precision`` (fp8/fp4) here, None where none does or the GPU lacks the unit.

        >>> from anchorgpu.hardware import get_gpu
        >>> get_gpu("b200").training_stack("fp4"), get_gpu("mi355x").training_stack("fp4")
        ('Transformer Engine', 'ROCm Transformer Engine (MXFP4BlockScaling)')
        """
        if not self.computes_in(precision):
            return None
        return self.training_stacks.get(precision, "Transformer Engine")  # unrecorded: the planner's long-held assumption

    def training_refusal(self, precision: str) -> str | None:
        """Why ``--train-precision precision`` cannot train here (one line), or None: FP8 and FP4 training need
        the GPU's FP8/FP4 tensor cores and a training framework that runs that precision on them.

        >>> from anchorgpu.hardware import get_gpu
        >>> get_gpu("a100").training_refusal("fp8"), get_gpu("mi355x").training_refusal("fp4")
        ('--train-precision fp8: a100-80gb-sxm has no FP8 tensor cores', None)
        """
        if precision not in ("fp8", "fp4"):
            return None
        if not self.computes_in(precision):
            return said("--train-precision {precision}: {self_name} has no {upper} tensor cores", precision=precision,
                        self_name=self.name, upper=precision.upper())
        if self.training_stack(precision) is None:
            return (said("--train-precision {precision}: no training framework runs {upper} training on "
                         "{self_name} (it serves {upper} formats, but trains in bf16 or fp8 where they run)",
                         precision=precision, upper=precision.upper(), self_name=self.name))
        return None

    def peak_flops_per_s(self, precision: str) -> float | None:
        """Dense peak for ``precision`` or None when absent/unknown."""
        peak = self.peaks.get(precision)
        return peak.flops_per_s if peak is not None and peak.status == "known" else None
