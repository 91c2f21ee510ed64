"""Catalog page: offerings with filters, each row one click from a quote."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, Response

from anchorgpu.api.deps import ClockDep, UowFactoryDep
from anchorgpu.api.routes.offerings import offering_rows
from anchorgpu.errors import AnchorError, InvalidInput
from anchorgpu.money_rules import usd_amount
from anchorgpu.validation import ascii_int
from anchorgpu.web.i18n import PageText, page_text
from anchorgpu.web.refusals import refusal_words
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
    sort: Annotated[str | None, Query(max_length=30)] = None,
) -> Response:
    """Every offering (one row per region), filtered by the form; bad filters are explained, not crashed on."""
    filters = {"gpu": _blank_to_none(gpu), "min_gpus": _blank_to_none(min_gpus), "max_usd_per_gpu_hour": _blank_to_none(max_usd_per_gpu_hour),
               "region": _blank_to_none(region), "kind": _blank_to_none(kind), "interconnect": _blank_to_none(interconnect)}
    text = page_text(request)
    error = None
    listing = None
    try:
        # ASCII digits only, as every count on every face ("８" or "١٢" were read as 8 and 12)
        min_gpus_n = ascii_int(filters["min_gpus"]) if filters["min_gpus"] else None
        if min_gpus_n is not None and min_gpus_n < 1:
            raise ValueError
    except ValueError:
        error, min_gpus_n = text.gettext("Min GPUs must be a whole number of at least 1."), None
    try:  # the one money rule of every face: ASCII digits and one dot ("１００" or "1e3" were read as amounts)
        max_rate = (usd_amount(filters["max_usd_per_gpu_hour"], field="max_usd_per_gpu_hour")
                    if filters["max_usd_per_gpu_hour"] else None)
    except InvalidInput:
        error, max_rate = text.gettext("Max $/GPU-hour must be a non-negative amount in USD."), None
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
            error = refusal_words(exc, text)
    sort_key, descending = parse_sort(sort)
    rows = sort_rows(listing.data, sort_key, descending) if listing is not None else []
    context = {"listing": listing, "rows": rows, "filters": filters, "error": error, "bare_metal_gpus": bare_metal_sizes(text),
               "sort_key": sort_key, "descending": descending, "sort_links": sort_links(filters, sort_key, descending),
               "gpu_memory": gpu_memory_bytes}
    return render(request, "catalog.html", context, status_code=200 if error is None else 422)


def bare_metal_sizes(text: PageText | None = None) -> str:
    """The GPUs per bare-metal server the catalog offers, in words ("4 or 8"; ru "4 или 8"), read from the catalog data."""
    from anchorgpu.catalog import load_catalog

    sizes = sorted({o.gpus for o in load_catalog().offerings if o.kind == "bare-metal"})
    if len(sizes) < 2:
        return "".join(str(n) for n in sizes)
    text = text or PageText("en")
    return text.gettext("%(some)s or %(last)s", some=", ".join(str(n) for n in sizes[:-1]), last=sizes[-1])


SORT_KEYS: tuple[str, ...] = ("offering", "region", "memory", "gpus", "month", "per_gpu_hour", "free")
# "gpus" has no heading of its own (the offering cell says "8 × h100-sxm"); ?sort=gpus still works
"""The catalog table's sortable columns (``?sort=KEY`` ascending, ``?sort=-KEY`` descending)."""


def parse_sort(value: str | None) -> tuple[str, bool]:
    """``"-memory"`` → ``("memory", True)``; unknown or blank → the default, cheapest $/GPU-hour first."""
    text = (value or "").strip()
    descending = text.startswith("-")
    key = text.removeprefix("-")
    if key not in SORT_KEYS:
        return "per_gpu_hour", False
    return key, descending


def gpu_memory_bytes(gpu_id: str) -> int | None:
    """One GPU's memory from the hardware registry, or None when the registry does not know the GPU."""
    from anchorgpu.hardware import get_gpu

    try:
        return int(get_gpu(gpu_id).memory_bytes)
    except (AnchorError, LookupError):
        return None


def _sort_value(row: Any, key: str) -> tuple[int, Any]:
    """(missing?, value): rows without the value (unpriced, unknown stock) go last in either direction."""
    value: Any
    if key == "offering":
        value = row.id
    elif key == "region":
        value = (row.region, row.id)
    elif key == "memory":
        value = gpu_memory_bytes(row.gpu)
    elif key == "gpus":
        value = row.gpus
    elif key == "month":
        value = row.prices_usd.month
    elif key == "per_gpu_hour":
        value = row.per_gpu_hour_usd
    else:
        value = row.available_now
    if value is None:
        return 1, 0
    money = key in ("month", "per_gpu_hour")  # amounts come as decimal strings; an offering id is text, compared as text
    return 0, Decimal(value) if money and isinstance(value, str) else value


def sort_rows(rows: Sequence[Any], key: str, descending: bool) -> list[Any]:
    """The listing's rows in the asked order; ties keep the catalog's order (cheapest first)."""
    present = [r for r in rows if _sort_value(r, key)[0] == 0]
    missing = [r for r in rows if _sort_value(r, key)[0] == 1]
    return sorted(present, key=lambda r: _sort_value(r, key)[1], reverse=descending) + missing


def sort_links(filters: Mapping[str, str | None], key: str, descending: bool) -> dict[str, str]:
    """Each column's link: the current filters plus its sort; the sorted column's link flips the order."""
    kept = [(k, v) for k, v in filters.items() if v]
    links = {}
    for column in SORT_KEYS:
        flip = column == key and not descending
        links[column] = "/catalog?" + urlencode([*kept, ("sort", f"-{column}" if flip else column)])
    return links
