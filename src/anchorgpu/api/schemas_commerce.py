"""Request and response schemas of the HTTP API's commerce: quotes, allocations, their events and extensions.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from anchorgpu.api.schemas_base import TEXT_PATTERN, Money, _Request, _Schema
from anchorgpu.validation import ID_MAX_LENGTH, ID_PATTERN

__all__ = ["AllocationCreate", "AllocationEventOut", "AllocationExtend", "AllocationList", "AllocationOut",
           "ExtensionQuote", "QuoteCreate", "QuoteLineOut", "QuoteOut", "QuoteStored", "TermOut"]


class QuoteCreate(_Request):
    offering: str = Field(min_length=1, max_length=100, pattern=TEXT_PATTERN, description="Offering id from /v1/offerings, e.g. 'h100-sxm-1x-vm'")
    quantity: int = Field(default=1, ge=1, le=10_000, description="Whole servers of the offering (a JSON integer: not true, not \"3\")")
    term: str = Field(default="1month", min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Fixed term: 'Nh' hours, 'Nw' weeks (168 h), 'Nmonth' months (720 h); ASCII digits (parsed by the same rule as the CLI's --term)", examples=["1month", "2w", "12h"])
    options: dict[Annotated[str, Field(max_length=100, pattern=TEXT_PATTERN)], Annotated[int, Field(ge=0, le=10_000)]] = Field(
        default_factory=dict, description="Option id → units per server, e.g. {'nvme-tb': 2}", max_length=50
    )
    region: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="Region id; default: the offering's first region")


class QuoteLineOut(_Schema):
    kind: Literal["servers", "option"] = Field(description="'servers' for the GPU servers, 'option' for an option")
    item: str = Field(description="Offering id or option id")
    description: str = Field(description="What the line is")
    quantity: int = Field(description="Servers, or option units over all servers")
    billed_unit: str = Field(description="Term unit billed: hour, week or month")
    billed_count: int = Field(description="How many billed units")
    unit_price_usd: str = Field(description="List price of one billed unit per server (or option unit), USD")
    amount_usd: str = Field(description="Line amount, USD, rounded once to the cent")
    note: str = Field(description="How the term was billed when a longer unit was cheaper")


class TermOut(_Schema):
    unit: str = Field(description="hour, week or month")
    count: int = Field(description="Number of units")
    hours: int = Field(description="Length of the term in hours (week = 168 h, month = 720 h)")


class QuoteOut(_Schema):
    """A quote, with the same keys as ``anchorgpu quote --json``; its prices hold until ``valid_until``."""

    id: str | None = Field(description="Quote id, to buy it with POST /v1/allocations")
    offering: str = Field(description="Offering id")
    region: str = Field(description="Region id")
    quantity: int = Field(description="Servers")
    gpus: int = Field(description="GPUs in total (servers × GPUs per server)")
    term: TermOut = Field(description="The fixed term")
    lines: list[QuoteLineOut] = Field(description="Itemized lines; their sum is the total")
    total_usd: str = Field(description="The whole price for the term, USD; nothing else is billed")
    per_gpu_hour_usd: str | None = Field(description="Comparison rate: monthly list price / GPUs / 730 h, USD per GPU-hour")
    effective_per_gpu_hour_usd: str = Field(description="What this term really costs: total / GPU-hours, USD per GPU-hour")
    gpu_hours: int = Field(description="GPUs × term hours")
    egress_included_tb: str = Field(description="Egress included over the term, TB (pro-rated from the monthly allowance)")
    valid_until: str = Field(description="Buy before this instant (ISO 8601 UTC)")
    catalog_version: str = Field(description="Catalog version the prices come from")


class QuoteStored(QuoteOut):
    used: bool = Field(description="True once the quote was bought (a quote buys one allocation)")


class AllocationCreate(_Request):
    quote_id: str = Field(min_length=1, max_length=ID_MAX_LENGTH, pattern=ID_PATTERN, description="Id of one of your quotes, still valid and not yet bought")


class AllocationExtend(_Request):
    term: str = Field(min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Added paid term: 'Nh', 'Nw' (168 h) or 'Nmonth' (720 h); priced by a new quote. Required: an extension is never charged for a default term", examples=["1month", "1w"])
    dry_run: bool = Field(default=False, description="true: answer the price of this extension (ExtensionQuote) and charge nothing; nothing is recorded under the Idempotency-Key")
    expected_total_usd: Money("expected_total_usd") | None = Field(  # type: ignore[valid-type]
        default=None, strict=False,
        description="The price you confirmed (a dry run's total_usd; a JSON number or a plain decimal string, at most 2 "
                    "places): if today's price differs, 409 price_changed and nothing is charged")


class ExtensionQuote(_Schema):
    """What an extension would cost and change; nothing is charged (``dry_run: true``)."""

    dry_run: Literal[True] = Field(description="Always true: this is a price, not a purchase")
    charged: Literal[False] = Field(description="Always false: nothing was charged")
    allocation_id: str = Field(description="Allocation id")
    term: str = Field(description="The term that would be added")
    added_hours: int = Field(description="Hours that would be added after ends_at")
    total_usd: str = Field(description="What extending would charge now, USD (today's list price); send it back as expected_total_usd")
    effective_per_gpu_hour_usd: str = Field(description="That price per GPU-hour of the added term")
    current_ends_at: str = Field(description="The end of the paid term now (ISO 8601 UTC)")
    ends_at: str = Field(description="The end after extending")
    amount_usd_after: str = Field(description="Amount paid in all after extending")
    capacity_available: bool = Field(description="Whether the stock holds the servers for the added period now")
    servers_free: int = Field(description="Servers of this offering and region free for the whole added period")
    servers_in_stock: int = Field(description="Servers of this offering and region in stock")
    capacity: str = Field(description="The capacity check in words")
    quote: dict[str, Any] = Field(description="The priced lines, as a quote (not stored)")
    statement: str = Field(description="One sentence: what would be charged, and that nothing was")


class AllocationEventOut(_Schema):
    seq: int = Field(description="Order of the event within the allocation")
    kind: str = Field(description="created, activated, stopped, started, extended, terminated or expired")
    at: str = Field(description="When it happened (ISO 8601 UTC)")
    from_state: str | None = Field(description="State before")
    to_state: str = Field(description="State after")


class AllocationOut(_Schema):
    """An allocation, with the same keys as ``anchorgpu allocations --json``."""

    id: str = Field(description="Allocation id")
    quote_id: str = Field(description="The quote it was bought from")
    offering: str = Field(description="Offering id")
    region: str = Field(description="Region id")
    quantity: int = Field(description="Servers")
    gpus: int = Field(description="GPUs in total")
    state: Literal["scheduled", "active", "stopped", "expired", "terminated"] = Field(description="State now")
    starts_at: str = Field(description="Start of the paid term (ISO 8601 UTC)")
    ends_at: str = Field(description="End of the paid term = starts_at + term (+ extensions); stopping never moves it")
    term: TermOut = Field(description="The term first bought")
    paid_hours: int = Field(description="Hours paid for, from starts_at to ends_at")
    amount_usd: str = Field(description="Amount paid, USD (quote total plus extensions); stopping never changes it")
    events: list[AllocationEventOut] = Field(description="Every change, oldest first")
    notice: str | None = Field(default=None, description="Present when stopped: stopping does not pause the paid term")


class AllocationList(_Schema):
    data: list[AllocationOut] = Field(description="Your allocations, oldest first")
    count: int = Field(description="Number of allocations in data")
