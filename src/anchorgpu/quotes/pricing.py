"""Pure pricing: (catalog, offering, servers, term, options, now) → :class:`Quote`. No clock, no I/O.

Rules (DESIGN.md section 2; tested in ``tests/quotes``):

1. **Whole servers, whole GPUs.** ``quantity`` is a whole number of servers ≥ 1; anything else is
   refused with :class:`~anchorgpu.errors.PartialGpuRequested` (no MIG, vGPU or time-slicing).
2. **Fixed terms.** ``Nh`` = N hours, ``Nw`` = N × 168 h, ``Nmonth`` = N × 720 h (``units.parse_term``).
3. **Line price.** Each line is the list price of the term's unit × count × quantity. Best-price cap:
   a term is never billed more than the shortest whole number of a *longer* priced unit that covers its
   hours (160 h of an H100 VM: 160 × $3.49 = $558.40 > 1 week = $547.00, so it is billed as 1 week
   and the line's note says so; the term still lasts 160 h). With per-hour prices falling from hour
   to week to month (checked when the catalog loads) this makes the total non-decreasing in hours.
   The requested unit itself must be priced, else :class:`UnpricedOffering`.
4. **Options** are priced per unit per server with their own hour/week/month prices, by the same
   rule; ``options={"ipv4": 2}`` on 3 servers is one line of 6 units.
5. **Rounding.** Every line amount goes through :func:`anchorgpu.units.round_usd` once (to the cent,
   half-even); the total is the plain sum of the lines. The effective rate is ``round_usd(total /
   gpu_hours)``; the comparison rate is ``round_usd(monthly / gpus / 730)``.
6. **Egress** included = allowance (20 TB/month single-GPU, 50 TB/month multi-GPU, per server)
   × servers × term hours / 720, floored to whole GB. DDoS protection on public IPs is included.
   Nothing else is ever billed.
7. **Validity.** ``valid_until = now + validity_s`` (24 h by default); ``now`` must be timezone-aware.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from anchorgpu.catalog.model import TERM_UNITS, Catalog, Offering, Option, Prices, TermUnit
from anchorgpu.errors import PartialGpuRequested, said, said_template
from anchorgpu.quotes.errors import InvalidOptionRequest, InvalidQuoteRequest, RegionNotOffered, UnpricedOffering
from anchorgpu.quotes.model import Quote, QuoteLine
from anchorgpu.units import (
    HOURS_PER_RENTAL_MONTH,
    HOURS_PER_WEEK,
    Term,
    ceil_div,
    parse_term,
    require_whole_gpus,
    round_usd,
)

__all__ = [
    "DEFAULT_VALIDITY_S",
    "Billing",
    "bill_term",
    "egress_included_tb",
    "ServersPrice",
    "price_quote",
    "run_term",
    "servers_for_gpus",
    "servers_price",
    "servers_prices",
    "term_total_usd",
]

DEFAULT_VALIDITY_S = 86_400
"""A quote holds for 24 hours unless the caller configures otherwise."""

_UNIT_HOURS: dict[TermUnit, int] = {"hour": 1, "week": HOURS_PER_WEEK, "month": HOURS_PER_RENTAL_MONTH}
_GB_PER_TB = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Billing:
    """How one term is billed for one server (or one option unit): ``count`` × ``unit`` at ``unit_price_usd``."""

    unit: TermUnit
    count: int
    unit_price_usd: Decimal

    @property
    def amount_usd(self) -> Decimal:
        """Unrounded price for one server; list prices are whole cents, so this is exact."""
        return self.unit_price_usd * self.count


def bill_term(prices: Prices, term: Term, *, what: str) -> Billing:
    """Cheapest way to bill ``term``: its own unit, or fewer units of a longer priced unit covering it.

    ``what`` names the thing priced, for the error message when the term's unit is unpriced.

    >>> p = Prices(hour=Decimal("3.49"), week=Decimal("547.00"), month=Decimal("2190.00"))
    >>> bill_term(p, parse_term("10h"), what="h100")
    Billing(unit='hour', count=10, unit_price_usd=Decimal('3.49'))
    >>> bill_term(p, parse_term("160h"), what="h100")  # 160 x 3.49 = 558.40 > 547.00
    Billing(unit='week', count=1, unit_price_usd=Decimal('547.00'))
    >>> bill_term(p, parse_term("1month"), what="h100").amount_usd
    Decimal('2190.00')
    """
    own_price = prices[term.unit]
    if own_price is None:
        priced = [unit for unit, value in prices.items() if value is not None]
        units = {"hour": said("hour"), "week": said("week"), "month": said("month")}  # the units, in words
        hint = (said("; priced by the {first}", first=units[priced[0]]) if len(priced) == 1 else
                said("; priced by the {first}, {second}", first=units[priced[0]], second=units[priced[1]])
                if len(priced) == 2 else said("; price on request"))
        template = {"hour": said_template("{what} has no hourly list price{hint}"),
                    "week": said_template("{what} has no weekly list price{hint}"),
                    "month": said_template("{what} has no monthly list price{hint}")}[term.unit]
        raise UnpricedOffering(said(template, what=what, hint=hint))
    best = Billing(unit=term.unit, count=term.count, unit_price_usd=own_price)
    for unit in TERM_UNITS[TERM_UNITS.index(term.unit) + 1:]:
        price = prices[unit]
        if price is None:
            continue
        candidate = Billing(unit=unit, count=ceil_div(term.hours, _UNIT_HOURS[unit]), unit_price_usd=price)
        if candidate.amount_usd < best.amount_usd:
            best = candidate
    return best


def run_term(offering: Offering, hours: int) -> Term | None:
    """The term a quote for a run of ``hours`` asks for: that many hours where the offering is priced by the hour,
    else the fewest of its shortest priced unit that cover them (an offering sold by the month only rents a
    3,000-hour run as 5 months); None when it has no list price at all. Quoting it bills the cheapest way
    (:func:`bill_term`).

    >>> from anchorgpu.catalog import load_catalog
    >>> catalog = load_catalog()
    >>> str(run_term(catalog.offering("h100-sxm-8x-bm"), 3000)), str(run_term(catalog.offering("gb200-4x-bm"), 3000))
    ('3000h', '5month')
    """
    if hours < 1:
        raise InvalidQuoteRequest(said("a run of {hours} hours: a term is at least one hour", hours=hours))
    for unit in TERM_UNITS:
        if offering.prices_usd[unit] is not None:
            return Term(unit=unit, count=ceil_div(hours, _UNIT_HOURS[unit]))
    return None


def term_total_usd(offering: Offering, term: Term | str, quantity: int = 1) -> Decimal | None:
    """What ``quantity`` servers of ``offering`` cost for ``term`` (the servers line of a quote, no
    options), or None when the term's unit is unpriced. For ranking offerings by the cost of a term.

    >>> from anchorgpu.catalog import load_catalog
    >>> h100 = load_catalog().offering("h100-sxm-1x-vm")
    >>> term_total_usd(h100, "1month"), term_total_usd(h100, "160h"), term_total_usd(h100, "2w", 2)
    (Decimal('2190.00'), Decimal('547.00'), Decimal('2188.00'))
    """
    the_term = term if isinstance(term, Term) else parse_term(term)
    if offering.prices_usd[the_term.unit] is None:
        return None
    servers = _whole_servers(quantity, offering)
    return round_usd(bill_term(offering.prices_usd, the_term, what=offering.id).amount_usd * servers)


def egress_included_tb(tb_per_month_per_server: int, hours: int, servers: int) -> Decimal:
    """Included egress for a term: allowance × servers × hours / 720, floored to whole GB, in TB.

    >>> egress_included_tb(20, 720, 1), egress_included_tb(50, 720, 2), egress_included_tb(20, 168, 1)
    (Decimal('20'), Decimal('100'), Decimal('4.666'))
    """
    included_gb = tb_per_month_per_server * _GB_PER_TB * servers * hours // HOURS_PER_RENTAL_MONTH
    return Decimal(included_gb) / _GB_PER_TB


def _plural(unit: str, count: int) -> str:
    return f"{count} {unit}{'' if count == 1 else 's'}"


def _line(*, kind: str, item: str, description: str, quantity: int, term: Term, billing: Billing) -> QuoteLine:
    note = ""
    if billing.unit != term.unit:
        covered_h = billing.count * _UNIT_HOURS[billing.unit]
        note = (f"{term.hours} h billed as {_plural(billing.unit, billing.count)}: cheaper than "
                f"{_plural(term.unit, term.count)} at the {term.unit}ly price; a {covered_h} h term costs the same")
    return QuoteLine(
        kind="servers" if kind == "servers" else "option",
        item=item,
        description=description,
        quantity=quantity,
        billed_unit=billing.unit,
        billed_count=billing.count,
        unit_price_usd=billing.unit_price_usd,
        amount_usd=round_usd(billing.amount_usd * quantity),
        note=note,
    )


def _normalize_options(options: Mapping[str, int] | Iterable[tuple[str, int]] | None) -> dict[str, int]:
    pairs = options.items() if isinstance(options, Mapping) else (options or ())
    merged: dict[str, int] = {}
    for key, count in pairs:
        option_id = str(key).strip().lower()
        if isinstance(count, bool) or not isinstance(count, int):
            raise InvalidOptionRequest(said("option {option_id}={count!r}: the count must be a whole number",
                                            option_id=option_id, count=count))
        if count < 0:
            raise InvalidOptionRequest(said("option {option_id}={count}: the count cannot be negative",
                                            option_id=option_id, count=count))
        if option_id in merged:
            raise InvalidOptionRequest(said("option {option_id!r} is given twice", option_id=option_id))
        merged[option_id] = count
    return merged


def _option_line(option: Option, per_server: int, offering: Offering, quantity: int, term: Term) -> QuoteLine:
    if not option.applies_to(offering):
        raise InvalidOptionRequest(said("option {option_id!r} does not apply to {offering_kind} offerings",
                                        option_id=option.id, offering_kind=offering.kind))
    if per_server > option.max_per_server:
        raise InvalidOptionRequest(said("option {option_id}={per_server}: at most {max_per_server} per server",
                                        option_id=option.id, per_server=per_server,
                                        max_per_server=option.max_per_server))
    billing = bill_term(option.prices_usd, term, what=f"option {option.id!r}")
    return _line(kind="option", item=option.id, description=f"{option.name}: {per_server} x {option.unit} per server",
                 quantity=per_server * quantity, term=term, billing=billing)


def _whole_servers(quantity: object, offering: Offering) -> int:
    """``quantity`` as a whole number of servers ≥ 1, refused as a partial-GPU request otherwise."""
    try:
        return require_whole_gpus(quantity, field="quantity")  # type: ignore[arg-type]
    except PartialGpuRequested as exc:
        raise PartialGpuRequested(said("{exc_message}; quantity counts whole servers ({gpus} x {gpu} each for "
                                       "{offering_id})", exc_message=exc.message, gpus=offering.gpus,
                                       gpu=offering.gpu, offering_id=offering.id)) from exc


def servers_for_gpus(offering: Offering, gpus: object) -> int:
    """How many whole servers of ``offering`` give exactly ``gpus`` GPUs; a partial GPU or a count that
    is not a multiple of the server size is refused with :class:`PartialGpuRequested`.

    >>> from anchorgpu.catalog import load_catalog
    >>> servers_for_gpus(load_catalog().offering("h100-sxm-8x-bm"), 16)
    2
    """
    whole = require_whole_gpus(gpus, field="gpus")  # type: ignore[arg-type]
    if whole % offering.gpus:
        raise PartialGpuRequested(
            said("gpus={whole}: {offering_id} is rented as whole {gpus}-GPU servers; ask for a multiple of {gpus} "
                 "or choose a smaller server shape", whole=whole, offering_id=offering.id, gpus=offering.gpus))
    return whole // offering.gpus


def _resolve_region(offering: Offering, region: str | None, catalog: Catalog) -> str:
    if region is None:
        return offering.region
    wanted = catalog.region(region).id  # UnknownEntity with did-you-mean for a region nobody has
    if wanted not in offering.regions:
        raise RegionNotOffered(said("offering {offering_id!r} is not listed in region {wanted!r} (listed in: "
                                    "{regions})", offering_id=offering.id, wanted=wanted,
                                    regions=', '.join(offering.regions)))
    return wanted


def _statement(egress_tb: Decimal, term: Term, servers: int, per_server_tb: int) -> str:
    return (f"Nothing else is billed: the total covers the GPU servers and the options listed. Included: "
            f"{egress_tb} TB of egress over the {term.hours} h term ({per_server_tb} TB per server per 720-h month, "
            f"pro-rated by hours, x {servers} server{'s' if servers != 1 else ''}, fair use) and DDoS protection on "
            f"public IPs. Stopping an allocation does not pause the paid term.")


def _check_now(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise InvalidQuoteRequest(said("now must be timezone-aware (UTC), not a naive datetime"))


@dataclass(frozen=True, slots=True, kw_only=True)
class ServersPrice:
    """The figures of a quote for whole servers and no options, in its region (:func:`servers_price`)."""

    region: str
    gpus: int
    total_usd: Decimal
    per_gpu_hour_usd: Decimal | None
    effective_per_gpu_hour_usd: Decimal


def servers_price(catalog: Catalog, offering_id: str, quantity: int, term: Term | str, now: datetime) -> ServersPrice:
    """What ``price_quote(catalog, offering_id, quantity, term, None, now)`` says of its price (total, rates, GPUs,
    region), with the same checks and errors, without building its lines, statement and validity: for pricing
    many offerings and server counts at once (``recommend``). A test holds the two equal.

    >>> from datetime import UTC, datetime
    >>> from anchorgpu.catalog import load_catalog
    >>> servers_price(load_catalog(), "h100-sxm-8x-bm", 2, "1month", datetime(2026, 1, 1, tzinfo=UTC)).gpus
    16
    """
    return servers_prices(catalog, offering_id, (quantity,), term, now)[0]


def servers_prices(catalog: Catalog, offering_id: str, quantities: Iterable[int], term: Term | str,
                   now: datetime) -> tuple[ServersPrice, ...]:
    """:func:`servers_price` for each of ``quantities`` (same checks, in the same order, and errors), the term
    billed once for them all.

    >>> from datetime import UTC, datetime
    >>> from anchorgpu.catalog import load_catalog
    >>> [p.total_usd for p in servers_prices(load_catalog(), "h100-sxm-1x-vm", (1, 2), "1w", datetime(2026, 1, 1, tzinfo=UTC))]
    [Decimal('547.00'), Decimal('1094.00')]
    """
    _check_now(now)
    offering = catalog.offering(offering_id)
    counts = [_whole_servers(quantity, offering) for quantity in quantities]
    the_term = term if isinstance(term, Term) else parse_term(term)
    billing = bill_term(offering.prices_usd, the_term, what=f"offering {offering.id!r}")
    rate, zero = offering.per_gpu_hour_usd, Decimal("0.00")
    out = []
    for servers in counts:
        total_usd = zero + round_usd(billing.amount_usd * servers)  # as a quote sums its lines from 0.00
        gpus = offering.gpus * servers
        out.append(ServersPrice(region=offering.region, gpus=gpus, total_usd=total_usd, per_gpu_hour_usd=rate,
                                effective_per_gpu_hour_usd=round_usd(total_usd / (gpus * the_term.hours))))
    return tuple(out)


def price_quote(
    catalog: Catalog,
    offering_id: str,
    quantity: int,
    term: Term | str,
    options: Mapping[str, int] | Iterable[tuple[str, int]] | None,
    now: datetime,
    validity_s: int = DEFAULT_VALIDITY_S,
    *,
    region: str | None = None,
    quote_id: str | None = None,
) -> Quote:
    """Price ``quantity`` whole servers of ``offering_id`` for ``term`` with ``options`` (units per server).

    Pure and deterministic: the same inputs give the same quote. ``now`` (timezone-aware) is the
    quote's ``created_at``; ``valid_until = now + validity_s``. ``quote_id`` is assigned by the store
    (None for a quote that is only shown). ``region`` defaults to the offering's first region.

    Raises ``UnknownEntity`` (offering/option/region), ``PartialGpuRequested`` (quantity not a whole
    number ≥ 1), ``InvalidTerm``, ``UnpricedOffering``, ``RegionNotOffered``, ``InvalidOptionRequest``,
    ``InvalidQuoteRequest``.
    """
    _check_now(now)
    if isinstance(validity_s, bool) or not isinstance(validity_s, int) or validity_s <= 0:
        raise InvalidQuoteRequest(said("validity_s={validity_s!r}: a quote must hold for a positive whole number "
                                       "of seconds", validity_s=validity_s))
    offering = catalog.offering(offering_id)
    servers = _whole_servers(quantity, offering)
    where = _resolve_region(offering, region, catalog)
    the_term = term if isinstance(term, Term) else parse_term(term)
    requested = _normalize_options(options)
    chosen = {catalog.option(key).id: count for key, count in requested.items()}  # UnknownEntity first

    lines = [_line(kind="servers", item=offering.id,
                   description=f"{offering.id}: {offering.gpus} x {offering.gpu} ({offering.kind}) per server",
                   quantity=servers, term=the_term,
                   billing=bill_term(offering.prices_usd, the_term, what=f"offering {offering.id!r}"))]
    lines += [_option_line(catalog.option(key), count, offering, servers, the_term)
              for key, count in sorted(chosen.items()) if count > 0]

    total_usd = sum((line.amount_usd for line in lines), Decimal("0.00"))
    gpus = offering.gpus * servers
    gpu_hours = gpus * the_term.hours
    egress_tb = egress_included_tb(offering.egress_tb_per_month, the_term.hours, servers)
    return Quote(
        id=quote_id,
        offering_id=offering.id,
        region=where,
        quantity=servers,
        gpus_per_server=offering.gpus,
        gpus=gpus,
        term=the_term,
        options=tuple(sorted((key, count) for key, count in chosen.items() if count > 0)),
        lines=tuple(lines),
        total_usd=total_usd,
        per_gpu_hour_usd=offering.per_gpu_hour_usd,
        effective_per_gpu_hour_usd=round_usd(total_usd / gpu_hours),
        gpu_hours=gpu_hours,
        egress_included_tb=egress_tb,
        egress_tb_per_month_per_server=offering.egress_tb_per_month,
        ddos_protection=offering.ddos_protection,
        created_at=now,
        valid_until=now + timedelta(seconds=validity_s),
        catalog_version=catalog.version,
        statement=_statement(egress_tb, the_term, servers, offering.egress_tb_per_month),
    )
