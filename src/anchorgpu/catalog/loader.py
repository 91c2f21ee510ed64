"""Read the catalog data files into a frozen :class:`~anchorgpu.catalog.model.Catalog`.

Files (in ``catalog/data/``, read with :mod:`importlib.resources`):

- ``catalog.toml``  — ``catalog_version``, currency, egress allowances, DDoS policy, regions;
- ``offerings.csv`` — one server shape per row, list prices per hour / week / month per server;
- ``options.csv``   — selectable extras with their own hour / week / month prices per unit;
- ``stock.csv``     — initial stock: servers per offering per region (the database is seeded from it).

Every row is checked; the first bad value raises :class:`~anchorgpu.errors.DataFileError` naming the
file and the row (the header is row 1, so the first offering is row 2 — the line number in the file).
Rules checked: known GPU (through ``anchorgpu.hardware.get_gpu``; aliases become canonical ids),
kind ``vm`` has exactly 1 GPU and ``bare-metal`` at least 2, positive sizes, prices written as
``unpriced`` or a positive amount with at most two decimals (0 and empty cells are refused), a week
no dearer per hour than an hour, a month no dearer per hour than a week, unique ids, and stock rows
naming known offerings and regions.
"""

from __future__ import annotations

import csv
import functools
import io
import tomllib
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from anchorgpu.catalog._gpus import GpuResolver, canonical_gpu
from anchorgpu.catalog.model import TERM_UNITS, Catalog, Offering, OfferingKind, Option, Prices, Region
from anchorgpu.errors import DataFileError, NotFound
from anchorgpu.units import GB, GIB, HOURS_PER_RENTAL_MONTH, HOURS_PER_WEEK

__all__ = ["UNPRICED", "load_catalog", "parse_price"]

UNPRICED = "unpriced"
"""The word a data file writes for "no list price" (price on request). Never 0, never an empty cell."""

_KINDS: tuple[OfferingKind, ...] = ("vm", "bare-metal")
_OFFERING_COLUMNS = (
    "id", "gpu", "gpus", "kind", "vcpus", "ram_gib", "nvme_gb", "network_gbps", "interconnect", "fabric",
    "price_hour_usd", "price_week_usd", "price_month_usd", "price_basis", "notes",
)
_OPTION_COLUMNS = (
    "id", "name", "unit", "kinds", "max_per_server", "price_hour_usd", "price_week_usd", "price_month_usd", "description",
)
_STOCK_COLUMNS = ("offering", "region", "servers")


@functools.cache
def _shipped_catalog() -> Catalog:
    return load_catalog_from(resources.files("anchorgpu.catalog") / "data")


def load_catalog(data_dir: Path | Traversable | None = None, *, resolve_gpu: GpuResolver | None = None) -> Catalog:
    """The catalog shipped in the package (cached), or one read from ``data_dir`` (tests, operators).

    ``resolve_gpu`` defaults to ``anchorgpu.hardware.get_gpu(name).name``.
    """
    if data_dir is None and resolve_gpu is None:
        return _shipped_catalog()
    return load_catalog_from(data_dir if data_dir is not None else resources.files("anchorgpu.catalog") / "data",
                             resolve_gpu=resolve_gpu)


def load_catalog_from(data_dir: Path | Traversable, *, resolve_gpu: GpuResolver | None = None) -> Catalog:
    """Read and validate the four catalog files in ``data_dir``."""
    resolve = resolve_gpu or canonical_gpu
    meta = _read_meta(data_dir / "catalog.toml")
    regions = meta["regions"]
    region_ids = {r.id for r in regions}
    stock = _read_stock(data_dir / "stock.csv", region_ids)
    offerings = tuple(_read_offerings(data_dir / "offerings.csv", meta, stock, resolve))
    known = {o.id for o in offerings}
    for offering_id, (row, _) in stock.items():
        if offering_id not in known:
            raise DataFileError("stock.csv", row, f"offering {offering_id!r} is not in offerings.csv")
    options = tuple(_read_options(data_dir / "options.csv"))
    return Catalog(version=meta["version"], offerings=offerings, options=options, regions=regions,
                   currency=meta["currency"])


# --- catalog.toml ----------------------------------------------------------------------------------

def _read_meta(path: Traversable) -> dict[str, Any]:
    file = "catalog.toml"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DataFileError(file, "-", "file is missing") from exc
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(file, "-", f"not valid TOML ({exc})") from exc
    version = data.get("catalog_version")
    if not isinstance(version, str) or not version.strip():
        raise DataFileError(file, "catalog_version", "a non-empty string is required")
    currency = data.get("currency", "USD")
    if currency != "USD":
        raise DataFileError(file, "currency", f"only USD is supported, not {currency!r}")
    egress = data.get("egress", {})
    single, multi = egress.get("single_gpu_tb_per_month"), egress.get("multi_gpu_tb_per_month")
    for key, value in (("single_gpu_tb_per_month", single), ("multi_gpu_tb_per_month", multi)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise DataFileError(file, f"egress.{key}", "a positive whole number of TB is required")
    ddos = data.get("protection", {}).get("ddos_included")
    if not isinstance(ddos, bool):
        raise DataFileError(file, "protection.ddos_included", "true or false is required")
    regions: list[Region] = []
    for index, entry in enumerate(data.get("region", []), start=1):
        rid, name = entry.get("id"), entry.get("name")
        if not isinstance(rid, str) or not rid or rid != rid.lower() or " " in rid or not isinstance(name, str):
            raise DataFileError(file, f"region #{index}", "needs a lower-case id without spaces and a name")
        if rid in {r.id for r in regions}:
            raise DataFileError(file, f"region #{index}", f"duplicate region id {rid!r}")
        regions.append(Region(id=rid, name=name))
    if not regions:
        raise DataFileError(file, "region", "at least one [[region]] is required")
    return {"version": version.strip(), "currency": currency, "egress_single": single, "egress_multi": multi,
            "ddos": ddos, "regions": tuple(regions)}


# --- CSV helpers -----------------------------------------------------------------------------------

def _rows(path: Traversable, file: str, columns: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(row number, row) for each data row; row 1 is the header, so numbers match file lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise DataFileError(file, "-", "file is missing") from exc
    reader = csv.DictReader(io.StringIO(text))
    header = tuple(reader.fieldnames or ())
    missing = [c for c in columns if c not in header]
    if missing:
        raise DataFileError(file, 1, f"header lacks column(s) {', '.join(missing)}")
    for number, row in enumerate(reader, start=2):
        if None in row or any(value is None for value in row.values()):
            raise DataFileError(file, number, f"expected {len(header)} cells")
        yield number, {k: (v or "").strip() for k, v in row.items()}


def _text(file: str, row: int, record: Mapping[str, str], column: str, *, required: bool = True) -> str:
    value = record[column]
    if required and not value:
        raise DataFileError(file, row, f"{column} is empty")
    return value


def _positive_int(file: str, row: int, record: Mapping[str, str], column: str, *, minimum: int = 1) -> int:
    raw = record[column]
    try:
        value = int(raw)
    except ValueError as exc:
        raise DataFileError(file, row, f"{column}={raw!r} is not a whole number") from exc
    if value < minimum:
        raise DataFileError(file, row, f"{column}={value} must be at least {minimum}")
    return value


def parse_price(raw: str, *, file: str, row: int | str, column: str) -> Decimal | None:
    """A list price cell: ``unpriced`` → None; else a positive USD amount with at most two decimals.

    >>> parse_price("2190.00", file="f.csv", row=2, column="price_month_usd")
    Decimal('2190.00')
    >>> parse_price("unpriced", file="f.csv", row=2, column="price_month_usd") is None
    True
    """
    text = raw.strip()
    if text.lower() == UNPRICED:
        return None
    if not text:
        raise DataFileError(file, row, f"{column} is empty; write {UNPRICED!r} when there is no price")
    try:
        value = Decimal(text)
    except InvalidOperation as exc:
        raise DataFileError(file, row, f"{column}={text!r} is not an amount") from exc
    if not value.is_finite() or value <= 0:
        raise DataFileError(file, row, f"{column}={text!r}: a price must be positive; write {UNPRICED!r} for none")
    if cast(int, value.as_tuple().exponent) < -2:
        raise DataFileError(file, row, f"{column}={text!r}: list prices are whole cents")
    return value


def _prices(file: str, row: int, record: Mapping[str, str]) -> Prices:
    parsed = {unit: parse_price(record[f"price_{unit}_usd"], file=file, row=row, column=f"price_{unit}_usd")
              for unit in TERM_UNITS}
    prices = Prices(hour=parsed["hour"], week=parsed["week"], month=parsed["month"])
    _check_term_discounts(file, row, prices)
    return prices


def _check_term_discounts(file: str, row: int, prices: Prices) -> None:
    """Per hour, a longer unit never costs more than a shorter one (compared where both are priced)."""
    hours = {"hour": 1, "week": HOURS_PER_WEEK, "month": HOURS_PER_RENTAL_MONTH}
    priced = [(unit, value) for unit, value in prices.items() if value is not None]
    for (short, short_usd), (long, long_usd) in zip(priced, priced[1:], strict=False):
        if long_usd * hours[short] > short_usd * hours[long]:
            raise DataFileError(file, row, f"price_{long}_usd={long_usd} costs more per hour than price_{short}_usd={short_usd}")


def _unique(file: str, row: int, seen: set[str], value: str, column: str = "id") -> None:
    if value in seen:
        raise DataFileError(file, row, f"duplicate {column} {value!r}")
    seen.add(value)


def _slug(file: str, row: int, value: str, column: str = "id") -> str:
    if value != value.lower() or not value.replace("-", "").isalnum():
        raise DataFileError(file, row, f"{column}={value!r}: use lower-case letters, digits and '-'")
    return value


# --- stock.csv -------------------------------------------------------------------------------------

def _read_stock(path: Traversable, region_ids: set[str]) -> dict[str, tuple[int, dict[str, int]]]:
    """offering id -> (first row number, {region: servers})."""
    file = "stock.csv"
    stock: dict[str, tuple[int, dict[str, int]]] = {}
    for row, record in _rows(path, file, _STOCK_COLUMNS):
        offering = _text(file, row, record, "offering")
        region = _text(file, row, record, "region")
        if region not in region_ids:
            raise DataFileError(file, row, f"region {region!r} is not in catalog.toml ({', '.join(sorted(region_ids))})")
        servers = _positive_int(file, row, record, "servers", minimum=0)
        _first_row, by_region = stock.setdefault(offering, (row, {}))
        if region in by_region:
            raise DataFileError(file, row, f"duplicate stock row for {offering!r} in {region!r}")
        by_region[region] = servers
    return stock


# --- offerings.csv ---------------------------------------------------------------------------------

def _read_offerings(path: Traversable, meta: Mapping[str, Any], stock: Mapping[str, tuple[int, dict[str, int]]],
                    resolve_gpu: GpuResolver) -> Iterator[Offering]:
    file = "offerings.csv"
    seen: set[str] = set()
    for row, record in _rows(path, file, _OFFERING_COLUMNS):
        offering_id = _slug(file, row, _text(file, row, record, "id"))
        _unique(file, row, seen, offering_id)
        gpu_name = _text(file, row, record, "gpu")
        try:
            gpu = resolve_gpu(gpu_name)
        except NotFound as exc:
            raise DataFileError(file, row, f"gpu: {exc.message}") from exc
        kind = _text(file, row, record, "kind")
        if kind not in _KINDS:
            raise DataFileError(file, row, f"kind={kind!r}: expected 'vm' or 'bare-metal'")
        gpus = _positive_int(file, row, record, "gpus")
        if kind == "vm" and gpus != 1:
            raise DataFileError(file, row, f"a vm offering is one dedicated GPU passed through whole, not gpus={gpus}")
        if kind == "bare-metal" and gpus < 2:
            raise DataFileError(file, row, "a bare-metal offering is a multi-GPU server (gpus >= 2)")
        if offering_id not in stock:
            raise DataFileError(file, row, f"offering {offering_id!r} has no row in stock.csv (list it with 0 servers if sold out)")
        regions = tuple(stock[offering_id][1])
        yield Offering(
            id=offering_id,
            gpu=gpu,
            gpus=gpus,
            kind=kind,
            vcpus=_positive_int(file, row, record, "vcpus"),
            ram_bytes=_positive_int(file, row, record, "ram_gib") * GIB,
            nvme_bytes=_positive_int(file, row, record, "nvme_gb") * GB,
            network_gbps=_positive_int(file, row, record, "network_gbps"),
            interconnect=_text(file, row, record, "interconnect"),
            fabric=_text(file, row, record, "fabric"),
            egress_tb_per_month=meta["egress_single"] if gpus == 1 else meta["egress_multi"],
            ddos_protection=meta["ddos"],
            prices_usd=_prices(file, row, record),
            regions=regions,
            initial_stock=MappingProxyType(dict(stock[offering_id][1])),
            price_basis=_text(file, row, record, "price_basis"),
            notes=_text(file, row, record, "notes", required=False),
        )


# --- options.csv -----------------------------------------------------------------------------------

def _read_options(path: Traversable) -> Iterator[Option]:
    file = "options.csv"
    seen: set[str] = set()
    for row, record in _rows(path, file, _OPTION_COLUMNS):
        option_id = _slug(file, row, _text(file, row, record, "id"))
        _unique(file, row, seen, option_id)
        kinds = tuple(_text(file, row, record, "kinds").split())
        bad = [k for k in kinds if k not in _KINDS]
        if bad:
            raise DataFileError(file, row, f"kinds: unknown kind(s) {', '.join(bad)}; expected 'vm' and/or 'bare-metal'")
        prices = _prices(file, row, record)
        if not prices.is_priced:
            raise DataFileError(file, row, "an option needs at least one price")
        yield Option(
            id=option_id,
            name=_text(file, row, record, "name"),
            unit=_text(file, row, record, "unit"),
            prices_usd=prices,
            max_per_server=_positive_int(file, row, record, "max_per_server"),
            kinds=cast(tuple[OfferingKind, ...], kinds),
            description=_text(file, row, record, "description", required=False),
        )
