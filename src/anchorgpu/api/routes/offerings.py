"""``/v1/offerings``: what can be rented, at which list prices, with stock per region (public)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from anchorgpu.allocations import services
from anchorgpu.api.deps import ClockDep, UowFactoryDep
from anchorgpu.api.schemas import Money, OfferingList, OfferingOut, problems
from anchorgpu.catalog import find_offerings, load_catalog, offering_regions, offering_to_json

router = APIRouter(prefix="/offerings", tags=["catalog"])


@router.get("", response_model=OfferingList, summary="List offerings", responses=problems(404, 422))
def list_offerings(
    uow_factory: UowFactoryDep,
    clock: ClockDep,
    gpu: Annotated[str | None, Query(max_length=100, description="GPU name or alias, e.g. 'h100'")] = None,
    min_gpus: Annotated[int | None, Query(ge=1, le=1024, description="At least this many GPUs per server")] = None,
    max_usd_per_gpu_hour: Annotated[
        Money("max_usd_per_gpu_hour") | None,  # type: ignore[valid-type]
        Query(description="At most this 730-h comparison rate, USD per GPU-hour: a plain decimal such as 3.50"),
    ] = None,
    region: Annotated[str | None, Query(max_length=100, description="Region id, e.g. 'eu-central'")] = None,
    interconnect: Annotated[str | None, Query(max_length=100, description="Substring of the GPU link or server fabric: 'nvlink', 'infiniband'")] = None,
    kind: Annotated[Literal["vm", "bare-metal"] | None, Query(description="'vm' (1 GPU) or 'bare-metal' (8-GPU server)")] = None,
    sort: Annotated[Literal["price", "gpus", "gpu", "id"], Query(description="Sort key; 'price' = cheapest 730-h rate first")] = "price",
) -> OfferingList:
    """Offerings matching every filter, one row per region with its stock, cheapest first by default."""
    return offering_rows(
        uow_factory, clock, gpu=gpu, min_gpus=min_gpus, max_usd_per_gpu_hour=max_usd_per_gpu_hour, region=region,
        interconnect=interconnect, kind=kind, sort=sort,
    )


def offering_rows(
    uow_factory: Callable[[], Any],
    clock: Callable[[], datetime],
    *,
    gpu: str | None = None,
    min_gpus: int | None = None,
    max_usd_per_gpu_hour: Decimal | None = None,
    region: str | None = None,
    interconnect: str | None = None,
    kind: Literal["vm", "bare-metal"] | None = None,
    sort: Literal["price", "gpus", "gpu", "id"] = "price",
) -> OfferingList:
    """The listing shared by this route and the catalog page: catalog data joined with stock from the store."""
    catalog = load_catalog()
    found = find_offerings(
        catalog, gpu=gpu, min_gpus=min_gpus, max_usd_per_gpu_hour=max_usd_per_gpu_hour, region=region,
        interconnect=interconnect, kind=kind, sort=sort,
    )
    stock = services.list_stock(uow_factory())
    free = services.list_stock(uow_factory(), clock=clock)
    rows = [
        OfferingOut.model_validate({**offering_to_json(o, stock.get((o.id, r)), region=r, options=catalog.options), "available_now": free.get((o.id, r))})
        for o, r in offering_regions(found, region)
    ]
    return OfferingList(data=rows, count=len(rows), catalog_version=catalog.version)
