"""JSON and Rich-table views of offerings, shared by the CLI, the API and the web page.

Money goes out as strings of exact Decimals (``"2190.00"``); an unpriced term is ``null``, never 0.
Rich is imported inside :func:`offerings_table` only, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from anchorgpu.catalog.model import Offering, Option, Prices
from anchorgpu.units import fmt_bytes

__all__ = ["offering_to_json", "offerings_table", "option_to_json", "prices_to_json"]


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def prices_to_json(prices: Prices) -> dict[str, str | None]:
    """``{"hour", "week", "month"}`` as exact strings; ``None`` (JSON null) = unpriced."""
    return {unit: _money(value) for unit, value in prices.items()}


def option_to_json(option: Option) -> dict[str, Any]:
    return {
        "id": option.id,
        "name": option.name,
        "unit": option.unit,
        "kinds": list(option.kinds),
        "max_per_server": option.max_per_server,
        "prices_usd": prices_to_json(option.prices_usd),
        "description": option.description,
    }


def _stock_for(stock: int | Mapping[str, int] | None, region: str) -> int | None:
    if stock is None or isinstance(stock, int):
        return stock
    return stock.get(region)


def offering_to_json(
    offering: Offering,
    stock: int | Mapping[str, int] | None = None,
    *,
    region: str | None = None,
    options: Iterable[Option] | None = None,
) -> dict[str, Any]:
    """The ``offerings --json`` object for one offering in one region.

    ``region`` defaults to the offering's first region; ``stock`` is the servers available there
    (an int, or a region → servers mapping; ``None`` when the caller does not know it).
    ``options`` defaults to the shipped catalog's options; only those that apply to the offering's
    kind are listed.
    """
    if options is None:
        from anchorgpu.catalog.loader import load_catalog

        options = load_catalog().options
    where = region or offering.region
    return {
        "id": offering.id,
        "gpu": offering.gpu,
        "gpus": offering.gpus,
        "kind": offering.kind,
        "region": where,
        "regions": list(offering.regions),
        "prices_usd": prices_to_json(offering.prices_usd),
        "priced": offering.is_priced,
        "per_gpu_hour_usd": _money(offering.per_gpu_hour_usd),
        "egress_tb_per_month": offering.egress_tb_per_month,
        "ddos_protection": offering.ddos_protection,
        "stock": _stock_for(stock, where),
        "vcpus": offering.vcpus,
        "ram_bytes": offering.ram_bytes,
        "nvme_bytes": offering.nvme_bytes,
        "network": offering.network,
        "network_gbps": offering.network_gbps,
        "interconnect": offering.interconnect,
        "fabric": offering.fabric,
        "options": [option_to_json(o) for o in options if o.applies_to(offering)],
        "price_basis": offering.price_basis,
        "notes": offering.notes,
    }


def _usd_cell(value: Decimal | None) -> str:
    return "unpriced" if value is None else f"{value:,}"


def _host(offering: Offering) -> str:
    return (f"{offering.vcpus} vCPU, {fmt_bytes(offering.ram_bytes)} RAM, "
            f"{fmt_bytes(offering.nvme_bytes, binary=False)} NVMe")


def offerings_table(rows: Iterable[tuple[Offering, str, int | None]], *, title: str | None = None,
                    wide: bool = False) -> Any:
    """A Rich ``Table`` of (offering, region, stock) rows; stock ``None`` shows as ``?``.

    The narrow form (fits 80 columns) shows id, GPUs, region, the three list prices per server, the
    730-h rate per GPU-hour and stock; ``wide=True`` adds the host, network and GPU interconnect.
    """
    from rich import box
    from rich.table import Table

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 0), show_edge=False)
    columns: list[tuple[str, str]] = [("offering", "left"), ("GPUs", "right"), ("region", "left"),
                                      ("hour", "right"), ("week", "right"), ("month", "right"),
                                      ("GPU-h*", "right"), ("stock", "right")]
    if wide:
        columns += [("host", "left"), ("network", "left"), ("GPU interconnect", "left")]
    for name, justify in columns:
        table.add_column(name, justify=justify, no_wrap=name not in ("host", "network", "GPU interconnect"),  # type: ignore[arg-type]
                         min_width=len(name))
    for offering, region, stock in rows:
        prices = offering.prices_usd
        cells = [offering.id, str(offering.gpus), region, _usd_cell(prices.hour),
                 _usd_cell(prices.week), _usd_cell(prices.month), _usd_cell(offering.per_gpu_hour_usd),
                 "?" if stock is None else str(stock)]
        if wide:
            cells += [_host(offering), offering.network, offering.interconnect]
        table.add_row(*cells)
    table.caption = ("Prices in USD per whole server. * GPU-h: comparison rate = monthly price / GPUs / 730 h; "
                     "a month term lasts 720 h (see `anchorgpu quote`).")
    table.caption_justify = "left"
    return table
