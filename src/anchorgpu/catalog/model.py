"""Frozen records of the catalog: what can be rented, where, and at which list prices.

Pure: stdlib plus ``anchorgpu.units``/``errors``. The loader builds these from the data files in
``catalog/data/``; nothing here reads files, the clock or the database. Stock in the database is
seeded from :attr:`Offering.initial_stock`; after that the database is the source of truth.

Prices are per **whole server** (all its GPUs) for one hour, one week (168 h) or one month (720 h),
as exact :class:`~decimal.Decimal` USD. ``None`` means *unpriced* (price on request) — an explicit
state, never 0.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Literal, TypeVar

from anchorgpu.errors import UnknownEntity, did_you_mean
from anchorgpu.units import HOURS_PER_COMPARISON_MONTH, round_usd

__all__ = [
    "TERM_UNITS",
    "Catalog",
    "Offering",
    "OfferingKind",
    "Option",
    "Prices",
    "Region",
    "TermUnit",
]

OfferingKind = Literal["vm", "bare-metal"]
TermUnit = Literal["hour", "week", "month"]
TERM_UNITS: tuple[TermUnit, ...] = ("hour", "week", "month")


@dataclass(frozen=True, slots=True, kw_only=True)
class Prices:
    """List prices in USD for one hour, one week (168 h) and one month (720 h); ``None`` = unpriced.

    Readable as attributes or by unit name (``prices["month"]``).

    >>> p = Prices(hour=Decimal("3.49"), week=Decimal("546.00"), month=Decimal("2190.00"))
    >>> p["month"], p.is_priced, Prices().is_priced
    (Decimal('2190.00'), True, False)
    """

    hour: Decimal | None = None
    week: Decimal | None = None
    month: Decimal | None = None

    def __getitem__(self, unit: str) -> Decimal | None:
        if unit not in TERM_UNITS:
            raise KeyError(unit)
        value: Decimal | None = getattr(self, unit)
        return value

    def items(self) -> Iterator[tuple[TermUnit, Decimal | None]]:
        return ((unit, self[unit]) for unit in TERM_UNITS)

    @property
    def is_priced(self) -> bool:
        """True when at least one term unit has a price."""
        return any(value is not None for _, value in self.items())


def _comparison_rate(month_usd: Decimal | None, gpus: int) -> Decimal | None:
    """The 730-h comparison rate: monthly price / GPUs / 730, rounded by the one money rule.

    >>> _comparison_rate(Decimal("2190"), 1)
    Decimal('3.00')
    >>> _comparison_rate(None, 8) is None
    True
    """
    if month_usd is None:
        return None
    return round_usd(month_usd / gpus / HOURS_PER_COMPARISON_MONTH)


@dataclass(frozen=True, slots=True, kw_only=True)
class Region:
    id: str  # e.g. "eu-central"
    name: str  # e.g. "Frankfurt, Germany"


@dataclass(frozen=True, slots=True, kw_only=True)
class Offering:
    """A server shape that can be rented whole: one dedicated VM with one GPU passed through, or a
    bare-metal server with all its GPUs.

    ``gpu`` is the hardware canonical id (``anchorgpu.hardware.get_gpu(...).name``); ``gpus`` is per
    server. ``prices_usd`` is per server. ``egress_tb_per_month`` is the included egress per server
    (fair use), pro-rated for other terms by :func:`anchorgpu.quotes.egress_included_tb`.
    """

    id: str
    gpu: str
    gpus: int
    kind: OfferingKind
    vcpus: int
    ram_bytes: int
    nvme_bytes: int
    network_gbps: int  # public uplink per server
    interconnect: str  # GPU-to-GPU inside the server, e.g. "NVLink 4 (NVSwitch)"; "n/a (single GPU)"
    fabric: str  # server-to-server network for multi-node jobs, e.g. "8x400 Gb/s InfiniBand NDR"; "none"
    egress_tb_per_month: int
    ddos_protection: bool  # always True in the shipped data: DDoS protection on public IPs is included
    prices_usd: Prices
    regions: tuple[str, ...]  # regions where the offering is listed (the stock file's rows)
    initial_stock: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}), hash=False)  # region -> servers
    price_basis: str = ""  # where the list price comes from (market range, derivation)
    notes: str = ""

    @property
    def region(self) -> str:
        """The first (primary) region; use :attr:`regions` when the offering is in several."""
        return self.regions[0]

    @property
    def network(self) -> str:
        """Human summary: public uplink plus the scale-out fabric, if any."""
        public = f"{self.network_gbps} Gb/s public"
        return public if self.fabric == "none" else f"{public}; {self.fabric}"

    @property
    def per_gpu_hour_usd(self) -> Decimal | None:
        """The 730-h comparison rate per GPU-hour from the monthly price (None when unpriced).

        Not what a term costs: a month term lasts 720 h, see ``Quote.effective_per_gpu_hour_usd``.
        """
        return _comparison_rate(self.prices_usd.month, self.gpus)

    @property
    def is_priced(self) -> bool:
        return self.prices_usd.is_priced


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """A selectable extra, priced per unit per server for an hour, week or month (``None`` = unpriced).

    ``max_per_server`` caps the units one server may carry; ``kinds`` lists the offering kinds it
    applies to.
    """

    id: str  # e.g. "nvme-tb"
    name: str
    unit: str  # what one unit is, e.g. "1 TB local NVMe"
    prices_usd: Prices
    max_per_server: int
    kinds: tuple[OfferingKind, ...]
    description: str = ""

    def applies_to(self, offering: Offering) -> bool:
        return offering.kind in self.kinds


@dataclass(frozen=True, slots=True, kw_only=True)
class Catalog:
    """The whole catalog at one ``version``: offerings, options and regions."""

    version: str
    offerings: tuple[Offering, ...]
    options: tuple[Option, ...]
    regions: tuple[Region, ...]
    currency: str = "USD"
    # id tables, built once with the catalog: a recommendation prices every offering at every server count,
    # each price looking its offering up
    _offering_ids: dict[str, Offering] = field(init=False, repr=False, compare=False)
    _option_ids: dict[str, Option] = field(init=False, repr=False, compare=False)
    _region_ids: dict[str, Region] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_offering_ids", {o.id: o for o in self.offerings})
        object.__setattr__(self, "_option_ids", {o.id: o for o in self.options})
        object.__setattr__(self, "_region_ids", {r.id: r for r in self.regions})

    def offering(self, offering_id: str) -> Offering:
        """The offering with this id (case-insensitive); ``UnknownEntity`` with did-you-mean otherwise."""
        return _lookup("offering", offering_id, self._offering_ids)

    def option(self, option_id: str) -> Option:
        return _lookup("option", option_id, self._option_ids)

    def region(self, region_id: str) -> Region:
        return _lookup("region", region_id, self._region_ids)


_T = TypeVar("_T")


def _lookup(kind: str, name: str, table: Mapping[str, _T]) -> _T:
    key = name.strip().lower() if isinstance(name, str) else ""
    if key in table:
        return table[key]
    raise UnknownEntity(kind, str(name), did_you_mean(str(name), table))
