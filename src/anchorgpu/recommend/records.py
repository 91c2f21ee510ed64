"""What ``recommend`` answers: the options it ranks, the offerings it rejects and why, and the whole answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.speed.overrides import Overrides
from anchorgpu.recommend.limits import LimitsApplied
from anchorgpu.units import Term

__all__ = ["Recommendation", "RecommendedOption", "Rejection"]


@fast_init  # built for every option shown
@dataclass(frozen=True, slots=True, kw_only=True)
class RecommendedOption:
    """One offering and server count with the fastest configuration that fits it, priced for the term."""

    offering: str
    gpu: str
    kind: str
    region: str
    servers: int
    gpus: int
    config: dict[str, Any]  # the sweep row: layout, precisions, memory and speed columns
    total_usd: Decimal
    per_gpu_hour_usd: Decimal | None  # 730-h comparison rate of the offering
    effective_per_gpu_hour_usd: Decimal  # what the term costs per GPU-hour
    usd_per_million_output_tokens: Decimal | None = None  # serving, at full use for the whole term
    run_hours: int | None = None  # training with --tokens: whole hours the run needs
    run_usd: Decimal | None = None  # training: price of renting those hours (best-price rule of quotes)
    run_term: str | None = None  # training: the term that quote asks for (``3000h``, or ``5month`` sold by the month)
    run_refused: str | None = None  # training: why the run has no price (longer than any term a quote prices)
    # training on GPUs across a network between servers: each GPU's share of it, one way, in Gb/s (None: no network)
    network_gbit_per_s_per_gpu: float | None = None
    codes: tuple[str, ...] = ()  # warning codes that apply to this option
    lower_precision: bool = False  # weights or KV cache below the plan's precision (outputs change)

    @property
    def speed(self) -> float:
        value = self.config.get("decode_tokens_per_s_total") or self.config.get("train_tokens_per_s") or 0.0
        return float(value)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Rejection:
    offering: str
    servers: int
    total_usd: Decimal | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    model: str
    task: str
    term: Term
    workload: dict[str, Any]
    evaluated: int
    results: tuple[RecommendedOption, ...]
    pareto: tuple[RecommendedOption, ...]
    rejected: tuple[Rejection, ...]
    assumptions: tuple[str, ...]
    warnings: tuple[tuple[str, str], ...] = field(default=())
    moe: bool = False  # a mixture of experts: its serving band is its own
    efficiencies: Overrides = field(default_factory=Overrides)  # --mfu/--mbu: the bands are then none
    limits: LimitsApplied = field(default_factory=LimitsApplied)  # serving: the per-user limits and what they dropped
    # training: a shown option's step figures plan gives and the sweep keeps none of (train_tflops_per_gpu, train_mfu,
    # step_time_breakdown_s: recommend.step_figures), computed only when its JSON is rendered; None: none to give
    step_figures: Callable[[RecommendedOption], Mapping[str, Any]] | None = field(default=None, compare=False,
                                                                                   repr=False)
