"""The offerings a recommendation ranks (:func:`~anchorgpu.recommend.service.recommend`): each offering and server
count's fastest usable configuration, priced (:class:`Candidate`), the cost/speed Pareto front, and the lines that
sum up what was left out (a training run longer than the term, one rejection per offering).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from anchorgpu.catalog import Catalog, Offering
from anchorgpu.errors import said
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.sweep_types import SweepResult
from anchorgpu.quotes import UnpricedOffering, price_quote, run_term
from anchorgpu.quotes.pricing import ServersPrice
from anchorgpu.recommend.records import RecommendedOption, Rejection
from anchorgpu.units import MAX_TERM_HOURS, Term, fmt_usd, round_usd_rate

__all__ = ["Candidate", "candidate", "longer_than_the_term", "one_per_offering", "over_budget", "over_budget_reason",
           "pareto", "per_million", "row_candidate", "run_refusal"]


@fast_init  # one per offering and server count kept
@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """An offering and server count with its fastest usable configuration (``index``), priced: what ranking needs;
    the :class:`RecommendedOption` (the configuration's row, its warnings) is built only for those shown."""

    offering: str
    source: Offering
    shape: int  # the offering's index in the sweep's shapes
    servers: int
    index: int
    quote: ServersPrice
    speed: float  # as RecommendedOption.speed reads it from the row
    decode: float | None  # serving: total output tokens/s, priced per million tokens when shown (per_million)
    run_hours: int | None
    run_usd: Decimal | None
    run_term: str | None  # training: the term a quote for the run asks for (hours, or the shortest priced unit)
    run_refused: str | None = None  # training: why the run has no price (longer than any quotable term)
    row: dict[str, Any] | None = None  # a row planned outside the sweep (recommend.offload); ``index`` then -1

    @property
    def total_usd(self) -> Decimal:
        return self.quote.total_usd

    @property
    def budget_usd(self) -> Decimal:
        """What ``--max-usd`` holds it to: a priced training run's price (what the rows are ranked by and the user
        pays for the tokens asked), else the term's total."""
        return self.run_usd if self.run_usd is not None else self.quote.total_usd


def _dollars(amount_usd: Decimal) -> str:
    """Money as every face writes it beside a price (``fmt_usd``: ``$1,241.00``); an amount with digits past the
    cent (a ``--max-usd`` may have them) with all of them, so a budget is never rounded onto the price it refused.

    >>> _dollars(Decimal("1241")), _dollars(Decimal("500")), _dollars(Decimal("1240.999"))
    ('$1,241.00', '$500.00', '$1,240.999')
    """
    exponent = amount_usd.as_tuple().exponent
    return fmt_usd(amount_usd) if not isinstance(exponent, int) or exponent >= -2 else f"${amount_usd:,f}"


def over_budget_reason(price_usd: Decimal, max_usd: Decimal, *, run: bool = False) -> str:
    """Why a price over ``--max-usd`` is rejected, both amounts written as the offering beside it is
    (``a100-80gb-sxm-1x-vm x1 ($1,241.00): over the budget: $1,241.00 > $500.00``; it said ``1241.00 USD > 500
    USD``); ``run``: the price is a training run's, not the term's total.

    >>> over_budget_reason(Decimal("1241.00"), Decimal("500")), over_budget_reason(Decimal("9.5"), Decimal("5"), run=True)
    ('over the budget: $1,241.00 > $500.00', "over the budget: the run's $9.50 > $5.00")
    """
    if run:
        return said("over the budget: the run's {price_usd} > {max_usd}", price_usd=_dollars(price_usd),
                    max_usd=_dollars(max_usd))
    return said("over the budget: {price_usd} > {max_usd}", price_usd=_dollars(price_usd), max_usd=_dollars(max_usd))


def over_budget(c: Candidate, max_usd: Decimal) -> Rejection:
    """The rejection of a candidate whose :attr:`Candidate.budget_usd` passes ``max_usd``, naming which price it is."""
    return Rejection(offering=c.offering, servers=c.servers, total_usd=c.quote.total_usd,
                     reason=over_budget_reason(c.budget_usd, max_usd, run=c.run_usd is not None))


def run_refusal(run_hours: int | None) -> str | None:
    """Why a training run of ``run_hours`` gets no price, or None: one longer than :data:`MAX_TERM_HOURS` cannot be
    quoted or booked (quote refuses the term), so pricing it would show a figure no one can pay.

    >>> run_refusal(3000) is None, run_refusal(MAX_TERM_HOURS + 1)[:33]
    (True, 'the run takes 87,601 h, longer th')
    """
    if run_hours is None or run_hours <= MAX_TERM_HOURS:
        return None
    return (said("the run takes {run_hours:,} h, longer than the longest term a quote prices ({MAX_TERM_HOURS:,} "
                 "h, 10 years): it cannot be booked; more GPUs (more servers, or an offering with more GPUs) "
                 "shorten it", run_hours=run_hours, MAX_TERM_HOURS=MAX_TERM_HOURS))


def candidate(result: SweepResult, i: int, offering: Offering, shape: int, servers: int, quote: ServersPrice,
              term: Term, catalog: Catalog, now: datetime) -> Candidate:
    """Configuration ``i`` on ``servers`` of ``offering``: its speed, and the hours and price of its run
    (training; serving's cost per million output tokens is :func:`per_million`'s, when shown)."""
    decode = result.value("decode_tokens_per_s_total", i)
    run: tuple[int | None, Decimal | None, str | None, str | None] = (None, None, None, None)
    if result.task != "inference":
        run = _run(result.value("train_time_s", i), offering, servers, catalog, now)
    run_hours, run_usd, run_term_text, refused = run
    return Candidate(offering=offering.id, source=offering, shape=shape, servers=servers, index=i, quote=quote,
                     speed=float(decode or result.value("train_tokens_per_s", i) or 0.0),
                     decode=decode if result.task == "inference" else None,
                     run_hours=run_hours, run_usd=run_usd, run_term=run_term_text, run_refused=refused)


def row_candidate(row: dict[str, Any], offering: Offering, shape: int, servers: int, quote: ServersPrice,
                  catalog: Catalog, now: datetime) -> Candidate:
    """A training ``row`` planned outside the sweep (:mod:`~anchorgpu.recommend.offload`) on ``servers`` of
    ``offering``, priced as :func:`candidate` prices a row of the sweep."""
    run_hours, run_usd, run_term_text, refused = _run(row.get("train_time_s"), offering, servers, catalog, now)
    return Candidate(offering=offering.id, source=offering, shape=shape, servers=servers, index=-1, quote=quote,
                     speed=float(row.get("train_tokens_per_s") or 0.0), decode=None, run_hours=run_hours,
                     run_usd=run_usd, run_term=run_term_text, run_refused=refused, row=row)


def _run(train_time_s: float | None, offering: Offering, servers: int, catalog: Catalog, now: datetime,
         ) -> tuple[int | None, Decimal | None, str | None, str | None]:
    """A training run's whole hours, its price, the term a quote for it asks for, and why it has no price (each None
    where it does not apply): a run no quote can price has no price (as an unpriced offering's run), not a figure no
    one can pay; an offering sold by the month rents the run by the month."""
    if not train_time_s:
        return None, None, None, None
    run_hours = max(1, math.ceil(train_time_s / 3600))
    refused = run_refusal(run_hours)
    covering = run_term(offering, run_hours) if refused is None else None
    if covering is None:
        return run_hours, None, None, refused
    try:
        return run_hours, price_quote(catalog, offering.id, servers, covering, None, now).total_usd, str(covering), None
    except UnpricedOffering:
        return run_hours, None, None, None


def per_million(c: Candidate, term: Term) -> Decimal | None:
    """A serving candidate's cost per million output tokens: its price for the term over the tokens it decodes in
    it at full use, a rate kept to four significant digits (to the cent, $0.0065 read as $0.01)."""
    if c.decode is None:
        return None
    tokens_m = c.decode * term.hours * 3600 / 1e6
    return round_usd_rate(c.quote.total_usd / Decimal(f"{tokens_m:.6f}")) if tokens_m > 0 else None


_Ranked = TypeVar("_Ranked", RecommendedOption, Candidate)


def pareto(options: Sequence[_Ranked], cost: Callable[[_Ranked], Any] = lambda o: o.total_usd,
           ) -> tuple[_Ranked, ...]:
    """Options no other option beats on both cost (lower: the term's price unless ``cost`` says otherwise, e.g. a
    training run's) and speed (higher); cheapest first."""
    front: list[_Ranked] = []
    best_speed = -math.inf
    for opt in sorted(options, key=lambda o: (cost(o), -o.speed, o.offering, o.servers)):
        if opt.speed > best_speed:
            front.append(opt)
            best_speed = opt.speed
    return tuple(front)


def longer_than_the_term(candidates: Sequence[Candidate], term: Term, max_servers: int, model: str) -> str | None:
    """A line for a training run whose fastest option still takes longer than the term: how many servers of that
    offering would finish it within the term at the same tokens a second per GPU (more GPUs rarely scale better),
    which is past what this answer tries. None when the fastest run fits the term."""
    timed = [c for c in candidates if c.run_hours]
    if not timed:
        return None
    fastest = max(timed, key=lambda c: (c.speed, -c.servers))
    hours = fastest.run_hours or 0
    if hours <= term.hours:
        return None
    gpus_per_server = fastest.quote.gpus // fastest.servers
    needed = math.ceil(hours * fastest.servers / term.hours)
    servers = 1 << (needed - 1).bit_length()  # a power of two: what data parallelism splits a global batch into
    return (f"The fastest run here takes {hours:,} h on {fastest.servers} x {fastest.offering} (servers tried: 1 to "
            f"{max_servers}), longer than the {term} term ({term.hours:,} h); at the same tokens a second per GPU, "
            f"finishing within it needs about {needed:,} servers - plan {servers} with `anchorgpu plan {model} --task "
            f"train --gpu {fastest.source.gpu} --gpus {servers * gpus_per_server}`; the GPU-hours, and so the price, "
            "stay about the same.")


def _over_budget(reason: str) -> bool:
    return reason.startswith("over the budget")


def _also_rejected(reason: str, others: dict[int, str]) -> str:
    """The note on the other server counts of an offering whose cheapest rejection says ``reason``; those turned
    away by the budget where ``reason`` is not (or the reverse) are named apart, so a shortage of memory on one
    server does not read as one on two that only cost too much.

    >>> _also_rejected("does not fit: 25.78 GiB of 21.28 GiB", {2: "over the budget: 656 > 500", 3: "over the budget"})
    ' (with 2, 3 servers: over the budget)'
    >>> _also_rejected("does not fit: x", {2: "does not fit: y", 3: "over the budget: z"})
    ' (also rejected with 2 servers; with 3 servers: over the budget)'
    >>> _also_rejected("over the budget: a", {2: "over the budget: b"})
    ' (also rejected with 2 servers)'
    """
    own = _over_budget(reason)
    same = [n for n in sorted(others) if _over_budget(others[n]) == own]
    other = [n for n in sorted(others) if _over_budget(others[n]) != own]
    parts = [said("also rejected with {counts} servers", counts=", ".join(map(str, same)))] if same else []
    if other:
        counts = ", ".join(map(str, other))
        parts.append(said("with {counts} servers: another reason than the budget", counts=counts) if own
                     else said("with {counts} servers: over the budget", counts=counts))
    return said(" ({parts})", parts=said("{first}; {second}", first=parts[0], second=parts[1]) if len(parts) == 2
                else parts[0])


def one_per_offering(rejected: Sequence[Rejection]) -> list[Rejection]:
    """The cheapest rejection of each offering (input sorted cheapest first), noting the other server counts."""
    reasons: dict[str, dict[int, str]] = {}
    for r in rejected:
        reasons.setdefault(r.offering, {}).setdefault(r.servers, r.reason)
    out: list[Rejection] = []
    seen: set[str] = set()
    for r in rejected:
        if r.offering in seen:
            continue
        seen.add(r.offering)
        others = {n: why for n, why in reasons[r.offering].items() if n != r.servers}
        if others:
            r = Rejection(offering=r.offering, servers=r.servers, total_usd=r.total_usd,
                          reason=said("{reason}{also}", reason=r.reason, also=_also_rejected(r.reason, others)))
        out.append(r)
    return out
