"""GPU pages: the hardware list and a side-by-side comparison of two GPUs (ratios and what they mean)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from anchorgpu.errors import AnchorError
from anchorgpu.web.i18n import PageText, page_text
from anchorgpu.web.refusals import refusal_words
from anchorgpu.web.templating import render

router = APIRouter()


def format_value(value: Any, unit: str, locale: str = "en") -> str:
    """A comparison value for people, by its unit, in the locale's number format.

    >>> format_value(85899345920, "bytes"), format_value(3.35e12, "bytes/s"), format_value(989e12, "FLOP/s")
    ('80.0 GiB', '3,350 GB/s', '989 TFLOP/s')
    >>> format_value(3.35e12, "bytes/s", "ru")
    '3\xa0350 GB/s'
    """
    from anchorgpu.web.filters import money, number

    if value is None:
        return "–"
    num = number(locale)
    if unit == "bytes":
        return f"{num(value / 2**30, 1)} GiB"
    if unit == "bytes/s":
        return f"{num(value / 1e9)} GB/s"
    if unit in ("FLOP/s", "OP/s"):
        return f"{num(value / 1e12)} T{unit}"
    if unit == "USD/GPU-hour":
        if locale == "en":
            return money(Decimal(str(value)))
        from babel.numbers import format_currency

        return str(format_currency(Decimal(str(value)), "USD", locale=locale))
    if unit == "W":
        return f"{num(value)} W"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(num(value) if isinstance(value, int) else num(value, 2))
    return str(value)


class ComparisonWords:
    """A GPU comparison's row names, statuses and notes in the page's language (the comparison's own fields are the
    English of ``anchorgpu gpus compare`` and the API). Rows are named by their stable ``metric`` keys; a row this
    page has no words for keeps its English label."""

    def __init__(self, text: PageText) -> None:
        t = self.text = text
        self.labels = {
            "memory_bytes": t.gettext("Memory (usable)"),
            "memory_bandwidth_bytes_per_s": t.gettext("Memory bandwidth"),
            "bf16_flops_per_s": t.gettext("Dense BF16"),
            "fp8_flops_per_s": t.gettext("Dense FP8"),
            "fp4_flops_per_s": t.gettext("Dense FP4"),
            "interconnect_bandwidth_bytes_per_s": t.gettext("Scale-up link (per GPU, bidirectional)"),
            "tdp_w": t.gettext("TDP"),
            "price_usd_per_gpu_hour": t.gettext("Price per GPU-hour"),
            "serve_8b_output_tokens_per_s": t.gettext("serving throughput"),
            "serve_8b_tokens_per_s_per_user": t.gettext("decode speed per user"),
            "train_8b_tokens_per_s_per_gpu": t.gettext("8B training"),
            "train_70b_tokens_per_s_per_gpu": t.gettext("70B training"),
        }
        self.statuses = {
            "absent": t.pgettext("gpu value", "absent"),
            "unknown": t.pgettext("gpu value", "unknown"),
            "none": t.pgettext("gpu value", "none"),
            "unpriced": t.pgettext("gpu value", "unpriced"),
            "known": t.pgettext("gpu value", "known"),
        }
        self.units = {"tokens/s": t.gettext("tokens/s"), "output tokens/s": t.gettext("output tokens/s"),
                      "tokens/s per GPU": t.gettext("tokens/s per GPU")}
        # the reference workloads in words, each kept only while its English text is the one translated here
        self.workloads = {
            "Llama-3.1-8B, BF16, 1 GPU, 1,000 in / 1,000 out tokens, at saturation (as many requests at once as the GPU's memory and the engine's sequence cap hold)":
                t.gettext("Llama-3.1-8B, BF16, 1 GPU, 1,000 in / 1,000 out tokens, at saturation (as many requests at once as the GPU's memory and the engine's sequence cap hold)"),
            "Llama-3.1-8B, BF16, 1 GPU, one request": t.gettext("Llama-3.1-8B, BF16, 1 GPU, one request"),
            "Llama-3.1-8B, 8 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout":
                t.gettext("Llama-3.1-8B, 8 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout"),
            "Llama-3.1-70B, 64 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout":
                t.gettext("Llama-3.1-70B, 64 GPUs, 4k sequences, BF16, 4M-token batch, chosen layout"),
        }

    def label(self, row: Any) -> str:
        return self.labels.get(str(row.metric), str(row.label))

    def status(self, status: str) -> str:
        return self.statuses.get(status, status)

    def unit(self, unit: str) -> str:
        return self.units.get(unit, unit)

    def workload(self, workload: str) -> str:
        return self.workloads.get(workload, workload)

    def note(self, row: Any) -> str:
        """Why a row has no ratio (the comparison's note names the side that lacks a value), or its own note."""
        if row.ratio is None and str(row.note).startswith("no ratio"):
            t = self.text
            sides = [t.gettext("first %(status)s", status=self.status(row.a_status)) if row.a_status != "known" else "",
                     t.gettext("second %(status)s", status=self.status(row.b_status)) if row.b_status != "known" else ""]
            return t.gettext("no ratio: %(why)s", why=", ".join(side for side in sides if side))
        return str(row.note)

    def figure_note(self, note: str) -> str:
        """Why a reference workload has no prediction on one GPU."""
        import re

        if note == "does not fit one GPU":
            return self.text.gettext("does not fit one GPU")
        count = re.fullmatch(r"no layout fits (\d+) GPUs", note)
        if count:
            return self.text.ngettext("no layout fits %(num)d GPU", "no layout fits %(num)d GPUs", int(count.group(1)))
        return note


@router.get("/gpus", response_class=HTMLResponse)
def gpus_page(request: Request) -> Response:
    """Every GPU with memory, bandwidth, dense BF16 and the cheapest catalog rate."""
    from anchorgpu.catalog import gpu_hour_price
    from anchorgpu.hardware import FEATURED_COMPARISONS, list_gpus
    from anchorgpu.hardware.display import training_units
    from anchorgpu.hardware.registry import source_descriptions

    gpus = list_gpus()
    rows = [(g, gpu_hour_price(g.name)) for g in gpus]
    # the training row's sources (gpus.toml training_sources), each key with its words for the cell's tooltip
    sources = source_descriptions({key for g in gpus for key in g.training_sources})
    return render(request, "gpus.html", {"rows": rows, "featured": FEATURED_COMPARISONS,
                                         "training": training_units, "sources": sources})


@router.get("/gpus/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: Annotated[str, Query(max_length=100)] = "h200", b: Annotated[str, Query(max_length=100)] = "h100-sxm") -> Response:
    """Two GPUs side by side: every ratio is the first over the second."""
    from anchorgpu.catalog import gpu_hour_price
    from anchorgpu.hardware import compare_gpus, compared_pair, list_gpus
    from anchorgpu.hardware.display import training_units
    from anchorgpu.hardware.registry import source_descriptions
    from anchorgpu.web.form_fields import canonical_gpu

    text = page_text(request)  # the selects show each GPU given by its alias, the known one too when the other is refused
    context: dict[str, Any] = {"gpus": list_gpus(), "a": canonical_gpu(a), "b": canonical_gpu(b), "words": ComparisonWords(text),
                               "fmt": lambda value, unit: format_value(value, unit, text.locale)}
    try:
        first, second = compared_pair(a, b)  # refused for one GPU named twice, as the CLI and the API refuse it
    except AnchorError as exc:
        context["error"] = refusal_words(exc, text)
        return render(request, "gpu_compare.html", context, status_code=exc.http_status)
    from anchorgpu.planner.speed.reference import predicted_speeds

    # the "FP8 / FP4 training" row: the GPU list's cell for each side, its sources' words as tooltips
    context["training"] = training_units
    context["sources"] = source_descriptions({*first.training_sources, *second.training_sources})
    context["comparison"] = compare_gpus(first, second, price_a_usd_per_gpu_hour=gpu_hour_price(first.name),
                                         price_b_usd_per_gpu_hour=gpu_hour_price(second.name),
                                         predicted=predicted_speeds(first, second))
    context["a"], context["b"] = first.name, second.name
    return render(request, "gpu_compare.html", context)
