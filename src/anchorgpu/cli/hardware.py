"""``anchorgpu gpus``: list GPUs, show one, compare two.

    anchorgpu gpus [--json] [--vendor nvidia|amd] [--fp8] [--fp4] [--min-memory-gb N] [--sort KEY]
    anchorgpu gpus NAME [--json]
    anchorgpu gpus compare A B [--json] [--model M [--task inference|training|lora|qlora] [--precision bf16|fp8|int8|fp4]
                                                [--context TOKENS]]

``gpus`` is one command whose words decide what it does: none lists, one name shows, ``compare A B``
compares (no GPU is called "compare"; the comparison lives in :mod:`~anchorgpu.cli.gpu_compare`). Unknown names
exit 3 with one line and suggestions.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

import typer

from anchorgpu.cli._app import app, console, emit_json
from anchorgpu.errors import AnchorError, InvalidInput
from anchorgpu.validation import finite_number

if TYPE_CHECKING:
    from anchorgpu.hardware import GpuSpec

SORT_KEYS = ("name", "memory", "bandwidth", "bf16", "fp8", "fp4", "tdp")


def price_per_gpu_hour(gpu_name: str) -> tuple[Decimal | None, str]:
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


def wide_console() -> Any:
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
    if min_memory_gb is not None:  # finite and inside LIMITS: inf listed nothing where nan was refused
        finite_number(min_memory_gb, field="min_memory_gb")
    if sort is not None and sort not in SORT_KEYS:
        raise InvalidInput(f"--sort must be one of {', '.join(SORT_KEYS)}, got {sort!r}")
    chosen = [
        g
        for g in gpus
        if (vendor is None or g.vendor.lower() == vendor.lower())
        and (not fp8 or g.fp8_hardware)
        and (not fp4 or g.fp4_hardware)
        # the vendor's "GB" is read in the unit it means (GiB for every shipped GPU), on the vendor's usable figure
        # (a B200 is a 180 GB part though CUDA reports 178.35 GiB of it)
        and (min_memory_gb is None
             or (g.memory_nominal_bytes or g.memory_bytes) / (GIB if g.memory_unit == "GiB" else GB) >= min_memory_gb)
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
    out = wide_console()
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
    from anchorgpu.hardware.display import fmt_bandwidth, fmt_link, fmt_memory, fmt_peak, fmt_stack, fmt_training_stacks
    from anchorgpu.units import GIB

    price, price_note = price_per_gpu_hour(gpu.name)
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
    for source in gpu.memory_runtime_sources:
        rows.append(("memory (runtime total)", source))
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
        ("FP8 / FP4 training", fmt_training_stacks(gpu)),
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
    keys = (*gpu.sources, *(k for k in gpu.training_sources if k not in gpu.sources))  # the training row's too
    rows.append(("sources", "; ".join(f"{k}: {v}" for k, v in source_descriptions(keys).items())))
    rows.append(("notes", gpu.notes))
    for field, value in rows:
        table.add_row(field, value)
    wide_console().print(table)


@app.command("gpus")
def gpus_command(
    words: list[str] = typer.Argument(None, metavar="[NAME | compare A B]", help="No word (or 'list') lists GPUs; NAME (or 'show NAME') shows one; 'compare A B' compares two."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (stable keys) instead of a table."),
    vendor: str | None = typer.Option(None, "--vendor", help="List only this vendor's GPUs: nvidia or amd."),
    fp8: bool = typer.Option(False, "--fp8", help="List only GPUs with FP8 hardware."),
    fp4: bool = typer.Option(False, "--fp4", help="List only GPUs with FP4 hardware."),
    min_memory_gb: float | None = typer.Option(None, "--min-memory-gb", help="List only GPUs with at least this much usable memory (vendor GB)."),
    sort: str | None = typer.Option(None, "--sort", help=f"Sort the list by {', '.join(SORT_KEYS)} (largest first)."),
    model: str | None = typer.Option(None, "--model", help="compare: say what fits of this model (registry name, config.json or Hub id)."),
    task: str = typer.Option("inference", "--task", help="compare with --model: inference, training (train, as plan spells it), lora or qlora."),
    precision: str | None = typer.Option(None, "--precision", help="compare with --model, inference: weight precision (bf16, fp16, fp8, int8, fp4; default: the checkpoint's shipped format, as plan)."),
    context: str | None = typer.Option(None, "--context", help="compare with --model: tokens per sequence for the full plan, e.g. 8192 or 8k (default 8,192, or the model's own limit where shorter)."),
) -> None:
    """List GPUs, show one (NAME), or compare two (compare A B): memory, bandwidth, dense peaks, links, stack."""
    from anchorgpu.hardware import get_gpu, list_gpus

    words = list(words or [])
    if words and words[0].lower() in ("list", "show"):  # the verbs a user types by habit: 'gpus list', 'gpus show H100'
        words = words[1:]
    if words and words[0].lower() == "compare":
        if len(words) != 3:
            raise InvalidInput(f"'gpus compare' takes exactly two GPU names, got {len(words) - 1}")
        from anchorgpu.cli.gpu_compare import compare
        from anchorgpu.cli.plan_parse import parse_tokens

        compare(words[1], words[2], as_json=as_json, model=model, task=task, precision=precision,
                context_tokens=parse_tokens(context, field="context"))
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
