"""Side-by-side comparison of two GPUs, with ratios and what the difference means. Pure; stdlib only.

Ratios are ``a / b`` (``compare_gpus(h200, h100)`` gives memory 139.80/79.18 GiB = 1.7656, both as CUDA reports
them). A ratio is None when either side is absent, unknown or zero, and the row says why. Prices are passed in (the hardware core
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

from anchorgpu.hardware.display import memory_kinds_note
from anchorgpu.hardware.predicted import PredictedSpeed, predicted_statements
from anchorgpu.hardware.resident_fit import Workload, WorkloadFit, workload_fit, workload_statements
from anchorgpu.hardware.spec import GpuSpec, Peak
from anchorgpu.units import GIB

__all__ = ["FEATURED_COMPARISONS", "GpuComparison", "MetricComparison", "compare_gpus"]

Number = float | int | Decimal

FEATURED_COMPARISONS: tuple[tuple[str, str], ...] = (("h200", "h100-sxm"), ("b300", "b200"), ("mi355x", "b200"))
"""Pairs the seed glossaries point readers to ("H100 vs H200", "B200 vs B300", "MI355X vs B200"), newer first."""


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
    uncertain: bool = False  # either side uncertain (then the ratio is too)
    note: str = ""
    a_uncertain: bool = False
    b_uncertain: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuComparison:
    a: GpuSpec
    b: GpuSpec
    metrics: tuple[MetricComparison, ...]
    statements: tuple[str, ...]  # plain-language meaning of the differences
    workload: Workload | None = None
    fits: tuple[WorkloadFit, WorkloadFit] | None = None
    predicted: tuple[PredictedSpeed, ...] = ()  # the calibrated model on reference workloads (see .predicted)

    def metric(self, key: str) -> MetricComparison:
        for row in self.metrics:
            if row.metric == key:
                return row
        raise KeyError(key)


def _ratio(a: Number | None, b: Number | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return float(a) / float(b)


def _value_row(
    metric: str,
    label: str,
    unit: str,
    a: Number | None,
    b: Number | None,
    *,
    missing: str,
    a_uncertain: bool = False,
    b_uncertain: bool = False,
) -> MetricComparison:
    a_status = "known" if a is not None else missing
    b_status = "known" if b is not None else missing
    note = "" if a is not None and b is not None else f"no ratio: first {a_status}, second {b_status}"
    return MetricComparison(
        metric=metric,
        label=label,
        unit=unit,
        a=a,
        b=b,
        a_status=a_status,
        b_status=b_status,
        ratio=_ratio(a, b),
        uncertain=a_uncertain or b_uncertain,
        note=note,
        a_uncertain=a_uncertain,
        b_uncertain=b_uncertain,
    )


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
        a_uncertain=a.uncertain,
        b_uncertain=b.uncertain,
    )


def _fmt_ratio(ratio: float) -> str:
    return f"{ratio:.2f}x"


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:,.0f} GiB"


def _tera(peak: Peak) -> str:
    """A known peak in units of 10^12 per second, with ``?`` when uncertain."""
    value = (peak.flops_per_s or 0) / 1e12
    return f"{value:,.4g}" + ("?" if peak.uncertain else "")


def _predicted_of(fast: GpuSpec, slow: GpuSpec, a: GpuSpec, row: PredictedSpeed | None, what: str) -> str:
    """The calibrated prediction beside a datasheet statement that ``fast`` leads ``slow`` (or, datasheets equal,
    that they run alike: ``fast`` is then ``a``): ``fast``'s ratio over ``slow`` on the reference workload (``row.ratio`` is ``a / b``), which need not follow the datasheet (MI300X has
    1.32x H100's BF16 peak and is predicted at 0.67x its 8B training speed); "" without one.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.hardware.predicted import SpeedFigure
    >>> h100, mi = get_gpu("h100"), get_gpu("mi300x")
    >>> row = PredictedSpeed(metric="m", label="8B training", workload="w", unit="tokens/s per GPU",
    ...                      a=SpeedFigure(value=150.0), b=SpeedFigure(value=100.0), ratio=1.5, ratio_low=1.2,
    ...                      ratio_high=1.8, datasheet_metric="bf16_flops_per_s")
    >>> _predicted_of(mi, h100, h100, row, "8B training tokens/s")
    ' (datasheet; the calibrated model predicts mi300x at 0.67x the 8B training tokens/s of h100-sxm, below)'
    """
    if row is None or not row.ratio:
        return ""
    ratio = row.ratio if fast is a else 1 / row.ratio
    return f" (datasheet; the calibrated model predicts {fast.name} at {_fmt_ratio(ratio)} the {what} of {slow.name}, below)"


def _first(predicted: tuple[PredictedSpeed, ...], datasheet_metric: str, suffix: str) -> PredictedSpeed | None:
    """The first reference prediction that scales with ``datasheet_metric`` and whose key ends with ``suffix``."""
    return next((r for r in predicted if r.datasheet_metric == datasheet_metric and r.metric.endswith(suffix)), None)


def _statements(a: GpuSpec, b: GpuSpec, rows: dict[str, MetricComparison],
                predicted: tuple[PredictedSpeed, ...] = ()) -> list[str]:
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
        if kinds := memory_kinds_note(a, b):
            out[-1] += " " + kinds
    bw = rows["memory_bandwidth_bytes_per_s"].ratio
    if bw is not None:
        if abs(bw - 1) < 0.005:
            out.append("Decode: same memory bandwidth, so token-by-token generation runs at about the same speed"
                       + _predicted_of(a, b, a, _first(predicted, "memory_bandwidth_bytes_per_s", "_per_user"),
                                       "decode tokens/s per user") + ".")
        else:
            fast, slow = (a, b) if bw > 1 else (b, a)
            out.append(
                f"Decode: generation reads every weight once per token, so it scales with memory bandwidth; "
                f"{fast.name} can generate up to {_fmt_ratio(max(bw, 1 / bw))} the tokens/s per user of {slow.name} "
                f"for the same model and batch"
                + _predicted_of(fast, slow, a, _first(predicted, "memory_bandwidth_bytes_per_s", "_per_user"),
                                "decode tokens/s per user") + "."
            )
    bf16 = rows["bf16_flops_per_s"]
    if bf16.ratio is not None:
        if abs(bf16.ratio - 1) < 0.005:
            out.append("Prefill and training: same dense BF16 throughput, so compute-bound work runs at about the same "
                       "speed" + _predicted_of(a, b, a, _first(predicted, "bf16_flops_per_s", "_per_gpu"),
                                               "8B training tokens/s") + ".")
        else:
            fast, slow = (a, b) if bf16.ratio > 1 else (b, a)
            out.append(
                f"Prefill and training (compute bound): {fast.name} has {_fmt_ratio(max(bf16.ratio, 1 / bf16.ratio))} "
                f"the dense BF16 throughput of {slow.name}"
                + _predicted_of(fast, slow, a, _first(predicted, "bf16_flops_per_s", "_per_gpu"),
                                "8B training tokens/s") + "."
            )
    for precision, label in (("fp8", "FP8"), ("fp4", "FP4")):
        flag_a, flag_b = a.computes_in(precision), b.computes_in(precision)
        if flag_a != flag_b:
            has, lacks = (a, b) if flag_a else (b, a)
            formats = f" ({', '.join(has.fp4_formats)})" if precision == "fp4" and has.fp4_formats else ""
            out.append(
                f"{label}: only {has.name} computes in {label}{formats} in hardware; on {lacks.name} {label} weights "
                f"work only where the engine upcasts them (weight-only): memory is saved, math runs at BF16 speed."
            )
        elif precision == "fp4" and flag_a and set(a.fp4_formats) != set(b.fp4_formats):
            out.append(
                f"FP4 formats differ: {a.name} supports {', '.join(a.fp4_formats)}, {b.name} {', '.join(b.fp4_formats)}; "
                f"a checkpoint quantized to one format needs hardware (and kernels) for that format."
            )
        ratio = rows[f"{precision}_flops_per_s"].ratio
        if flag_a and flag_b and ratio is not None and abs(ratio - 1) >= 0.005:
            fast, slow = (a, b) if ratio > 1 else (b, a)
            out.append(f"{label}: both support it; {fast.name} has {_fmt_ratio(max(ratio, 1 / ratio))} the dense {label} throughput of {slow.name}.")
    for precision, label, use in (("fp64", "FP64", "scientific/HPC double-precision work"), ("int8", "INT8", "INT8-quantized inference")):
        pa, pb = a.peaks[precision], b.peaks[precision]
        if pa.flops_per_s and pb.flops_per_s and not 0.5 <= pa.flops_per_s / pb.flops_per_s <= 2:
            fast, slow = (a, b) if pa.flops_per_s > pb.flops_per_s else (b, a)
            fast_peak, slow_peak = (pa, pb) if fast is a else (pb, pa)
            unit = "TOP/s" if precision == "int8" else "TFLOP/s"
            out.append(
                f"{label}: {slow.name} has far less ({_tera(slow_peak)} vs {_tera(fast_peak)} {unit} dense), "
                f"so prefer {fast.name} for {use}."
            )
    if a.scaleup_domain_gpus != b.scaleup_domain_gpus:
        for gpu in (a, b):
            if gpu.scaleup_domain_gpus == 1:
                out.append(f"Scale-up: {gpu.name} has no GPU-to-GPU link; tensor parallelism across its GPUs goes over PCIe and is slow.")
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
        decode = _first(predicted, "memory_bandwidth_bytes_per_s", "_per_user")
        predicted_decode = (f"; the calibrated model predicts {_fmt_ratio(decode.ratio / price.ratio)} the decode "
                            "tokens/s per user per dollar, below" if decode is not None and decode.ratio else "")
        out.append(
            f"Price: {a.name} costs {_fmt_ratio(price.ratio)} per GPU-hour; per dollar it gives "
            f"{_fmt_ratio(bw / price.ratio)} the memory bandwidth (decode, datasheet{predicted_decode}) and "
            f"{_fmt_ratio((mem or 0) / price.ratio)} the memory of {b.name}."
        )
    doubtful = [row.label for row in rows.values() if row.uncertain]
    if doubtful:
        out.append(
            f"Uncertain ({', '.join(doubtful)}): a figure on at least one side rests on a secondary source or on "
            f"conflicting documents (marked '?'); check it before you rely on the ratio."
        )
    return out


def compared_pair(a_name: str, b_name: str) -> tuple[GpuSpec, GpuSpec]:
    """The two GPUs ``a_name`` and ``b_name`` name (:func:`~anchorgpu.hardware.get_gpu`), refused in one line where
    they are one GPU (the same name twice, or two of its aliases): a GPU against itself is 1.00x on every row with
    no band, as its two predictions share one error, where the table showed "1.00x (0.80-1.25)" as if two
    independent errors (stop60_qa26, left 4). The CLI (exit 2), the API (422) and the page refuse it alike.

    >>> [g.name for g in compared_pair("h200", "h100")]
    ['h200', 'h100-sxm']
    >>> compared_pair("h100", "H100-SXM")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidInput: h100 and H100-SXM are the same GPU (NVIDIA H100 SXM 80GB): compared with itself \
every ratio is exactly 1.00x; give two different GPUs
    """
    from anchorgpu.errors import InvalidInput, said
    from anchorgpu.hardware.registry import get_gpu

    a, b = get_gpu(a_name), get_gpu(b_name)
    if a.name == b.name:
        raise InvalidInput(said("{a} and {b} are the same GPU ({gpu}): compared with itself every ratio is exactly "
                                "1.00x; give two different GPUs", a=a_name, b=b_name, gpu=a.display_name))
    return a, b


def compare_gpus(
    a: GpuSpec,
    b: GpuSpec,
    *,
    price_a_usd_per_gpu_hour: Decimal | None = None,
    price_b_usd_per_gpu_hour: Decimal | None = None,
    workload: Workload | None = None,
    predicted: tuple[PredictedSpeed, ...] = (),
) -> GpuComparison:
    """Compare ``a`` with ``b``: every ratio is ``a / b``.

    ``predicted`` (from :func:`anchorgpu.planner.speed.reference.predicted_speeds`) adds the calibrated
    model's tokens/s on reference workloads; each row gets the datasheet ratio it would scale with beside it.

    >>> from anchorgpu.hardware import get_gpu
    >>> c = compare_gpus(get_gpu("h200"), get_gpu("h100"))
    >>> round(c.metric("memory_bytes").ratio or 0, 4), round(c.metric("memory_bandwidth_bytes_per_s").ratio or 0, 4)
    (1.7656, 1.4328)
    >>> c.metric("bf16_flops_per_s").ratio
    1.0
    """
    link_key = "interconnect_bandwidth_gb_per_s"
    ic = _value_row(
        "interconnect_bandwidth_bytes_per_s",
        "Scale-up link (per GPU, bidirectional)",
        "bytes/s",
        a.interconnect_bandwidth_bytes_per_s,
        b.interconnect_bandwidth_bytes_per_s,
        missing="unknown",
        a_uncertain=link_key in a.uncertain_fields,
        b_uncertain=link_key in b.uncertain_fields,
    )
    # "none" (no scale-up link at all) is not "unknown" (a link whose bandwidth no source gives)
    ic = replace(
        ic,
        a_status="none" if ic.a is None and a.scaleup_domain_gpus == 1 else ic.a_status,
        b_status="none" if ic.b is None and b.scaleup_domain_gpus == 1 else ic.b_status,
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
    predicted = tuple(replace(row, datasheet_ratio=by_key[row.datasheet_metric].ratio)
                      if row.datasheet_metric in by_key else row for row in predicted)
    statements = _statements(a, b, by_key, predicted)
    statements.extend(predicted_statements(a.name, b.name, predicted, by_key["price_usd_per_gpu_hour"].ratio))
    fits = None
    if workload is not None:
        fits = (workload_fit(a, workload), workload_fit(b, workload))
        statements.extend(workload_statements(workload, fits))
    return GpuComparison(a=a, b=b, metrics=tuple(rows), statements=tuple(statements), workload=workload, fits=fits,
                         predicted=predicted)
