"""Peaks: the matrix-multiply precision a format or a training recipe runs at, the datasheet's dense peak for it on
a GPU (a fallback, with its warning, where the GPU lacks the math), and the peaks under a power limit. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init

__all__ = [
    "ComputePrecision",
    "PeakChoice",
    "compute_precision_for_training",
    "compute_precision_for_weights",
    "fp4_units_take",
    "hopper_or_newer",
    "peak_for",
    "power_capped",
    "weights_precision_on",
]

ComputePrecision = Literal["bf16", "fp8", "fp4"]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PeakChoice:
    """The dense peak the estimate divides by, the precision it belongs to, and why, if it fell back."""

    flops_per_s: float
    precision: str
    requested: str
    warning: tuple[str, str] | None = None


@lru_cache(maxsize=64)
def compute_precision_for_weights(weights_format: str) -> ComputePrecision:
    """The matrix-multiply precision a weight format runs at.

    FP8 weights run W8A8 at the FP8 rate; MXFP4/NVFP4 at the FP4 rate where hardware has it; every
    other format (bf16/fp16, int8, GPTQ/AWQ int4, NF4, GGUF) is weight-only: dequantised to 16 bit and
    multiplied at the BF16 rate.

    >>> compute_precision_for_weights("nvfp4"), compute_precision_for_weights("int4-awq")
    ('fp4', 'bf16')
    """
    fmt = weights_format.lower()
    if fmt.startswith("fp8"):
        return "fp8"
    if fmt in ("mxfp4", "nvfp4"):
        return "fp4"
    return "bf16"


def fp4_units_take(gpu: GpuSpec, weights_format: str) -> bool:
    """Whether ``gpu``'s FP4 units multiply ``weights_format`` (``mxfp4``, ``nvfp4``) natively: the format is one of
    the FP4 formats its tensor cores run (``GpuSpec.fp4_formats``). The block scales differ (MXFP4: an E8M0 scale per
    32 values; NVFP4: an E4M3 scale per 16), so CDNA4's units (MI355X: MXFP4 and MXFP6) do not take NVFP4: on AMD GPUs
    vLLM and SGLang run an NVFP4 checkpoint through Petit's weight-only kernels (BF16 or FP16 inputs:
    vllm-project/vllm ``vllm/model_executor/layers/quantization/petit.py`` ``PetitNvFp4Config``, whose
    ``get_supported_act_dtypes`` are those two; sgl-project/sglang the same file under ``python/sglang/srt``).

    >>> from anchorgpu.hardware import get_gpu
    >>> [fp4_units_take(get_gpu(g), f) for g, f in (("b200", "nvfp4"), ("mi355x", "mxfp4"), ("mi355x", "nvfp4"))]
    [True, True, False]
    """
    return gpu.fp4_hardware and weights_format.upper() in gpu.fp4_formats


def weights_precision_on(gpu: GpuSpec, weights_format: str) -> ComputePrecision:
    """:func:`compute_precision_for_weights` on ``gpu``: an FP4 format its FP4 units do not take
    (:func:`fp4_units_take`) is dequantized and multiplied at the BF16 rate, as on a GPU without FP4 math (which
    :func:`peak_for` falls back from itself, with its warning).

    >>> from anchorgpu.hardware import get_gpu
    >>> [weights_precision_on(get_gpu("mi355x"), f) for f in ("mxfp4", "nvfp4", "fp8")]
    ['fp4', 'bf16', 'fp8']
    """
    precision = compute_precision_for_weights(weights_format)
    if precision == "fp4" and gpu.fp4_hardware and not fp4_units_take(gpu, weights_format):
        return "bf16"
    return precision


def compute_precision_for_training(train_precision: str) -> ComputePrecision:
    """The matrix-multiply precision of a ``--train-precision``: FP8/FP4 as named, BF16 for the others.

    >>> compute_precision_for_training("fp8"), compute_precision_for_training("mixed")
    ('fp8', 'bf16')
    """
    return "fp8" if train_precision == "fp8" else "fp4" if train_precision == "fp4" else "bf16"


_PEAK_MEMO: dict[tuple[int, str], tuple[GpuSpec, PeakChoice]] = {}


def peak_for(gpu: GpuSpec, precision: str) -> PeakChoice:
    """:func:`_peak_for`, memoised per (GPU spec object, precision): both are immutable."""
    key = (id(gpu), precision)
    hit = _PEAK_MEMO.get(key)
    if hit is not None and hit[0] is gpu:
        return hit[1]
    if len(_PEAK_MEMO) >= 1024:
        _PEAK_MEMO.clear()
    choice = _peak_for(gpu, precision)
    _PEAK_MEMO[key] = (gpu, choice)
    return choice


def _peak_for(gpu: GpuSpec, precision: str) -> PeakChoice:
    """Dense peak of ``precision`` (bf16/fp16, fp8 or fp4) on ``gpu``: FP8 only where ``gpu.fp8_hardware``,
    FP4 only where ``gpu.fp4_hardware``, otherwise the BF16 peak with a warning whose code is in the
    planner's registry.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> peak_for(toy_gpu(), "fp4").warning[0]
    'fp4_weight_only_emulation'
    """
    wanted = precision.lower()
    if wanted in ("fp16", "bf16", "float16", "bfloat16"):
        wanted = "bf16"
    if wanted not in ("bf16", "fp8", "fp4"):
        raise InvalidWorkload(said("compute precision {precision!r}: expected bf16, fp16, fp8 or fp4",
                                   precision=precision))
    warning: tuple[str, str] | None = None
    if wanted == "fp8" and not gpu.fp8_hardware:
        warning = ("fp8_without_hardware", f"{gpu.name} has no FP8 tensor cores: speed estimated at the BF16 rate")
    elif wanted == "fp4" and not gpu.fp4_hardware:
        warning = ("fp4_weight_only_emulation",
                   f"{gpu.name} has no FP4 math: FP4 weights are dequantized, speed at the BF16 rate")
    if warning is None:
        rate = gpu.peak_flops_per_s(wanted)
        if rate is not None:
            return PeakChoice(flops_per_s=rate, precision=wanted, requested=precision)
        if wanted != "bf16":
            warning = ("kernel_support_unchecked",
                       f"{gpu.name}: no published dense {wanted.upper()} peak, speed estimated at the BF16 rate")
    rate = gpu.peak_flops_per_s("bf16")
    if rate is None:
        raise InvalidWorkload(said("{gpu_name}: no published dense BF16 peak, so speed cannot be estimated",
                                   gpu_name=gpu.name))
    return PeakChoice(flops_per_s=rate, precision="bf16", requested=precision, warning=warning)


def power_capped(gpu: GpuSpec, power_limit_w: float) -> GpuSpec:
    """``gpu`` run under a board power limit below its rated TDP: dense peaks scaled by the sustained clock.

    Dynamic CMOS power is ``C * V^2 * f`` and, at the top of the voltage/frequency curve, the voltage rises
    about in step with the clock, so power goes as ``f^3`` and a board held at ``P`` of its rated ``TDP``
    sustains a clock of ``(P / TDP)^(1/3)`` of the one its peaks assume (500 W of 700 W: 0.894). Tensor
    throughput follows the clock; memory bandwidth (HBM's own clock) and the links do not. A limit at or
    above the TDP, or a GPU without a rated TDP, changes nothing.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> round(power_capped(toy_gpu(), 500).peak_flops_per_s("bf16") / 1e12, 1)  # 989 x (500/700)^(1/3)
    884.1
    >>> power_capped(toy_gpu(), 800).peaks == toy_gpu().peaks  # at or above the 700 W TDP: unchanged
    True
    """
    if power_limit_w <= 0:
        raise InvalidWorkload(said("power limit {power_limit_w} W: must be positive", power_limit_w=power_limit_w))
    if not gpu.tdp_w or power_limit_w >= gpu.tdp_w:
        return gpu
    clock = (power_limit_w / gpu.tdp_w) ** (1.0 / 3.0)
    peaks = {name: replace(peak, flops_per_s=peak.flops_per_s * clock) if peak.flops_per_s else peak
             for name, peak in gpu.peaks.items()}
    return replace(gpu, peaks=peaks, tdp_w=int(power_limit_w))


def hopper_or_newer(gpu: GpuSpec) -> bool:
    """An NVIDIA GPU of compute capability 9.0 or later (where FlashAttention-2 reaches about a third of the peak).

    >>> from anchorgpu.hardware import get_gpu
    >>> hopper_or_newer(get_gpu("h100")), hopper_or_newer(get_gpu("a100")), hopper_or_newer(get_gpu("mi300x"))
    (True, False, False)
    """
    major = (gpu.compute_capability or "").rstrip("?").split(".")[0]
    return gpu.vendor == "NVIDIA" and major.isdigit() and int(major) >= 9
