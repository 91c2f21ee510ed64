"""``anchorgpu gpus``: list GPUs, show one, compare two.

    anchorgpu gpus [--json] [--vendor nvidia|amd] [--fp8] [--fp4] [--min-memory-gb N] [--sort KEY]
    anchorgpu gpus NAME [--json]
    anchorgpu gpus compare A B [--json] [--model M [--task inference|training] [--precision bf16|fp8|int8|fp4]
                                                [--context TOKENS]]

``gpus`` is one command whose words decide what it does: none lists, one name shows, ``compare A B``
compares (no GPU is called "compare"). Unknown names exit 3 with one line and suggestions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.errors import AnchorError, InvalidInput

if TYPE_CHECKING:
    from anchorgpu.hardware import GpuSpec, Workload

SORT_KEYS = ("name", "memory", "bandwidth", "bf16", "fp8", "fp4", "tdp")
TASKS = ("inference", "training")
# Bytes per parameter of the weights at each precision (no quantization scales: a lower bound for fp4/int8).
WEIGHT_BYTES_PER_PARAM: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
# Mixed-precision Adam: 2 B bf16 weights + 2 B grads + 12 B fp32 master, momentum, variance (ZeRO paper, SC'20, Fig. 1).
TRAINING_BYTES_PER_PARAM = 16


def _price_per_gpu_hour(gpu_name: str) -> tuple[Decimal | None, str]:
    """Cheapest catalog rate (730-h comparison month) and a note on where it came from."""
    try:
        from anchorgpu.catalog import gpu_hour_price
    except ImportError:
        return None, "catalog not available: price left out"
    try:
        price = gpu_hour_price(gpu_name)
    except AnchorError as exc:
        return None, f"catalog could not be read ({exc.message}): price left out"
    if price is None:
        return None, "not offered (or unpriced) in the AnchorGPU catalog"
    return price, "cheapest AnchorGPU catalog offering, monthly price / GPUs / 730 h"


def _wide_console() -> Any:
    """The shared console, widened to 120 columns when the output is not a terminal (files, pipes, tests)."""
    out = console()
    if not out.is_terminal:
        out.width = 120
    return out


def _sort_value(gpu: GpuSpec, key: str) -> tuple[int, float | str]:
    if key == "name":
        return (0, gpu.name)
    if key == "memory":
        return (0, -gpu.memory_bytes)
    if key == "bandwidth":
        return (0, -gpu.memory_bandwidth_bytes_per_s)
    if key == "tdp":
        return (0, -(gpu.tdp_w or 0)) if gpu.tdp_w is not None else (1, 0.0)
    value = gpu.peak_flops_per_s(key)
    return (0, -value) if value is not None else (1, 0.0)


def _select(gpus: tuple[GpuSpec, ...], *, vendor: str | None, fp8: bool, fp4: bool, min_memory_gb: float | None, sort: str | None) -> list[GpuSpec]:
    from anchorgpu.units import GB, GIB

    if vendor is not None and vendor.lower() not in ("nvidia", "amd"):
        raise InvalidInput(f"--vendor must be nvidia or amd, got {vendor!r}")
    if min_memory_gb is not None and not min_memory_gb >= 0:
        raise InvalidInput(f"--min-memory-gb must be a non-negative number, got {min_memory_gb}")
    if sort is not None and sort not in SORT_KEYS:
        raise InvalidInput(f"--sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    chosen = [
        g
        for g in gpus
        if (vendor is None or g.vendor.lower() == vendor.lower())
        and (not fp8 or g.fp8_hardware)
        and (not fp4 or g.fp4_hardware)
        # the vendor's "GB" is read in the unit it means (GiB for every shipped GPU), on the usable figure
        and (min_memory_gb is None or g.memory_bytes / (GIB if g.memory_unit == "GiB" else GB) >= min_memory_gb)
    ]
    if sort is not None:
        chosen.sort(key=lambda g: _sort_value(g, sort))
    return chosen


def _list(gpus: list[GpuSpec], *, as_json: bool, filters: dict[str, Any]) -> None:
    from anchorgpu.hardware import gpu_to_json
    from anchorgpu.hardware.display import fmt_link_short, fmt_memory, fmt_number, fmt_peak, fmt_stack
    from anchorgpu.hardware.loader import load_shipped_data_version

    if as_json:
        emit_json(
            {
                "count": len(gpus),
                "data_version": load_shipped_data_version(),
                "filters": filters,
                "gpus": [gpu_to_json(g) for g in gpus],
            }
        )
        return
    from rich import box
    from rich.table import Table

    table = Table(title="GPUs: dense peaks in TFLOP/s", box=box.SIMPLE_HEAD, pad_edge=False)
    for column, justify in (
        ("name", "left"),
        ("GiB", "right"),
        ("TB/s", "right"),
        ("BF16", "right"),
        ("FP8", "right"),
        ("FP4", "right"),
        ("link GB/s", "left"),
        ("W", "right"),
        ("stack", "left"),
    ):
        table.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for g in gpus:
        table.add_row(
            g.name,
            fmt_memory(g, short=True).removesuffix(" GiB"),  # usable/headline when they differ
            fmt_number(g.memory_bandwidth_bytes_per_s / 1e12),
            fmt_peak(g.peaks["bf16"], short=True),
            fmt_peak(g.peaks["fp8"], short=True),
            fmt_peak(g.peaks["fp4"], short=True),
            fmt_link_short(g),
            str(g.tdp_w) if g.tdp_w is not None else "unknown",
            fmt_stack(g),
        )
    out = _wide_console()
    out.print(table)
    if not gpus:
        out.print("No GPU matches these filters.")
    out.print(
        "GiB: usable memory the planner budgets on (usable/headline when they differ). "
        "? = secondary or conflicting source; absent = no such hardware unit; unknown = no source. "
        "'anchorgpu gpus NAME' shows everything."
    )


def _show(gpu: GpuSpec, *, as_json: bool) -> None:
    from anchorgpu.hardware import PRECISIONS, gpu_to_json, source_descriptions
    from anchorgpu.hardware.display import fmt_bandwidth, fmt_link, fmt_memory, fmt_peak, fmt_stack
    from anchorgpu.units import GIB

    price, price_note = _price_per_gpu_hour(gpu.name)
    if as_json:
        data = gpu_to_json(gpu)
        data["catalog_price_usd_per_gpu_hour"] = None if price is None else str(price)
        data["catalog_price_note"] = price_note
        emit_json(data)
        return
    from rich.table import Table

    table = Table(title=f"{gpu.display_name} ({gpu.name})", show_header=False)
    table.add_column("field", style="bold")
    table.add_column("value")
    rows: list[tuple[str, str]] = [
        ("aliases", ", ".join(gpu.aliases)),
        ("vendor / architecture", f"{gpu.vendor} {gpu.architecture}"),
        ("form factor", gpu.form_factor),
        (
            "memory",
            f"{fmt_memory(gpu)} {gpu.memory_type}; the vendor's 'GB' means {gpu.memory_unit}; "
            f"budget {gpu.memory_bytes:,} bytes",
        ),
    ]
    if gpu.memory_physical_bytes and gpu.memory_physical_bytes != gpu.memory_bytes:
        rows.append(("memory (physical)", f"{gpu.memory_physical_bytes / GIB:,.0f} GiB"))
    rows.append(("memory bandwidth", fmt_bandwidth(gpu.memory_bandwidth_bytes_per_s)))
    for precision in (*PRECISIONS, "fp64_vector", "fp64_tensor"):
        peak = gpu.peaks[precision]
        unit = "TOP/s" if precision == "int8" else "TFLOP/s"
        value = fmt_peak(peak)
        if peak.status == "known":
            value = f"{value} {unit}" if not peak.uncertain else value.replace("? (", f"? {unit} (")
        elif peak.status == "absent":
            value = "absent (no such hardware unit)"
        else:
            value = "unknown (no usable source)"
        rows.append((f"dense {precision}", value))
    rows += [
        ("FP8 hardware", "yes" if gpu.fp8_hardware else "no"),
        ("FP4 hardware", f"yes ({', '.join(gpu.fp4_formats)})" if gpu.fp4_hardware else "no"),
        ("scale-up link", fmt_link(gpu)),
        ("scale-up domain", f"{gpu.scaleup_domain_gpus} GPU(s)"),
        (
            "host link",
            f"PCIe {gpu.pcie_gen}"
            + ("? (uncertain)" if "pcie_gen" in gpu.uncertain_fields else "")
            + (f" ({fmt_bandwidth(gpu.pcie_bandwidth_bytes_per_s, unit='GB/s')})" if gpu.pcie_bandwidth_bytes_per_s else ""),
        ),
        ("TDP", f"{gpu.tdp_w} W" if gpu.tdp_w is not None else "unknown"),
        ("software stack", fmt_stack(gpu)),
        ("partitioning", f"{gpu.partitioning} (AnchorGPU rents whole GPUs only)"),
    ]
    if gpu.indicative_price_usd_per_gpu_hour is not None:
        low, high = gpu.indicative_price_usd_per_gpu_hour
        mark = "?" if "indicative_price_usd_per_gpu_hour" in gpu.uncertain_fields else ""
        rows.append(("market price (indicative)", f"${low}-${high}{mark} per GPU-hour, seen {gpu.indicative_price_observed} (not an AnchorGPU price)"))
    rows.append(("AnchorGPU price", f"from ${price} per GPU-hour ({price_note})" if price is not None else price_note))
    if gpu.uncertain_fields:
        rows.append(("uncertain fields", ", ".join(gpu.uncertain_fields)))
    rows.append(("sources", "; ".join(f"{k}: {v}" for k, v in source_descriptions(gpu.sources).items())))
    rows.append(("notes", gpu.notes))
    for field, value in rows:
        table.add_row(field, value)
    _wide_console().print(table)


def _workload(model: str, task: str, precision: str | None) -> Workload:
    from anchorgpu.architectures import DiffusionPipelineSpec, load_model
    from anchorgpu.hardware import Workload

    if task not in TASKS:
        raise InvalidInput(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    if precision is not None and precision not in WEIGHT_BYTES_PER_PARAM:
        raise InvalidInput(f"--precision must be one of {', '.join(WEIGHT_BYTES_PER_PARAM)}, got {precision!r}")
    spec = load_model(model)
    total = spec.params_total
    if precision is None and not isinstance(spec, DiffusionPipelineSpec) and task != "training":
        shipped = _shipped_weights(spec)
        if shipped is not None:  # a quantized checkpoint: its own bytes, as the planner counts them
            name, weight_bytes = shipped
            return Workload(
                name=spec.name,
                task=task,
                resident_bytes=weight_bytes,
                resident_label=f"weights in {name} as the checkpoint ships them "
                               f"({weight_bytes / total:.2f} bytes a parameter on average, scales included)",
                decode_bytes_per_token=round(spec.params_active * weight_bytes / total),
            )
    precision = precision or "bf16"
    if isinstance(spec, DiffusionPipelineSpec):
        if task != "inference":
            raise InvalidInput(f"{spec.name} is a diffusion pipeline: compare it for image generation (--task inference)")
        per_param = WEIGHT_BYTES_PER_PARAM[precision]
        return Workload(
            name=spec.name,
            task="diffusion",
            resident_bytes=round(total * per_param),
            resident_label=f"weights of every component at {precision}",
        )
    active = spec.params_active
    if task == "training":
        return Workload(
            name=spec.name,
            task=task,
            resident_bytes=total * TRAINING_BYTES_PER_PARAM,
            resident_label=f"model states for mixed-precision Adam training ({TRAINING_BYTES_PER_PARAM} bytes/parameter)",
        )
    per_param = WEIGHT_BYTES_PER_PARAM[precision]
    return Workload(
        name=spec.name,
        task=task,
        resident_bytes=round(total * per_param),
        resident_label=f"weights at {precision} ({per_param:g} byte{'' if per_param == 1 else 's'}/parameter"
        + (", scales not counted)" if per_param < 2 else ")"),
        decode_bytes_per_token=round(active * per_param),
    )


PLANNER_FORMAT = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8", "fp4": "mxfp4"}


def _shipped_weights(spec: Any) -> tuple[str, int] | None:
    """(format name, the whole model's weight bytes) of a checkpoint that ships quantized, as ``anchorgpu plan``
    stores it by default (``quantization_config``); None for a 16-bit checkpoint (then bf16, 2 bytes a parameter)."""
    from anchorgpu.planner.formats import shipped_format
    from anchorgpu.planner.terms import split_weights_bytes

    fmt = shipped_format(spec)
    if not fmt.quantized:
        return None
    return fmt.name, split_weights_bytes(spec, fmt, 1, 1, 1)[0]


def _planned(model: str, gpus: tuple[GpuSpec, ...], *, task: str, precision: str | None,
             context_tokens: int) -> dict[str, Any] | None:
    """Full per-GPU plans from ``anchorgpu.planner`` (when it is there): one GPU, and the fewest GPUs that fit:
    what ``anchorgpu plan`` answers without ``--gpus`` (serving: the fewest that hold the sequences, TP inside a
    server, then PP; training: the fewest that hold the job, with the layout chosen on them). A diffusion pipeline
    is planned whole on one GPU.
    """
    try:
        from anchorgpu.planner import Layout, PrecisionPlan, plan
        from anchorgpu.planner import Workload as PlanWorkload
    except ImportError:
        return None
    from anchorgpu.architectures import DiffusionPipelineSpec, ModelSpec, load_model
    from anchorgpu.planner.formats import shipped_format

    spec = load_model(model)
    diffusion = isinstance(spec, DiffusionPipelineSpec)
    if diffusion:
        task = "diffusion"
        workload = PlanWorkload(task="diffusion")
        precision_plan = PrecisionPlan(weights=PLANNER_FORMAT[precision or "bf16"])
    elif task == "training":
        workload = PlanWorkload(task="train", seq_tokens=context_tokens)
        precision_plan = PrecisionPlan()
    else:
        workload = PlanWorkload(task="inference", context_tokens=context_tokens)
        # no --precision: the checkpoint's shipped format, as `anchorgpu plan` answers without --weights
        precision_plan = PrecisionPlan(weights=PLANNER_FORMAT[precision]) if precision else PrecisionPlan()
    from anchorgpu.planner.speed.serving_layouts import SERVING_GPU_COUNTS
    from anchorgpu.planner.suggest import TRAINING_GPU_COUNTS

    # the counts the planner tries on its own (a diffusion pipeline: whole on one GPU)
    counts = (1,) if diffusion else TRAINING_GPU_COUNTS if task == "training" else SERVING_GPU_COUNTS
    result: dict[str, Any] = {}
    for gpu in gpus:
        one: dict[str, Any] | None = None
        needed: int | None = None
        try:  # the planner's own answer without a GPU count, as `anchorgpu plan` gives it
            chosen = plan(spec, workload, precision=precision_plan, gpu=gpu, suggest=False)
            needed = chosen.layout.gpus if chosen.fits else None
        except AnchorError:
            pass
        try:  # one GPU, for the table
            planned = plan(spec, workload, precision=precision_plan, layout=Layout(gpus=1), gpu=gpu, suggest=False)
            one = {
                "fits": planned.fits,
                "total_bytes": planned.per_gpu.total_bytes,
                "budget_bytes": planned.budget_bytes,
                "headroom_bytes": planned.headroom_bytes,
                "max_concurrency": planned.max_concurrency,
                "warnings": [w.code for w in planned.warnings],
            }
        except AnchorError:
            pass
        result[gpu.name] = {"one_gpu": one, "gpus_needed": needed}
    return {
        "model": spec.name,
        "context_tokens": context_tokens,
        "task": task,
        "weights_format": precision_plan.weights or (
            f"{shipped_format(spec).name}, as the checkpoint ships it" if isinstance(spec, ModelSpec)
            and task != "training" else "bf16"),
        "layout": {
            "training": "chosen for the user on the fewest GPUs that hold the job (as plan without --gpus)",
            "diffusion": "one whole pipeline per GPU",
        }.get(task, "chosen for the user: the fewest GPUs that hold the sequences (as plan without --gpus)"),
        "tried_gpu_counts": list(counts),
        "per_gpu": result,
    }


def _plan_statements(planned: dict[str, Any]) -> list[str]:
    from anchorgpu.units import GIB

    out = []
    for name, entry in planned["per_gpu"].items():
        one = entry["one_gpu"]
        needed = entry["gpus_needed"]
        if one is not None and one["fits"]:
            extra = f", up to {one['max_concurrency']} sequences at once" if one.get("max_concurrency") else ""
            text = f"on one {name} it fits with {one['headroom_bytes'] / GIB:,.1f} GiB to spare{extra}"
        elif one is not None:
            short = -one["headroom_bytes"] / GIB if one["headroom_bytes"] is not None else 0.0
            text = f"on one {name} it does not fit ({short:,.1f} GiB short)"
            if needed:
                text += f"; it needs {needed} GPUs"
            elif len(planned["tried_gpu_counts"]) > 1:
                text += f"; not even {planned['tried_gpu_counts'][-1]} GPUs are enough"
        else:
            text = f"on {name} it needs {needed} GPUs" if needed else f"on {name} no tried layout fits"
        out.append(text)
    if planned["task"] == "diffusion":
        what = f"diffusion at the pipeline's default resolution, weights {planned['weights_format']}"
    else:
        what = f"{planned['task']}, context {planned['context_tokens']:,} tokens, weights {planned['weights_format']}"
    first = next(iter(planned["per_gpu"]))
    asked = {"training": f" --task train --seq {planned['context_tokens']}",
             "diffusion": ""}.get(planned["task"], f" --context {planned['context_tokens']}")
    hint = f"'anchorgpu plan {planned['model']}{asked} --gpu {first}'"
    return [f"Full plan ({what}): " + "; ".join(out) + f". Details: {hint}."]


def _ratio_text(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}x"


def _metric_value(metric: str, value: Any, unit: str, status: str, uncertain: bool) -> str:
    from anchorgpu.hardware.display import fmt_number
    from anchorgpu.units import GIB

    if value is None:
        return status
    mark = "?" if uncertain else ""
    if unit == "bytes":
        return f"{fmt_number(value / GIB)} GiB"
    if unit == "bytes/s" and metric == "memory_bandwidth_bytes_per_s":
        return f"{fmt_number(value / 1e12)}{mark} TB/s"
    if unit == "bytes/s":
        return f"{fmt_number(value / 1e9)}{mark} GB/s"
    if unit == "FLOP/s":
        return f"{fmt_number(value / 1e12)}{mark} TFLOP/s"
    if unit == "W":
        return f"{value} W"
    return f"${value}"


def _predicted(a: GpuSpec, b: GpuSpec) -> tuple[Any, ...]:
    """The calibrated model on the reference workloads (``anchorgpu.planner.speed.reference``), when it is there."""
    try:
        from anchorgpu.planner.speed.reference import predicted_speeds
    except ImportError:
        return ()
    return predicted_speeds(a, b)


def _figure_text(value: float | None, low: float | None, high: float | None, note: str) -> str:
    if value is None:
        return note or "-"
    if low is None or high is None:
        return f"{value:,.0f}"
    return f"{value:,.0f} ({low:,.0f}-{high:,.0f})"


def _predicted_table(comparison: Any) -> Any:
    from rich.table import Table

    a, b = comparison.a, comparison.b
    table = Table(title="Predicted on reference workloads (calibrated model; likely range in brackets; workloads below)")
    table.add_column("reference workload")
    table.add_column(a.name, justify="right")
    table.add_column(b.name, justify="right")
    table.add_column(f"{a.name} / {b.name}", justify="right")
    table.add_column("datasheet ratio", justify="right")
    for row in comparison.predicted:
        ratio = "-" if row.ratio is None else f"{row.ratio:.2f}x ({row.ratio_low:.2f}-{row.ratio_high:.2f})"
        sheet = _ratio_text(row.datasheet_ratio)
        if row.datasheet_ratio is not None:
            sheet += " " + {"memory_bandwidth_bytes_per_s": "bandwidth", "bf16_flops_per_s": "BF16"}.get(row.datasheet_metric, "")
        table.add_row(f"{row.label} ({row.unit})", _figure_text(row.a.value, row.a.low, row.a.high, row.a.note),
                      _figure_text(row.b.value, row.b.low, row.b.high, row.b.note), ratio, sheet.strip())
    return table


def _compare(a_name: str, b_name: str, *, as_json: bool, model: str | None, task: str, precision: str | None,
             context_tokens: int) -> None:
    from dataclasses import replace

    from anchorgpu.hardware import compare_gpus, comparison_to_json, get_gpu

    if context_tokens < 1:
        raise InvalidInput(f"--context must be a positive number of tokens, got {context_tokens}")
    a, b = get_gpu(a_name), get_gpu(b_name)
    workload = _workload(model, task, precision) if model is not None else None
    price_a, note_a = _price_per_gpu_hour(a.name)
    price_b, note_b = _price_per_gpu_hour(b.name)
    comparison = compare_gpus(a, b, price_a_usd_per_gpu_hour=price_a, price_b_usd_per_gpu_hour=price_b, workload=workload,
                              predicted=_predicted(a, b))
    planned = None
    if model is not None:
        planned = _planned(model, (a, b), task=task, precision=precision, context_tokens=context_tokens)
        if planned is not None:
            comparison = replace(comparison, statements=(*comparison.statements, *_plan_statements(planned)))
    if as_json:
        data = comparison_to_json(comparison, price_notes=(note_a, note_b))
        data["plan"] = planned
        emit_json(data)
        return
    from rich.table import Table

    table = Table(title=f"{a.display_name} vs {b.display_name}")
    table.add_column("metric")
    table.add_column(a.name, justify="right")
    table.add_column(b.name, justify="right")
    table.add_column(f"{a.name} / {b.name}", justify="right")
    for row in comparison.metrics:
        table.add_row(
            row.label,
            _metric_value(row.metric, row.a, row.unit, row.a_status, row.a_uncertain),
            _metric_value(row.metric, row.b, row.unit, row.b_status, row.b_uncertain),
            _ratio_text(row.ratio) + ("?" if row.uncertain and row.ratio is not None else ""),
        )
    out = _wide_console()
    out.print(table)
    if comparison.predicted:
        out.print(_predicted_table(comparison))
    if price_a is None or price_b is None:
        out.print(f"Price: {a.name}: {note_a}; {b.name}: {note_b}.")
    else:
        out.print("Price: cheapest AnchorGPU catalog offering of each GPU, monthly price / GPUs / 730 h.")
    out.print("What it means:")
    for statement in comparison.statements:
        out.print(f"- {statement}")


@app.command("gpus")
def gpus_command(
    words: list[str] = typer.Argument(None, metavar="[NAME | compare A B]", help="No word lists GPUs; NAME shows one; 'compare A B' compares two."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (stable keys) instead of a table."),
    vendor: str | None = typer.Option(None, "--vendor", help="List only this vendor's GPUs: nvidia or amd."),
    fp8: bool = typer.Option(False, "--fp8", help="List only GPUs with FP8 hardware."),
    fp4: bool = typer.Option(False, "--fp4", help="List only GPUs with FP4 hardware."),
    min_memory_gb: float | None = typer.Option(None, "--min-memory-gb", help="List only GPUs with at least this much usable memory (vendor GB)."),
    sort: str | None = typer.Option(None, "--sort", help=f"Sort the list by {', '.join(SORT_KEYS)} (largest first)."),
    model: str | None = typer.Option(None, "--model", help="compare: say what fits of this model (registry name, config.json or Hub id)."),
    task: str = typer.Option("inference", "--task", help="compare with --model: inference or training."),
    precision: str | None = typer.Option(None, "--precision", help="compare with --model, inference: weight precision (bf16, fp16, fp8, int8, fp4; default: the checkpoint's shipped format, as plan)."),
    context_tokens: int = typer.Option(8192, "--context", help="compare with --model: tokens per sequence for the full plan."),
) -> None:
    """List GPUs, show one (NAME), or compare two (compare A B): memory, bandwidth, dense peaks, links, stack."""
    from anchorgpu.hardware import get_gpu, list_gpus

    words = list(words or [])
    if words and words[0].lower() == "compare":
        if len(words) != 3:
            raise InvalidInput(f"'gpus compare' takes exactly two GPU names, got {len(words) - 1}")
        _compare(words[1], words[2], as_json=as_json, model=model, task=task, precision=precision, context_tokens=context_tokens)
        return
    if model is not None:
        raise InvalidInput("--model applies to 'gpus compare A B' only")
    if len(words) > 1:
        raise InvalidInput(f"'gpus' takes at most one GPU name, got {len(words)}; to compare two, use 'anchorgpu gpus compare A B'")
    if words:
        _show(get_gpu(words[0]), as_json=as_json)
        return
    filters = {"vendor": vendor, "fp8": fp8, "fp4": fp4, "min_memory_gb": min_memory_gb, "sort": sort}
    _list(_select(list_gpus(), vendor=vendor, fp8=fp8, fp4=fp4, min_memory_gb=min_memory_gb, sort=sort), as_json=as_json, filters=filters)
