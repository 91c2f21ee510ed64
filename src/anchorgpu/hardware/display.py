"""Short human texts for GPU figures, shared by the CLI and the web page. Pure; stdlib only.

Uncertainty stays visible: an uncertain value reads ``"500? (uncertain)"`` (or ``"500?"`` when short),
and "absent in hardware" never reads like "unknown".
"""

from __future__ import annotations

from anchorgpu.hardware.spec import GpuSpec, Peak
from anchorgpu.units import GIB

__all__ = ["fmt_bandwidth", "fmt_budget_memory", "fmt_link", "fmt_link_short", "fmt_memory", "fmt_number", "fmt_peak", "fmt_stack",
           "fmt_training_stacks", "memory_kinds_note", "training_units"]

TERA = 1e12


def fmt_number(value: float) -> str:
    """Up to one decimal, thousands separated, no trailing ``.0``.

    >>> fmt_number(989.0), fmt_number(1670.5), fmt_number(0.864)
    ('989', '1,670.5', '0.864')
    """
    if value >= 100 or value == int(value):
        text = f"{value:,.1f}"
        return text[:-2] if text.endswith(".0") else text
    return f"{value:,.3g}"


def fmt_peak(peak: Peak, *, short: bool = False) -> str:
    """A dense peak in TFLOP/s (TOP/s for int8).

    >>> fmt_peak(Peak(status="known", flops_per_s=989e12))
    '989'
    >>> fmt_peak(Peak(status="known", flops_per_s=500e12, uncertain=True))
    '500? (uncertain)'
    >>> fmt_peak(Peak(status="known", flops_per_s=1670.5e12, uncertain=True), short=True)
    '1670?'
    >>> fmt_peak(Peak(status="absent")), fmt_peak(Peak(status="unknown"))
    ('absent', 'unknown')
    """
    if peak.status != "known" or peak.flops_per_s is None:
        return peak.status
    tflops = peak.flops_per_s / TERA
    text = (f"{tflops:.0f}" if tflops >= 100 else fmt_number(tflops)) if short else fmt_number(tflops)
    if peak.uncertain:
        return f"{text}?" if short else f"{text}? (uncertain)"
    return text


def fmt_memory(gpu: GpuSpec, *, short: bool = False) -> str:
    """Usable memory with the vendor's headline when they differ; where the catalog has the total the runtime
    reports (``memory_is_runtime``), that total, to two decimals, of the vendor's figure.

    >>> from anchorgpu.hardware import get_gpu
    >>> fmt_memory(get_gpu("gb200"))
    '184.31 GiB usable of 186 GiB on the platform (the total CUDA reports; headline 192 GB)'
    >>> fmt_memory(get_gpu("h100")), fmt_memory(get_gpu("h100"), short=True)
    ('79.18 GiB usable of 80 GB (the total CUDA reports)', '79.18/80 GiB')
    >>> fmt_memory(get_gpu("b200"))
    '178.35 GiB usable of 180 GiB on the platform (the total CUDA reports; headline 192 GB)'
    >>> fmt_memory(get_gpu("h800"), short=True)  # no runtime total sourced: the vendor's figure
    '80 GiB'
    """
    headline_number = gpu.memory_headline.split()[0]
    if gpu.memory_nominal_bytes is not None:
        usable = f"{gpu.memory_bytes / GIB:,.2f}"
        if short:
            return f"{usable}/{headline_number} GiB"
        runtime = f"the total {gpu.runtime_name} reports"
        nominal = fmt_number(gpu.memory_nominal_bytes / GIB)
        if nominal == headline_number:
            return f"{usable} GiB usable of {gpu.memory_headline} ({runtime})"
        return f"{usable} GiB usable of {nominal} GiB on the platform ({runtime}; headline {gpu.memory_headline})"
    usable = fmt_number(gpu.memory_bytes / GIB)
    text = f"{usable} GiB"
    if headline_number != usable:
        text = f"{usable} GiB usable (headline {gpu.memory_headline})" if not short else f"{usable}/{headline_number} GiB"
    return text


def memory_kinds_note(a: GpuSpec, b: GpuSpec) -> str:
    """Where one GPU's memory is the total its runtime reports and the other's the vendor's usable figure (no runtime
    report sourced), a sentence that says so; ``""`` when both are of one kind.

    >>> from anchorgpu.hardware import get_gpu
    >>> memory_kinds_note(get_gpu("h100"), get_gpu("h200"))
    ''
    >>> memory_kinds_note(get_gpu("b300"), get_gpu("h800"))
    "b300's memory is the total CUDA reports, h800's the vendor's usable figure (no runtime report is sourced; its runtime would report somewhat less)."
    """
    if a.memory_is_runtime == b.memory_is_runtime:
        return ""
    runtime, vendor = (a, b) if a.memory_is_runtime else (b, a)
    stack = runtime.runtime_name
    return (f"{runtime.name}'s memory is the total {stack} reports, {vendor.name}'s the vendor's usable figure "
            "(no runtime report is sourced; its runtime would report somewhat less).")


def fmt_budget_memory(gpu: GpuSpec) -> str:
    """The memory a plan budgets per GPU, for one line of text: ``79.18 GiB usable of 80 GB`` where the runtime's
    total is sourced (``memory_is_runtime``), else the figure alone (``80.00 GiB``).

    >>> from anchorgpu.hardware import get_gpu
    >>> fmt_budget_memory(get_gpu("h100")), fmt_budget_memory(get_gpu("h800"))
    ('79.18 GiB usable of 80 GB', '80.00 GiB')
    """
    text = f"{gpu.memory_bytes / GIB:,.2f} GiB"
    if gpu.memory_nominal_bytes is None:
        return text
    nominal = fmt_number(gpu.memory_nominal_bytes / GIB)
    headline_number = gpu.memory_headline.split()[0]
    return f"{text} usable of " + (gpu.memory_headline if nominal == headline_number else f"{nominal} GiB")


def fmt_bandwidth(bytes_per_s: float | None, *, unit: str = "TB/s") -> str:
    """Decimal bandwidth: ``3.35 TB/s`` or ``900 GB/s``; ``-`` when None.

    >>> fmt_bandwidth(3.35e12), fmt_bandwidth(9e11, unit="GB/s")
    ('3.35 TB/s', '900 GB/s')
    """
    if bytes_per_s is None:
        return "-"
    scale = 1e12 if unit == "TB/s" else 1e9
    return f"{fmt_number(bytes_per_s / scale)} {unit}"


def fmt_link(gpu: GpuSpec) -> str:
    """Scale-up link with its per-GPU bandwidth and a ``?`` when uncertain."""
    if gpu.interconnect_bandwidth_bytes_per_s is None:
        return gpu.interconnect if gpu.scaleup_domain_gpus == 1 else f"{gpu.interconnect}, bandwidth unknown"
    mark = "?" if "interconnect_bandwidth_gb_per_s" in gpu.uncertain_fields else ""
    return f"{gpu.interconnect}: {fmt_number(gpu.interconnect_bandwidth_bytes_per_s / 1e9)}{mark} GB/s"


def fmt_link_short(gpu: GpuSpec) -> str:
    """The scale-up link's name without its details, and its per-GPU GB/s.

    >>> from anchorgpu.hardware import get_gpu
    >>> fmt_link_short(get_gpu("h100")), fmt_link_short(get_gpu("mi300x")), fmt_link_short(get_gpu("l40s"))
    ('NVLink4 900', 'IF 896?', 'none')
    """
    name = gpu.interconnect.split("(")[0].split(";")[0].strip()
    name = name.replace("NVLink ", "NVLink").replace(" bridge", "br").replace("Infinity Fabric", "IF").replace(" 4th gen", "4")
    if gpu.scaleup_domain_gpus == 1:
        return "none"
    if gpu.interconnect_bandwidth_bytes_per_s is None:
        return f"{name} unknown"
    mark = "?" if "interconnect_bandwidth_gb_per_s" in gpu.uncertain_fields else ""
    return f"{name} {gpu.interconnect_bandwidth_bytes_per_s / 1e9:.0f}{mark}"


def fmt_stack(gpu: GpuSpec) -> str:
    """``CUDA 9.0`` or ``ROCm gfx942`` (``?`` when uncertain).

    >>> from anchorgpu.hardware import get_gpu
    >>> fmt_stack(get_gpu("mi300x")), fmt_stack(get_gpu("a10g"))
    ('ROCm gfx942', 'CUDA 8.6?')
    """
    if gpu.software_stack == "rocm":
        mark = "?" if "rocm_gfx_target" in gpu.uncertain_fields else ""
        return f"ROCm {gpu.rocm_gfx_target}{mark}"
    mark = "?" if "compute_capability" in gpu.uncertain_fields else ""
    return f"CUDA {gpu.compute_capability}{mark}"


def training_units(gpu: GpuSpec) -> list[tuple[str, str | None, bool]]:
    """For FP8 and FP4: the unit's name, the framework that trains in it on ``gpu`` (``GpuSpec.training_stack``; None
    where none does), and whether ``gpu`` has the unit's tensor cores at all. ``gpus show``, ``gpus compare`` and the
    web GPU pages each write their "FP8 / FP4 training" cell from it.

    >>> from anchorgpu.hardware import get_gpu
    >>> training_units(get_gpu("mi300x"))
    [('FP8', 'ROCm Transformer Engine', True), ('FP4', None, False)]
    """
    return [(precision.upper(), gpu.training_stack(precision), gpu.computes_in(precision))
            for precision in ("fp8", "fp4")]


def fmt_training_stacks(gpu: GpuSpec) -> str:
    """Which framework trains in FP8 and in FP4 on ``gpu`` (``GpuSpec.training_stack``), with its sources' keys.

    >>> from anchorgpu.hardware import get_gpu
    >>> fmt_training_stacks(get_gpu("mi355x"))
    'FP8: ROCm Transformer Engine; FP4: ROCm Transformer Engine (MXFP4BlockScaling) (S33)'
    >>> fmt_training_stacks(get_gpu("a100"))
    'FP8: none (no FP8 tensor cores); FP4: none (no FP4 tensor cores)'
    """
    parts = [f"{unit}: {stack}" if stack is not None else
             f"{unit}: none (no framework trains in it)" if has_unit else f"{unit}: none (no {unit} tensor cores)"
             for unit, stack, has_unit in training_units(gpu)]
    sources = f" ({', '.join(gpu.training_sources)})" if gpu.training_sources else ""
    return "; ".join(parts) + sources
