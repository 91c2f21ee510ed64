"""Catalog page: offerings with filters, each row one click from a quote."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from anchorgpu.api.deps import ClockDep, UowFactoryDep
from anchorgpu.api.routes.offerings import offering_rows
from anchorgpu.errors import AnchorError
from anchorgpu.web.templating import render

router = APIRouter()


def _blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


@router.get("/catalog", response_class=HTMLResponse)
def catalog_page(
    request: Request,
    uow_factory: UowFactoryDep,
    clock: ClockDep,
    gpu: Annotated[str | None, Query(max_length=100)] = None,
    min_gpus: Annotated[str | None, Query(max_length=10)] = None,
    max_usd_per_gpu_hour: Annotated[str | None, Query(max_length=20)] = None,
    region: Annotated[str | None, Query(max_length=100)] = None,
    kind: Annotated[str | None, Query(max_length=20)] = None,
    interconnect: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    """Every offering (one row per region), filtered by the form; bad filters are explained, not crashed on."""
    filters = {"gpu": _blank_to_none(gpu), "min_gpus": _blank_to_none(min_gpus), "max_usd_per_gpu_hour": _blank_to_none(max_usd_per_gpu_hour),
               "region": _blank_to_none(region), "kind": _blank_to_none(kind), "interconnect": _blank_to_none(interconnect)}
    error = None
    listing = None
    try:
        min_gpus_n = int(filters["min_gpus"]) if filters["min_gpus"] else None
        if min_gpus_n is not None and min_gpus_n < 1:
            raise ValueError
    except ValueError:
        error, min_gpus_n = "Min GPUs must be a whole number of at least 1.", None
    try:
        max_rate = Decimal(filters["max_usd_per_gpu_hour"]) if filters["max_usd_per_gpu_hour"] else None
        if max_rate is not None and (not max_rate.is_finite() or max_rate < 0):
            raise InvalidOperation
    except InvalidOperation:
        error, max_rate = "Max $/GPU-hour must be a non-negative amount in USD.", None
    kind_value: Literal["vm", "bare-metal"] | None = None
    if filters["kind"] == "vm":
        kind_value = "vm"
    elif filters["kind"] == "bare-metal":
        kind_value = "bare-metal"
    if error is None:
        try:
            listing = offering_rows(uow_factory, clock, gpu=filters["gpu"], min_gpus=min_gpus_n, max_usd_per_gpu_hour=max_rate,
                                    region=filters["region"], interconnect=filters["interconnect"], kind=kind_value)
        except AnchorError as exc:
            error = exc.message
    context = {"listing": listing, "filters": filters, "error": error, "bare_metal_gpus": bare_metal_sizes()}
    return render(request, "catalog.html", context, status_code=200 if error is None else 422)


def bare_metal_sizes() -> str:
    """The GPUs per bare-metal server the catalog offers, in words ("4 or 8"), read from the catalog data."""
    from anchorgpu.catalog import load_catalog

    sizes = sorted({o.gpus for o in load_catalog().offerings if o.kind == "bare-metal"})
    return " or ".join([", ".join(str(n) for n in sizes[:-1]), str(sizes[-1])]) if len(sizes) > 1 else "".join(str(n) for n in sizes)
