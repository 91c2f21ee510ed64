"""The quote JSON contract (``anchorgpu quote --json``, ``POST /v1/quotes``) and its inverse.

Money is an exact decimal string (``"2190.00"``); ``per_gpu_hour_usd`` is ``null`` when the offering
has no monthly price. Datetimes are ISO 8601 with their offset. :func:`quote_from_json` rebuilds the
very same :class:`Quote`, so the store can keep the JSON body and answer later with the prices as quoted.

Stable keys: ``id, offering, region, quantity, gpus, term{unit,count,hours}, lines[], total_usd,
per_gpu_hour_usd, effective_per_gpu_hour_usd, gpu_hours, egress_included_tb, valid_until,
catalog_version`` (more may be added, never removed).
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from anchorgpu.catalog.model import TERM_UNITS, TermUnit
from anchorgpu.errors import InvalidInput, said
from anchorgpu.quotes.model import LineKind, Quote, QuoteLine
from anchorgpu.units import Term

__all__ = ["line_to_json", "quote_from_json", "quote_to_json"]


def line_to_json(line: QuoteLine) -> dict[str, Any]:
    return {
        "kind": line.kind,
        "item": line.item,
        "description": line.description,
        "quantity": line.quantity,
        "billed_unit": line.billed_unit,
        "billed_count": line.billed_count,
        "unit_price_usd": str(line.unit_price_usd),
        "amount_usd": str(line.amount_usd),
        "note": line.note,
    }


def quote_to_json(quote: Quote) -> dict[str, Any]:
    """Plain JSON types only (str, int, bool, None, list, dict)."""
    return {
        "id": quote.id,
        "offering": quote.offering_id,
        "region": quote.region,
        "quantity": quote.quantity,
        "gpus_per_server": quote.gpus_per_server,
        "gpus": quote.gpus,
        "term": {"unit": quote.term.unit, "count": quote.term.count, "hours": quote.term.hours},
        "options": {key: count for key, count in quote.options},
        "lines": [line_to_json(line) for line in quote.lines],
        "total_usd": str(quote.total_usd),
        "per_gpu_hour_usd": None if quote.per_gpu_hour_usd is None else str(quote.per_gpu_hour_usd),
        "effective_per_gpu_hour_usd": str(quote.effective_per_gpu_hour_usd),
        "gpu_hours": quote.gpu_hours,
        "egress_included_tb": str(quote.egress_included_tb),
        "egress_tb_per_month_per_server": quote.egress_tb_per_month_per_server,
        "ddos_protection": quote.ddos_protection,
        "created_at": quote.created_at.isoformat(),
        "valid_until": quote.valid_until.isoformat(),
        "catalog_version": quote.catalog_version,
        "nothing_else_billed": quote.statement,
    }


def _unit(value: object) -> TermUnit:
    if value not in TERM_UNITS:
        raise InvalidInput(said("quote JSON: term unit {value!r} is not one of {TERM_UNITS}", value=value,
                                TERM_UNITS=', '.join(TERM_UNITS)))
    return value


def _line_from_json(data: dict[str, Any]) -> QuoteLine:
    kind = data["kind"]
    if kind not in ("servers", "option"):
        raise InvalidInput(said("quote JSON: line kind {kind!r}", kind=kind))
    return QuoteLine(
        kind=cast(LineKind, kind),
        item=str(data["item"]),
        description=str(data["description"]),
        quantity=int(data["quantity"]),
        billed_unit=_unit(data["billed_unit"]),
        billed_count=int(data["billed_count"]),
        unit_price_usd=Decimal(str(data["unit_price_usd"])),
        amount_usd=Decimal(str(data["amount_usd"])),
        note=str(data.get("note", "")),
    )


def quote_from_json(data: dict[str, Any]) -> Quote:
    """Inverse of :func:`quote_to_json` (for quotes stored as JSON). Raises ``InvalidInput`` on a bad body."""
    try:
        term = data["term"]
        per_gpu = data["per_gpu_hour_usd"]
        return Quote(
            id=None if data["id"] is None else str(data["id"]),
            offering_id=str(data["offering"]),
            region=str(data["region"]),
            quantity=int(data["quantity"]),
            gpus_per_server=int(data["gpus_per_server"]),
            gpus=int(data["gpus"]),
            term=Term(unit=_unit(term["unit"]), count=int(term["count"])),
            options=tuple(sorted((str(k), int(v)) for k, v in dict(data.get("options", {})).items())),
            lines=tuple(_line_from_json(line) for line in data["lines"]),
            total_usd=Decimal(str(data["total_usd"])),
            per_gpu_hour_usd=None if per_gpu is None else Decimal(str(per_gpu)),
            effective_per_gpu_hour_usd=Decimal(str(data["effective_per_gpu_hour_usd"])),
            gpu_hours=int(data["gpu_hours"]),
            egress_included_tb=Decimal(str(data["egress_included_tb"])),
            egress_tb_per_month_per_server=int(data["egress_tb_per_month_per_server"]),
            ddos_protection=bool(data["ddos_protection"]),
            created_at=datetime.fromisoformat(str(data["created_at"])),
            valid_until=datetime.fromisoformat(str(data["valid_until"])),
            catalog_version=str(data["catalog_version"]),
            statement=str(data["nothing_else_billed"]),
        )
    except (KeyError, TypeError, ValueError, ArithmeticError) as exc:
        raise InvalidInput(said("quote JSON is malformed: {name__}: {exc}", name__=type(exc).__name__, exc=exc)) from exc
