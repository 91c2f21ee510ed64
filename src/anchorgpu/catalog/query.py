"""Pure queries over offerings: filter, sort, and the cheapest comparison rate per GPU.

Every function takes the offerings (or the catalog) as an argument; nothing reads files, stock or the
clock. Stock lives in the database (STORE) and is joined by the faces.

The price a filter compares is the **730-h comparison rate**: monthly price / GPUs / 730
(:attr:`Offering.per_gpu_hour_usd`). An unpriced offering has no rate: it never passes a price
ceiling and sorts after every priced one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Literal

from anchorgpu.catalog._gpus import GpuResolver, canonical_gpu
from anchorgpu.catalog.model import Catalog, Offering, OfferingKind
from anchorgpu.errors import InvalidInput, UnknownEntity, did_you_mean, said

__all__ = ["SORT_KEYS", "SortKey", "find_offerings", "gpu_hour_price", "offering_regions"]

SortKey = Literal["price", "gpus", "gpu", "id"]
SORT_KEYS: tuple[SortKey, ...] = ("price", "gpus", "gpu", "id")

def _price_key(offering: Offering) -> tuple[int, Decimal, str]:
    rate = offering.per_gpu_hour_usd
    return (1, Decimal(0), offering.id) if rate is None else (0, rate, offering.id)


_SORTS: dict[str, Callable[[Offering], tuple[object, ...]]] = {
    "price": _price_key,
    "gpus": lambda o: (o.gpus, *_price_key(o)),
    "gpu": lambda o: (o.gpu, o.gpus, o.id),
    "id": lambda o: (o.id,),
}


def find_offerings(
    offerings: Iterable[Offering] | Catalog,
    *,
    gpu: str | None = None,
    min_gpus: int | None = None,
    max_usd_per_gpu_hour: Decimal | str | None = None,
    region: str | None = None,
    interconnect: str | None = None,
    kind: OfferingKind | None = None,
    priced_only: bool = False,
    sort: SortKey = "price",
    descending: bool = False,
    resolve_gpu: GpuResolver | None = None,
) -> tuple[Offering, ...]:
    """Offerings matching every given filter, sorted (cheapest 730-h rate first by default).

    - ``gpu``: canonical id or alias (resolved through ``anchorgpu.hardware.get_gpu``; an unknown
      name raises ``UnknownGpu`` with did-you-mean);
    - ``min_gpus``: GPUs per server at least this many;
    - ``max_usd_per_gpu_hour``: 730-h comparison rate at most this (unpriced offerings drop out);
    - ``region``: listed in this region (exact id, case-insensitive);
    - ``interconnect``: case-insensitive substring of the GPU interconnect *or* the server fabric
      (``nvlink``, ``infiniband``, ``roce``);
    - ``kind``: ``vm`` or ``bare-metal``; ``priced_only`` drops unpriced offerings.

    A ``region`` or ``interconnect`` that names nothing in the whole pool (a typo such as ``us-eas`` or
    ``infinband``) raises ``UnknownEntity`` with did-you-mean instead of answering an empty list.
    """
    pool = offerings.offerings if isinstance(offerings, Catalog) else tuple(offerings)
    if sort not in _SORTS:
        raise InvalidInput(said("sort={sort!r}: expected one of {SORT_KEYS}", sort=sort,
                                SORT_KEYS=', '.join(SORT_KEYS)))
    predicates: list[Callable[[Offering], bool]] = []
    if gpu is not None:
        canonical = (resolve_gpu or canonical_gpu)(gpu)
        predicates.append(lambda o: o.gpu == canonical)
    if min_gpus is not None:
        if min_gpus < 1:
            raise InvalidInput(said("min_gpus={min_gpus}: must be at least 1", min_gpus=min_gpus))
        predicates.append(lambda o: o.gpus >= min_gpus)
    if max_usd_per_gpu_hour is not None:
        ceiling = _as_usd(max_usd_per_gpu_hour, "max_usd_per_gpu_hour")
        predicates.append(lambda o: (rate := o.per_gpu_hour_usd) is not None and rate <= ceiling)
    if region is not None:
        wanted = region.strip().lower()
        if isinstance(offerings, Catalog):
            offerings.region(wanted)  # UnknownEntity with did-you-mean for a region the catalog lacks
        elif not any(wanted in o.regions for o in pool):
            raise UnknownEntity("region", region, did_you_mean(region, sorted({r for o in pool for r in o.regions})))
        predicates.append(lambda o: wanted in o.regions)
    if interconnect is not None:
        needle = interconnect.strip().lower()
        links = {text.lower() for o in pool for text in (o.interconnect, o.fabric)}
        if not any(needle in link for link in links):
            words = sorted({w for link in links for w in re.findall(r"[a-z][a-z0-9]{2,}", link)})
            raise UnknownEntity("interconnect", interconnect, did_you_mean(interconnect, words))
        predicates.append(lambda o: needle in o.interconnect.lower() or needle in o.fabric.lower())
    if kind is not None:
        predicates.append(lambda o: o.kind == kind)
    if priced_only:
        predicates.append(lambda o: o.is_priced)
    matches = [o for o in pool if all(p(o) for p in predicates)]
    return tuple(sorted(matches, key=_SORTS[sort], reverse=descending))


def _as_usd(value: Decimal | str, field: str) -> Decimal:
    """The one money rule of every face (:func:`anchorgpu.money_rules.usd_amount`): a number or a plain decimal."""
    from anchorgpu.money_rules import usd_amount

    return usd_amount(value, field=field, flag=field)


def gpu_hour_price(gpu_id: str, catalog: Catalog | None = None, *, resolve_gpu: GpuResolver | None = None) -> Decimal | None:
    """Cheapest 730-h comparison rate (USD per GPU-hour) over the offerings of this GPU; None if unpriced
    or not offered. ``gpu_id`` may be an alias.

    For HW's ``gpus compare`` and the glossary: a market-style "from $X per GPU-hour" figure.
    """
    from anchorgpu.catalog.loader import load_catalog

    offered = find_offerings(catalog or load_catalog(), gpu=gpu_id, resolve_gpu=resolve_gpu)
    rates = [rate for o in offered if (rate := o.per_gpu_hour_usd) is not None]
    return min(rates, default=None)


def offering_regions(offerings: Iterable[Offering], region: str | None = None) -> tuple[tuple[Offering, str], ...]:
    """One (offering, region) row per region the offering is listed in — the shape of a listing table
    where stock is per region. ``region`` keeps only that region's rows."""
    wanted = region.strip().lower() if region else None
    return tuple((o, r) for o in offerings for r in o.regions if wanted is None or r == wanted)
