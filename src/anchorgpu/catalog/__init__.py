"""The AnchorGPU catalog: offerings (server shapes), options, list prices and initial stock, as data.

Public API (stable; other areas code against it):

- :func:`load_catalog` → :class:`Catalog` (frozen; ``.version``, ``.offerings``, ``.options``,
  ``.regions``; ``.offering(id)`` / ``.option(id)`` raise ``UnknownEntity`` with did-you-mean);
- :class:`Offering` (``id, gpu, gpus, kind, region(s), vcpus, ram_bytes, nvme_bytes, network,
  interconnect, fabric, prices_usd, per_gpu_hour_usd, egress_tb_per_month, initial_stock``),
  :class:`Option`, :class:`Prices` (``None`` = unpriced, never 0);
- :func:`find_offerings` (filter by gpu/alias, min GPUs, max USD per GPU-hour at 730 h, region,
  interconnect, kind; sort), :func:`gpu_hour_price` (cheapest 730-h rate of a GPU);
- :func:`offering_to_json`, :func:`offerings_table` (Rich) for the faces.

Data files live in ``catalog/data/`` and are validated on load (errors name file and row).
Pricing a term is :mod:`anchorgpu.quotes`.
"""

from anchorgpu.catalog.loader import UNPRICED, load_catalog
from anchorgpu.catalog.model import TERM_UNITS, Catalog, Offering, OfferingKind, Option, Prices, Region, TermUnit
from anchorgpu.catalog.query import SORT_KEYS, SortKey, find_offerings, gpu_hour_price, offering_regions
from anchorgpu.catalog.render import offering_to_json, offerings_table, option_to_json, prices_to_json

__all__ = [
    "SORT_KEYS",
    "TERM_UNITS",
    "UNPRICED",
    "Catalog",
    "Offering",
    "OfferingKind",
    "Option",
    "Prices",
    "Region",
    "SortKey",
    "TermUnit",
    "find_offerings",
    "gpu_hour_price",
    "load_catalog",
    "offering_regions",
    "offering_to_json",
    "offerings_table",
    "option_to_json",
    "prices_to_json",
]
