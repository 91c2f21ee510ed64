"""Frozen quote records: what a term of an offering costs, line by line, and until when it holds.

Pure data; :func:`anchorgpu.quotes.pricing.price_quote` builds them and
:mod:`anchorgpu.quotes.serialize` turns them into the JSON contract and back (STORE keeps that JSON,
so a stored quote keeps its prices whatever the catalog does later).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Literal

from anchorgpu.catalog.model import TermUnit
from anchorgpu.units import Term

__all__ = ["LineKind", "Quote", "QuoteLine"]

LineKind = Literal["servers", "option"]


@dataclass(frozen=True, slots=True, kw_only=True)
class QuoteLine:
    """One priced line: ``amount_usd = round_usd(unit_price_usd x billed_count x quantity)``.

    ``quantity`` is servers (for the ``servers`` line) or option units over all servers.
    ``billed_unit``/``billed_count`` say how the term was billed: normally the term's own unit and count;
    a shorter unit is capped by a longer one when that is cheaper (``note`` then says so).
    """

    kind: LineKind
    item: str  # offering id or option id
    description: str
    quantity: int
    billed_unit: TermUnit
    billed_count: int
    unit_price_usd: Decimal  # list price of one billed unit, per server (or per option unit)
    amount_usd: Decimal
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Quote:
    """A complete, itemized price for ``quantity`` whole servers of one offering for one fixed term.

    - ``total_usd`` is the sum of the lines' amounts (each rounded once, to the cent).
    - ``per_gpu_hour_usd``: the 730-h *comparison* rate from the offering's monthly list price
      (monthly / GPUs / 730; None when the month is unpriced) — for comparing offerings only.
    - ``effective_per_gpu_hour_usd``: ``round_usd(total_usd / gpu_hours)`` — what this term really
      costs per GPU-hour (a 720-h month of H100 at $2,190: $3.04, against $3.00 at 730 h).
    - ``gpu_hours = gpus x term hours``; ``egress_included_tb`` is pro-rated (see ``statement``).
    """

    id: str | None
    offering_id: str
    region: str
    quantity: int
    gpus_per_server: int
    gpus: int
    term: Term
    options: tuple[tuple[str, int], ...]  # (option id, units per server) as requested, sorted
    lines: tuple[QuoteLine, ...]
    total_usd: Decimal
    per_gpu_hour_usd: Decimal | None
    effective_per_gpu_hour_usd: Decimal
    gpu_hours: int
    egress_included_tb: Decimal
    egress_tb_per_month_per_server: int
    ddos_protection: bool
    created_at: datetime
    valid_until: datetime
    catalog_version: str
    statement: str

    @property
    def hours(self) -> int:
        return self.term.hours

    def is_valid_at(self, now: datetime) -> bool:
        """True while ``now`` is before ``valid_until`` (the instant itself is already expired)."""
        return now < self.valid_until
