"""Recommend offerings: join the planner's sweep with the catalog's prices for a term.

The planner sweeps configurations without prices (:mod:`anchorgpu.planner.sweep`); this service turns
each catalog offering into a hardware shape, keeps the fastest configuration that fits per offering and
server count, prices it as :func:`anchorgpu.quotes.price_quote` does (:func:`~anchorgpu.quotes.pricing.servers_prices`,
held equal to it by a test, so a recommendation and a quote for the same servers and term always agree), and ranks by the total for the term. It also finds the Pareto front
of cost against speed and says why the cheaper options were rejected. ``now`` is passed in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import numpy as np

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import Catalog, Offering
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.inputs import default_seq_tokens
from anchorgpu.planner.speed.calibration import calibrated
from anchorgpu.planner.speed.caveats import serving_caveats, training_caveats
from anchorgpu.planner.speed.links import compute_precision_for_weights, tp_link
from anchorgpu.planner.sweep import HardwareShape, SweepResult, SweepSpec, sweep
from anchorgpu.planner.validate import check_kv_cache_task, default_kv_cache, kv_cache_runs_on
from anchorgpu.planner.workload_checks import validate_workload
from anchorgpu.quotes import UnpricedOffering, price_quote, run_term
from anchorgpu.quotes.pricing import ServersPrice, servers_prices
from anchorgpu.recommend.ceilings import row_ceilings
from anchorgpu.recommend.eligibility import able_to_run, engine_cap, miss_reason
from anchorgpu.recommend.precision import lowered, precision_choice
from anchorgpu.recommend.records import Recommendation, RecommendedOption, Rejection
from anchorgpu.recommend.render import recommendation_to_json
from anchorgpu.recommend.selection import best_per_group, closest_miss
from anchorgpu.units import Term, quotable_term, round_usd_rate

__all__ = [
    "Recommendation",
    "RecommendedOption",
    "Rejection",
    "network_bytes_per_s_per_gpu",
    "recommend",
    "recommendation_to_json",
    "shapes_from_catalog",
]

_FABRIC_RE = re.compile(r"(\d+)\s*x\s*(\d+)\s*Gb/s", re.IGNORECASE)


def network_bytes_per_s_per_gpu(offering: Offering) -> float:
    """Server-to-server bandwidth per GPU, one direction, from the offering's fabric (``8x400 Gb/s ...``),
    else its public uplink shared by its GPUs.

    >>> from anchorgpu.catalog import load_catalog
    >>> network_bytes_per_s_per_gpu(load_catalog().offering("h100-sxm-8x-bm")) / 1e9  # 8 x 400 Gb/s / 8 GPUs
    50.0
    """
    match = _FABRIC_RE.search(offering.fabric)
    if match:
        links, gbps = int(match.group(1)), int(match.group(2))
        return links * gbps * 1e9 / 8 / offering.gpus
    return offering.network_gbps * 1e9 / 8 / offering.gpus


def shapes_from_catalog(offerings: Sequence[Offering], *, max_servers: int = 4) -> tuple[HardwareShape, ...]:
    """One hardware shape per offering, 1..``max_servers`` whole servers; pipeline stages may span servers
    only where a fabric joins them (``fabric != "none"``), else extra servers are data-parallel replicas."""
    return tuple(
        HardwareShape(id=o.id, gpu=get_gpu(o.gpu), gpus_per_server=o.gpus, max_servers=max_servers,
                      network_bytes_per_s=network_bytes_per_s_per_gpu(o), scale_out=o.fabric.strip() != "none")
        for o in offerings
    )


def _codes(result: SweepResult, row: dict[str, Any], offering: Offering, *, shipped: str | None = None,
           lowered: bool = False, shipped_kv: str = "bf16", shape: HardwareShape | None = None) -> tuple[str, ...]:
    """The warning codes of a row on ``offering`` (``shape``: its hardware shape in ``result``, where the caller has
    it)."""
    if shape is None:
        shape = next(s for s in result.shapes if s.id == offering.id)
    codes: list[str] = []
    if lowered:
        codes.append("precision_below_checkpoint")
    fmt = get_format(str(row["weights"]))
    kv = row.get("kv_cache")
    if (fmt.quantized and str(row["weights"]) != shipped) or (kv in ("fp8", "nvfp4") and shipped_kv != kv):
        codes.append("quantization_quality_unchecked")
    wanted = compute_precision_for_weights(fmt.name)
    if (wanted == "fp8" or row.get("kv_cache") == "fp8") and not shape.gpu.fp8_hardware:
        codes.append("fp8_without_hardware")
    if wanted == "fp4" and not shape.gpu.fp4_hardware:
        codes.append("fp4_weight_only_emulation")
    if row["tp"] > 1 and tp_link(shape.gpu, row["tp"], gpus_per_server=shape.gpus_per_server).kind == "pcie":
        codes.append("tp_over_pcie")
    if row["ep"] > row["tp"] and result.task == "inference":  # attention data parallelism: the experts are split
        codes += ["attention_dp_replicas", "ep_requires_engine_support"]
    elif row["dp"] > 1 and result.task == "inference":
        codes.append("ddp_no_memory_pooling")
    if shape.gpu.vendor == "AMD":
        codes.append("rocm_cuda_only_dependency")
    return tuple(codes)


def _speed_figures_uncertain(gpu_name: str) -> bool:
    """True when a figure the speed estimate uses (BF16/FP8/FP4 peak, memory or link bandwidth) is marked '?'."""
    gpu = get_gpu(gpu_name)
    peaks = any(gpu.peaks[p].uncertain for p in ("bf16", "fp8", "fp4") if p in gpu.peaks)
    return peaks or any(f.startswith(("memory_bandwidth", "interconnect_bandwidth")) for f in gpu.uncertain_fields)


@fast_init  # one per offering and server count kept
@dataclass(frozen=True, slots=True, kw_only=True)
class _Candidate:
    """An offering and server count with its fastest usable configuration (``index``), priced: what ranking needs;
    the :class:`RecommendedOption` (the configuration's row, its warnings) is built only for those shown."""

    offering: str
    source: Offering
    shape: int  # the offering's index in the sweep's shapes
    servers: int
    index: int
    quote: ServersPrice
    speed: float  # as RecommendedOption.speed reads it from the row
    decode: float | None  # serving: total output tokens/s, priced per million tokens when shown (_per_million)
    run_hours: int | None
    run_usd: Decimal | None
    run_term: str | None  # training: the term a quote for the run asks for (hours, or the shortest priced unit)

    @property
    def total_usd(self) -> Decimal:
        return self.quote.total_usd


def _candidate(result: SweepResult, i: int, offering: Offering, shape: int, servers: int, quote: ServersPrice,
               term: Term, catalog: Catalog, now: datetime) -> _Candidate:
    """Configuration ``i`` on ``servers`` of ``offering``: its speed, and the hours and price of its run
    (training; serving's cost per million output tokens is :func:`_per_million`'s, when shown)."""
    decode = result.value("decode_tokens_per_s_total", i)
    run_hours: int | None = None
    run_usd: Decimal | None = None
    run_term_text: str | None = None
    if result.task != "inference":
        train_time_s = result.value("train_time_s", i)
        if train_time_s:
            run_hours = max(1, math.ceil(train_time_s / 3600))
            covering = run_term(offering, run_hours)  # an offering sold by the month rents the run by the month
            if covering is not None:
                try:
                    run_usd = price_quote(catalog, offering.id, servers, covering, None, now).total_usd
                    run_term_text = str(covering)
                except UnpricedOffering:
                    run_usd = None
    return _Candidate(offering=offering.id, source=offering, shape=shape, servers=servers, index=i, quote=quote,
                      speed=float(decode or result.value("train_tokens_per_s", i) or 0.0),
                      decode=decode if result.task == "inference" else None,
                      run_hours=run_hours, run_usd=run_usd, run_term=run_term_text)


def _per_million(c: _Candidate, term: Term) -> Decimal | None:
    """A serving candidate's cost per million output tokens: its price for the term over the tokens it decodes in
    it at full use, a rate kept to four significant digits (to the cent, $0.0065 read as $0.01)."""
    if c.decode is None:
        return None
    tokens_m = c.decode * term.hours * 3600 / 1e6
    return round_usd_rate(c.quote.total_usd / Decimal(f"{tokens_m:.6f}")) if tokens_m > 0 else None


_Ranked = TypeVar("_Ranked", RecommendedOption, _Candidate)


def _pareto(options: Sequence[_Ranked], cost: Callable[[_Ranked], Any] = lambda o: o.total_usd,
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


def _longer_than_the_term(candidates: Sequence[_Candidate], term: Term, max_servers: int, model: str) -> str | None:
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
            f"{max_servers}), longer than the {term} term ({term.hours} h); at the same tokens a second per GPU, "
            f"finishing within it needs about {needed} servers - plan {servers} with `anchorgpu plan {model} --task "
            f"train --gpu {fastest.source.gpu} --gpus {servers * gpus_per_server}`; the GPU-hours, and so the price, "
            "stay about the same.")


def _one_per_offering(rejected: Sequence[Rejection]) -> list[Rejection]:
    """The cheapest rejection of each offering (input sorted cheapest first), noting the other server counts."""
    counts: dict[str, list[int]] = {}
    for r in rejected:
        counts.setdefault(r.offering, []).append(r.servers)
    out: list[Rejection] = []
    seen: set[str] = set()
    for r in rejected:
        if r.offering in seen:
            continue
        seen.add(r.offering)
        others = sorted(set(counts[r.offering]) - {r.servers})
        if others:
            r = Rejection(offering=r.offering, servers=r.servers, total_usd=r.total_usd,
                          reason=f"{r.reason} (also rejected with {', '.join(map(str, others))} servers)")
        out.append(r)
    return out


def recommend(
    model: ModelSpec,
    spec: SweepSpec,
    catalog: Catalog,
    term: Term | str,
    now: datetime,
    *,
    max_usd: Decimal | None = None,
    min_tokens_per_s_per_user: float | None = None,
    top: int = 10,
    max_servers: int = 4,
    offerings: Sequence[Offering] | None = None,
    progress: Any = None,
    lower_precision: bool = False,
) -> Recommendation:
    """Cheapest offerings that fit ``spec`` for ``term``, with speed, cost per output token or per run,
    the cost/speed Pareto front and why cheaper options were rejected.

    Precision is the plan's unless lower ones are listed in ``spec`` or allowed (``lower_precision``); see
    :func:`precision_choice`. Each row below the plan's precision carries ``lower_precision``."""
    the_term = quotable_term(term)  # priced as `quote` prices it: no longer than it quotes
    if top < 1:
        raise InvalidWorkload(f"top={top}: at least one result")
    if max_usd is not None and max_usd <= 0:
        raise InvalidWorkload(f"max-usd={max_usd}: must be positive")
    # the workload's own bounds first, as plan() and the sweep check them: the per-GPU eligibility pass below reads
    # gpu_memory_utilization too, and a value past 1 (or NaN) came back from it as every offering unable to start vLLM
    validate_workload(spec.workload)
    # a format listed twice is swept once (POST /v1/recommend already dropped repeats; the CLI's list doubled the grid)
    spec = replace(spec, weights=tuple(dict.fromkeys(spec.weights)), kv_caches=tuple(dict.fromkeys(spec.kv_caches)))
    for kv in spec.kv_caches:  # a training sweep sizes no KV cache: one asked for would be silently dropped
        check_kv_cache_task(kv, spec.workload.task)
    chosen = tuple(offerings if offerings is not None else catalog.offerings)
    chosen, unable = able_to_run(chosen, spec.workload, catalog, the_term, now, spec.kv_caches, model)
    shapes = shapes_from_catalog(chosen, max_servers=max_servers)
    choice = precision_choice(model, spec, lower_precision=lower_precision)
    kvs = choice.kv_caches
    engine = spec.workload.engine
    if choice.kv_per_gpu:  # the checkpoint's KV cache where the engine runs it on the GPU, else fp8/bf16 (as plan)
        defaults = {default_kv_cache(choice.reference_kv, sh.gpu, engine, model) for sh in shapes}
        kvs = tuple(k for k in kvs if k in defaults)
    spec = replace(spec, weights=choice.weights, kv_caches=kvs)
    result = sweep(model, shapes, spec, progress=progress, flatten=False)  # reads a few columns and rows
    c = result.columns
    if result.task == "inference":  # a replica runs at most its engine's max_num_seqs at once; past it users queue
        caps = np.array([engine_cap(spec.workload, sh.gpu) for sh in shapes], dtype=np.int64)
        # on the grid's axes (per layout and concurrency), then with the fit over the whole grid in one pass
        held = c.compact("concurrency") <= c.compact("dp") * caps[c.compact("shape")]
        usable = c.widen(np.logical_and(c.compact("fits"), held))
        if choice.kv_per_gpu and len(result.kv_caches) > 1:
            default = np.array([result.kv_caches.index(default_kv_cache(choice.reference_kv, sh.gpu, engine, model))
                                for sh in shapes])[c.compact("shape")]
            usable &= c.widen(c.compact("kv_cache") == default)
        if "nvfp4" in result.kv_caches:  # an NVFP4 KV cache only where the engine runs it on the GPU (plan refuses it)
            nvfp4 = np.array([k == "nvfp4" for k in result.kv_caches])[c.compact("kv_cache")]
            nvfp4_gpu = np.array([kv_cache_runs_on("nvfp4", sh.gpu, engine, model)
                                  for sh in shapes])[c.compact("shape")]
            usable &= c.widen(~nvfp4 | nvfp4_gpu)
    else:  # and splits the stated global batch: a micro-batch per data-parallel rank at least, as plan() requires
        usable = np.asarray(c["fits"], dtype=bool) & np.asarray(c["splits_batch"], dtype=bool)
    if min_tokens_per_s_per_user is not None and result.task == "inference":
        usable = usable & (np.nan_to_num(c["decode_tokens_per_s_per_user"]) >= min_tokens_per_s_per_user)
    best = best_per_group(result, usable)
    misses = closest_miss(result, skip=best)  # only the groups with no configuration kept are read
    seq = default_seq_tokens(spec.workload, model.max_context_tokens)  # a training sweep's sequence, as it sizes it
    training = result.task != "inference"
    candidates: list[_Candidate] = []
    rejected: list[Rejection] = list(unable)
    for s, offering in enumerate(chosen):
        try:
            quotes = servers_prices(catalog, offering.id, range(1, max_servers + 1), the_term, now)
        except UnpricedOffering as exc:
            rejected += [Rejection(offering=offering.id, servers=servers, total_usd=None,
                                   reason=f"unpriced for this term: {exc.message}")
                         for servers in range(1, max_servers + 1) if (s, servers) in best or servers == 1]
            continue
        for servers, quote in enumerate(quotes, start=1):
            key = (s, servers)
            if key not in best:
                miss = misses.get(key)
                if miss is not None:
                    row = result.row(miss)
                    cap = None if training else engine_cap(spec.workload, get_gpu(row["gpu"]))
                    rejected.append(Rejection(offering=offering.id, servers=servers, total_usd=quote.total_usd,
                                              reason=miss_reason(row, min_tokens_per_s_per_user, training, cap,
                                                                 batch_tokens=spec.global_batch_tokens,
                                                                 seq_tokens=seq if training else None)))
                continue
            if max_usd is not None and quote.total_usd > max_usd:
                rejected.append(Rejection(offering=offering.id, servers=servers, total_usd=quote.total_usd,
                                          reason=f"over the budget: {quote.total_usd} USD > {max_usd} USD"))
                continue
            candidates.append(_candidate(result, best[key], offering, s, servers, quote, the_term, catalog, now))

    # a training run with a token count is ranked by the price of the whole run; one whose run has no price comes
    # after every priced run (its term's price is not the run's)
    candidates.sort(key=lambda o: (training and o.run_hours is not None and o.run_usd is None,
                                   o.run_usd if (training and o.run_usd is not None) else o.total_usd, -o.speed,
                                   o.offering, o.servers))
    built: dict[int, RecommendedOption] = {}  # an option is built once, when shown (in the results or the front)

    def option(c: _Candidate) -> RecommendedOption:
        if id(c) not in built:
            row = result.row(c.index)
            shape = result.shapes[c.shape]
            # the roofline beside each figure, as plan gives it
            row.update(row_ceilings(model, spec, result, row, shape=shape))
            is_lower = lowered(model, choice, row)
            built[id(c)] = RecommendedOption(
                offering=c.offering, gpu=c.source.gpu, kind=c.source.kind, region=c.quote.region,
                servers=c.servers, gpus=c.quote.gpus, config=row, total_usd=c.total_usd,
                per_gpu_hour_usd=c.quote.per_gpu_hour_usd,
                effective_per_gpu_hour_usd=c.quote.effective_per_gpu_hour_usd,
                usd_per_million_output_tokens=_per_million(c, the_term), run_hours=c.run_hours, run_usd=c.run_usd,
                run_term=c.run_term,
                codes=_codes(result, row, c.source, shipped=choice.reference_weights, lowered=is_lower,
                             shipped_kv=choice.reference_kv, shape=shape),
                lower_precision=is_lower)
        return built[id(c)]

    shown = [option(c) for c in candidates[:top]]
    runs = [c for c in candidates if c.run_usd is not None] if training else []
    front = tuple(option(c) for c in (_pareto(runs, cost=lambda c: c.run_usd) if runs else _pareto(candidates)))
    cheapest = candidates[0].total_usd if candidates else None
    rejected.sort(key=lambda r: (r.total_usd is None, r.total_usd or Decimal(0), r.offering, r.servers))
    shown_rejected = _one_per_offering(
        [r for r in rejected if r.total_usd is None or cheapest is None or r.total_usd <= cheapest])
    w = spec.workload
    workload = {
        # a training sweep serves no sequence and keeps no KV cache: its sequence is the one it trained on (given or
        # the default, as plan states it), not the model's window that was shown as its context
        "task": result.task, "context_tokens": result.context_tokens if not training else None,
        "concurrency": w.concurrency, "prompt_tokens": result.prompt_tokens if not training else None,
        "output_tokens": result.output_tokens if not training else None,
        "seq_tokens": seq if training else None, "train_tokens": spec.train_tokens,
        "global_batch_tokens": spec.global_batch_tokens if training else None,
        "train_precision": w.train_precision if training else None,
        "train_stack": w.train_stack if training else None, "engine": w.engine if not training else None,
        "weights": list(result.weights), "kv_caches": list(result.kv_caches) if not training else [],
        "mfu": spec.efficiencies.mfu, "mbu": spec.efficiencies.mbu,
    }
    if result.encoder_input_tokens:  # the decoder's own prompt, the encoder's input beside it (as plan's performance)
        workload["prompt_tokens"] = result.prompt_tokens - result.encoder_prefill_equivalent_tokens
        workload["encoder_input_tokens"] = result.encoder_input_tokens
        workload["encoder_prefill_equivalent_tokens"] = result.encoder_prefill_equivalent_tokens
    assumptions = [choice.assumption, *result.assumptions]
    assumptions.append(
        f"Prices are list prices for a {the_term} term ({the_term.hours} h), whole servers, no options, priced "
        "exactly as `anchorgpu quote`; 'per GPU-hour' is the 730-h comparison rate.")
    uncertain = sorted({o.gpu for o in shown if _speed_figures_uncertain(o.gpu)})
    if uncertain:
        assumptions.append(f"Speed figures of {', '.join(uncertain)} rest partly on secondary or conflicting "
                           "sources (marked '?' in the GPU table): treat their tokens/s as rougher.")
    if not training:
        assumptions.append("Cost per million output tokens assumes the servers decode at the estimated total "
                           "tokens/s for the whole term.")
        wide_ep = any(o.config["ep"] > o.config["tp"] for o in (*shown, *front))  # attention DP shown
        assumptions.extend(serving_caveats(calibrated(spec.efficiencies).caveats, moe=model.moe is not None,
                                           engine=spec.workload.engine, wide_ep=wide_ep))
    else:
        assumptions.append("A training run costs the whole hours it needs, billed by the quote rules "
                           "(a longer unit when cheaper).")
        long_run = _longer_than_the_term(candidates, the_term, max_servers, model.name)
        if long_run:
            assumptions.append(long_run)
        assumptions.extend(training_caveats(calibrated(spec.efficiencies).caveats, moe=model.moe is not None))
    return Recommendation(
        model=model.name, task=result.task, term=the_term, workload=workload, evaluated=result.evaluated,
        results=tuple(shown), pareto=front, rejected=tuple(shown_rejected[:10]),
        assumptions=tuple(assumptions), warnings=result.warnings, moe=model.moe is not None,
        efficiencies=spec.efficiencies,
    )
