"""GPU pages: the hardware list and a side-by-side comparison of two GPUs (ratios and what they mean)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from anchorgpu.errors import AnchorError
from anchorgpu.web.templating import render

router = APIRouter()


def format_value(value: Any, unit: str) -> str:
    """A comparison value for people, by its unit.

    >>> format_value(85899345920, "bytes"), format_value(3.35e12, "bytes/s"), format_value(989e12, "FLOP/s")
    ('80.0 GiB', '3,350 GB/s', '989 TFLOP/s')
    """
    if value is None:
        return "–"
    if unit == "bytes":
        return f"{value / 2**30:,.1f} GiB"
    if unit == "bytes/s":
        return f"{value / 1e9:,.0f} GB/s"
    if unit in ("FLOP/s", "OP/s"):
        return f"{value / 1e12:,.0f} T{unit}"
    if unit == "USD/GPU-hour":
        return f"${Decimal(str(value)):,.2f}"
    if unit == "W":
        return f"{value:,.0f} W"
    return f"{value:,}" if isinstance(value, int | float) else str(value)


@router.get("/gpus", response_class=HTMLResponse)
def gpus_page(request: Request) -> Response:
    """Every GPU with memory, bandwidth, dense BF16 and the cheapest catalog rate."""
    from anchorgpu.catalog import gpu_hour_price
    from anchorgpu.hardware import FEATURED_COMPARISONS, list_gpus

    rows = [(g, gpu_hour_price(g.name)) for g in list_gpus()]
    return render(request, "gpus.html", {"rows": rows, "featured": FEATURED_COMPARISONS})


@router.get("/gpus/compare", response_class=HTMLResponse)
def compare_page(request: Request, a: Annotated[str, Query(max_length=100)] = "h200", b: Annotated[str, Query(max_length=100)] = "h100-sxm") -> Response:
    """Two GPUs side by side: every ratio is the first over the second."""
    from anchorgpu.catalog import gpu_hour_price
    from anchorgpu.hardware import compare_gpus, get_gpu, list_gpus

    context: dict[str, Any] = {"gpus": list_gpus(), "a": a, "b": b, "fmt": format_value}
    try:
        first, second = get_gpu(a), get_gpu(b)
    except AnchorError as exc:
        context["error"] = exc.message
        return render(request, "gpu_compare.html", context, status_code=exc.http_status)
    from anchorgpu.planner.speed.reference import predicted_speeds

    context["comparison"] = compare_gpus(first, second, price_a_usd_per_gpu_hour=gpu_hour_price(first.name),
                                         price_b_usd_per_gpu_hour=gpu_hour_price(second.name),
                                         predicted=predicted_speeds(first, second))
    context["a"], context["b"] = first.name, second.name
    return render(request, "gpu_compare.html", context)
