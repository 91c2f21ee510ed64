"""Side-by-side comparison of two GPUs, with ratios and what the difference means. Pure; stdlib only.

Ratios are ``a / b`` (``compare_gpus(h200, h100)`` gives memory 141/80 = 1.7625). A ratio is None when
either side is absent, unknown or zero, and the row says why. Prices are passed in (the hardware core
does not read the catalog); a workload is described by plain numbers (its weights bytes), never by a
model object, so this module stays free of the planner and the catalog.

What the numbers mean, in the roofline picture the planner uses:

- **decode** (one token at a time, small batch) reads every weight once per token, so its speed scales
  with memory bandwidth: tokens/s per user <= bandwidth / bytes read per token;
- **prefill and training** are matrix multiplies, so they scale with dense tensor throughput at the
  precision used (BF16, FP8 or FP4);
- **capacity** (which models, contexts and batch sizes fit) scales with memory;
- **tensor parallelism** beyond one GPU needs a fast scale-up link; over PCIe it is slow.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal

from anchorgpu.hardware.spec import GpuSpec, Peak
from anchorgpu.units import GB, GIB

__all__ = ["GpuComparison", "MetricComparison", "WorkloadFit", "compare_gpus", "workload_fit"]

Number = float | int | Decimal


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricComparison:
    """One row of a comparison: both values, their ratio ``a / b`` and why a ratio is missing."""

    metric: str  # stable key, e.g. "memory_bytes", "bf16_flops_per_s"
    label: str  # for people, e.g. "Dense BF16"
    unit: str  # "bytes", "bytes/s", "FLOP/s", "W", "USD/GPU-hour"
    a: Number | None
    b: Number | None
    a_status: str  # "known" | "absent" | "unknown" | "none" (no such link) | "unpriced"
    b_status: str
    ratio: float | None
    uncertain: bool = False
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadFit:
    """Whether a model's weights alone fit on one GPU, and the batch-1 decode ceiling they imply."""

    gpu: str
    weights_bytes: int
    memory_bytes: int
    fits_one_gpu: bool  # weights alone (no KV cache, activations or runtime overhead)
    min_gpus_for_weights: int  # ceil(weights / memory); a floor, not a plan
    decode_ceiling_tokens_per_s: float  # bandwidth / bytes read per token (batch 1, upper bound)


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuComparison:
    a: GpuSpec
    b: GpuSpec
    metrics: tuple[MetricComparison, ...]
    statements: tuple[str, ...]  # plain-language meaning of the differences
    workload: tuple[WorkloadFit, WorkloadFit] | None = None
    workload_name: str = ""

    def metric(self, key: str) -> MetricComparison:
        for row in self.metrics:
            if row.metric == key:
                return row
        raise KeyError(key)


def _ratio(a: Number | None, b: Number | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return float(a) / float(b)


def _value_row(metric: str, label: str, unit: str, a: Number | None, b: Number | None, *, missing: str, uncertain: bool = False) -> MetricComparison:
    a_status = "known" if a is not None else missing
    b_status = "known" if b is not None else missing
    note = "" if a is not None and b is not None else f"no ratio: {label.lower()} is {missing} on one side"
    return MetricComparison(metric=metric, label=label, unit=unit, a=a, b=b, a_status=a_status, b_status=b_status, ratio=_ratio(a, b), uncertain=uncertain, note=note)


def _peak_row(precision: str, label: str, a: Peak, b: Peak) -> MetricComparison:
    ratio = _ratio(a.flops_per_s, b.flops_per_s) if a.status == b.status == "known" else None
    note = ""
    if ratio is None:
        sides = [f"{side} {peak.status}" for side, peak in (("first", a), ("second", b)) if peak.status != "known"]
        note = "no ratio: " + ", ".join(sides)
    return MetricComparison(
        metric=f"{precision}_flops_per_s",
        label=label,
        unit="FLOP/s",
        a=a.flops_per_s,
        b=b.flops_per_s,
        a_status=a.status,
        b_status=b.status,
        ratio=ratio,
        uncertain=a.uncertain or b.uncertain,
        note=note,
    )


def _fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x"


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.0f} GiB"


def _statements(a: GpuSpec, b: GpuSpec, rows: dict[str, MetricComparison]) -> list[str]:
    out: list[str] = []
    mem = rows["memory_bytes"].ratio
    if mem is not None:
        if abs(mem - 1) < 0.005:
            out.append(f"Capacity: same memory ({_gib(a.memory_bytes)}); the same models, contexts and batches fit.")
        else:
            big, small = (a, b) if mem > 1 else (b, a)
            out.append(
                f"Capacity: {big.name} has {_fmt_ratio(max(mem, 1 / mem))} the memory of {small.name} "
                f"({_gib(big.memory_bytes)} vs {_gib(small.memory_bytes)}): bigger models, longer contexts "
                f"and more concurrent users fit on each GPU, or the same model needs fewer GPUs."
            )
    bw = rows["memory_bandwidth_bytes_per_s"].ratio
    if bw is not None:
        if abs(bw - 1) < 0.005:
            out.append("Decode: same memory bandwidth, so token-by-token generation runs at about the same speed.")
        else:
            fast, slow = (a, b) if bw > 1 else (b, a)
            out.append(
                f"Decode: generation reads every weight once per token, so it scales with memory bandwidth; "
                f"{fast.name} can generate up to {_fmt_ratio(max(bw, 1 / bw))} the tokens/s per user of {slow.name} "
                f"for the same model and batch."
            )
    bf16 = rows["bf16_flops_per_s"]
    if bf16.ratio is not None:
        if abs(bf16.ratio - 1) < 0.005:
            out.append("Prefill and training: same dense BF16 throughput, so compute-bound work runs at about the same speed.")
        else:
            fast, slow = (a, b) if bf16.ratio > 1 else (b, a)
            out.append(
                f"Prefill and training (compute bound): {fast.name} has {_fmt_ratio(max(bf16.ratio, 1 / bf16.ratio))} "
                f"the dense BF16 throughput of {slow.name}."
            )
    for precision, label in (("fp8", "FP8"), ("fp4", "FP4")):
        flag_a = a.fp8_hardware if precision == "fp8" else a.fp4_hardware
        flag_b = b.fp8_hardware if precision == "fp8" else b.fp4_hardware
        if flag_a != flag_b:
            has, lacks = (a, b) if flag_a else (b, a)
            formats = f" ({', '.join(has.fp4_formats)})" if precision == "fp4" and has.fp4_formats else ""
            out.append(
                f"{label}: only {has.name} computes in {label}{formats} in hardware; on {lacks.name} {label} weights "
                f"save memory only if the engine dequantizes them, and run at a higher precision's speed."
            )
        elif flag_a and rows[f"{precision}_flops_per_s"].ratio is not None:
            ratio = rows[f"{precision}_flops_per_s"].ratio
            assert ratio is not None
            if abs(ratio - 1) >= 0.005:
                out.append(f"{label}: both support it; {a.name} has {_fmt_ratio(ratio)} the dense {label} throughput of {b.name}.")
    if a.scaleup_domain_gpus != b.scaleup_domain_gpus:
        for gpu in (a, b):
            if gpu.scaleup_domain_gpus == 1:
                out.append(f"Scale-up: {gpu.name} has no GPU-to-GPU link ({gpu.interconnect}); tensor parallelism across its GPUs goes over PCIe and is slow.")
            elif gpu.scaleup_domain_gpus == 2:
                out.append(f"Scale-up: {gpu.name}'s link ({gpu.interconnect}) joins only pairs; tensor parallelism beyond 2 GPUs crosses PCIe.")
        big = a if a.scaleup_domain_gpus > b.scaleup_domain_gpus else b
        out.append(f"Scale-up: {big.name} links {big.scaleup_domain_gpus} GPUs in one fast domain ({big.interconnect}).")
    if a.software_stack != b.software_stack:
        amd = a if a.software_stack == "rocm" else b
        out.append(
            f"Software: {amd.name} runs ROCm ({amd.rocm_gfx_target}), not CUDA; check that every dependency "
            f"(engine, kernels, quantization library) has a ROCm build for it."
        )
    tdp = rows["tdp_w"].ratio
    if tdp is not None and abs(tdp - 1) >= 0.005:
        out.append(f"Power: {a.name} is rated {a.tdp_w} W vs {b.tdp_w} W ({_fmt_ratio(tdp)}); this matters for owned racks, not for a rented GPU-hour.")
    price = rows["price_usd_per_gpu_hour"]
    if price.ratio is not None and bw is not None:
        out.append(
            f"Price: {a.name} costs {_fmt_ratio(price.ratio)} per GPU-hour; per dollar it gives "
            f"{_fmt_ratio(bw / price.ratio)} the memory bandwidth (decode) and {_fmt_ratio((mem or 0) / price.ratio)} the memory of {b.name}."
        )
    if any(row.uncertain for row in rows.values()) or a.is_uncertain or b.is_uncertain:
        out.append("Some figures rest on secondary sources or conflicting documents (marked '?'); check them before you rely on them.")
    return out


def workload_fit(gpu: GpuSpec, weights_bytes: int, *, bytes_per_token: int | None = None) -> WorkloadFit:
    """Weights-only fit on one GPU and the batch-1 decode ceiling.

    ``bytes_per_token`` is what decode reads per token (the active weights for MoE); it defaults to
    ``weights_bytes``. Ceiling = memory bandwidth / bytes_per_token (tokens/s, one user, no KV reads).

    >>> from anchorgpu.hardware import get_gpu
    >>> fit = workload_fit(get_gpu("h100"), 140 * 10**9)
    >>> fit.fits_one_gpu, fit.min_gpus_for_weights, round(fit.decode_ceiling_tokens_per_s, 1)
    (False, 2, 23.9)
    """
    if weights_bytes <= 0:
        raise ValueError("weights_bytes must be positive")
    per_token = bytes_per_token if bytes_per_token is not None else weights_bytes
    return WorkloadFit(
        gpu=gpu.name,
        weights_bytes=weights_bytes,
        memory_bytes=gpu.memory_bytes,
        fits_one_gpu=weights_bytes <= gpu.memory_bytes,
        min_gpus_for_weights=-(-weights_bytes // gpu.memory_bytes),
        decode_ceiling_tokens_per_s=gpu.memory_bandwidth_bytes_per_s / per_token,
    )


def _workload_statements(name: str, fits: tuple[WorkloadFit, WorkloadFit]) -> list[str]:
    weights_gb = fits[0].weights_bytes / GB
    out = []
    for fit in fits:
        where = (
            f"fit on one {fit.gpu} ({fit.memory_bytes / GB:,.1f} GB), leaving {(fit.memory_bytes - fit.weights_bytes) / GB:,.1f} GB "
            f"for KV cache, activations and runtime"
            if fit.fits_one_gpu
            else f"do not fit on one {fit.gpu}; the weights alone need at least {fit.min_gpus_for_weights} GPUs"
        )
        out.append(
            f"{name}: weights take {weights_gb:,.1f} GB and {where}; batch-1 decode is capped near "
            f"{fit.decode_ceiling_tokens_per_s:,.0f} tokens/s by bandwidth."
        )
    out.append("Weights only: KV cache, activations and runtime overhead come on top; run 'anchorgpu plan' for the full per-GPU budget.")
    return out


def compare_gpus(
    a: GpuSpec,
    b: GpuSpec,
    *,
    price_a_usd_per_gpu_hour: Decimal | None = None,
    price_b_usd_per_gpu_hour: Decimal | None = None,
    workload_name: str = "",
    weights_bytes: int | None = None,
    decode_bytes_per_token: int | None = None,
) -> GpuComparison:
    """Compare ``a`` with ``b``: every ratio is ``a / b``.

    >>> from anchorgpu.hardware import get_gpu
    >>> c = compare_gpus(get_gpu("h200"), get_gpu("h100"))
    >>> c.metric("memory_bytes").ratio, round(c.metric("memory_bandwidth_bytes_per_s").ratio or 0, 4)
    (1.7625, 1.4328)
    >>> c.metric("bf16_flops_per_s").ratio
    1.0
    """
    a_ic, b_ic = a.interconnect_bandwidth_bytes_per_s, b.interconnect_bandwidth_bytes_per_s
    ic = MetricComparison(
        metric="interconnect_bandwidth_bytes_per_s",
        label="Scale-up link (per GPU, bidirectional)",
        unit="bytes/s",
        a=a_ic,
        b=b_ic,
        a_status="known" if a_ic is not None else ("none" if a.scaleup_domain_gpus == 1 else "unknown"),
        b_status="known" if b_ic is not None else ("none" if b.scaleup_domain_gpus == 1 else "unknown"),
        ratio=_ratio(a_ic, b_ic),
        uncertain="interconnect_bandwidth_gb_per_s" in a.uncertain_fields or "interconnect_bandwidth_gb_per_s" in b.uncertain_fields,
    )
    if ic.ratio is None:
        ic = replace(ic, note=f"no ratio: first {ic.a_status}, second {ic.b_status}")
    rows = [
        _value_row("memory_bytes", "Memory (usable)", "bytes", a.memory_bytes, b.memory_bytes, missing="unknown"),
        _value_row("memory_bandwidth_bytes_per_s", "Memory bandwidth", "bytes/s", a.memory_bandwidth_bytes_per_s, b.memory_bandwidth_bytes_per_s, missing="unknown"),
        _peak_row("bf16", "Dense BF16", a.peaks["bf16"], b.peaks["bf16"]),
        _peak_row("fp8", "Dense FP8", a.peaks["fp8"], b.peaks["fp8"]),
        _peak_row("fp4", "Dense FP4", a.peaks["fp4"], b.peaks["fp4"]),
        ic,
        _value_row("tdp_w", "TDP", "W", a.tdp_w, b.tdp_w, missing="unknown"),
        _value_row(
            "price_usd_per_gpu_hour",
            "Price per GPU-hour",
            "USD/GPU-hour",
            price_a_usd_per_gpu_hour,
            price_b_usd_per_gpu_hour,
            missing="unpriced",
        ),
    ]
    by_key = {row.metric: row for row in rows}
    statements = _statements(a, b, by_key)
    workload = None
    if weights_bytes is not None:
        workload = (
            workload_fit(a, weights_bytes, bytes_per_token=decode_bytes_per_token),
            workload_fit(b, weights_bytes, bytes_per_token=decode_bytes_per_token),
        )
        statements.extend(_workload_statements(workload_name or "the model", workload))
    return GpuComparison(a=a, b=b, metrics=tuple(rows), statements=tuple(statements), workload=workload, workload_name=workload_name)
