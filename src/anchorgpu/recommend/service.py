"""Recommend offerings: join the planner's sweep with the catalog's prices for a term.

The planner sweeps configurations without prices (:mod:`anchorgpu.planner.sweep`); this service turns
each catalog offering into a hardware shape (:mod:`~anchorgpu.recommend.shapes`), keeps the fastest configuration that
fits per offering and server count (:mod:`~anchorgpu.recommend.candidates`), prices it as
:func:`anchorgpu.quotes.price_quote` does (:func:`~anchorgpu.quotes.pricing.servers_prices`, held equal to it by a
test, so a recommendation and a quote for the same servers and term always agree), and ranks by the total for the
term. It also finds the Pareto front of cost against speed and says why the cheaper options were rejected. ``now`` is
passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.catalog import Catalog, Offering
from anchorgpu.errors import InvalidWorkload, said, said_joined
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.engine_choice import engine_weights_refusal
from anchorgpu.planner.formats import get_format
from anchorgpu.planner.headroom import fit_headroom_warnings
from anchorgpu.planner.inputs import RECOMPUTES, default_seq_tokens
from anchorgpu.planner.speed.caveats import serving_caveats, training_caveats
from anchorgpu.planner.speed.links import compute_precision_for_weights, tp_link
from anchorgpu.planner.speed.overrides import calibrated
from anchorgpu.planner.speed.peaks import fp4_units_take
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import HardwareShape, SweepResult, SweepSpec
from anchorgpu.planner.validate import check_kv_cache_task, default_kv_cache, kv_cache_runs_on
from anchorgpu.planner.workload_checks import validate_workload
from anchorgpu.quotes import UnpricedOffering
from anchorgpu.quotes.pricing import servers_prices
from anchorgpu.recommend.candidates import (
    Candidate,
    candidate,
    longer_than_the_term,
    one_per_offering,
    over_budget,
    pareto,
    per_million,
    row_candidate,
)
from anchorgpu.recommend.ceilings import row_ceilings
from anchorgpu.recommend.eligibility import able_to_run, engine_cap, miss_reason
from anchorgpu.recommend.interactive import slow_users_line
from anchorgpu.recommend.limits import LimitsApplied, apply_limits, limits_line
from anchorgpu.recommend.offload import offload_line, offloaded_rows
from anchorgpu.recommend.precision import lowered, precision_choice
from anchorgpu.recommend.records import Recommendation, RecommendedOption, Rejection
from anchorgpu.recommend.render import recommendation_to_json
from anchorgpu.recommend.selection import best_per_group, best_serving_per_group, closest_miss
from anchorgpu.recommend.shapes import (
    crosses_network,
    multi_server_network_line,
    network_gbit_per_s_per_gpu,
    public_network_only,
    shapes_from_catalog,
)
from anchorgpu.recommend.step_figures import step_figures_of
from anchorgpu.units import Term, fmt_bytes, quotable_term

__all__ = [
    "Recommendation",
    "RecommendedOption",
    "Rejection",
    "recommend",
    "recommendation_to_json",
]


def _codes(result: SweepResult, row: dict[str, Any], offering: Offering, *, shipped: str | None = None,
           lowered: bool = False, shipped_kv: str = "bf16", shape: HardwareShape | None = None,
           spec: SweepSpec | None = None) -> tuple[str, ...]:
    """The warning codes of a row on ``offering`` (``shape``: its hardware shape in ``result``, where the caller has
    it; ``spec``: the sweep's, for a training row's headroom warnings, as plan gives them for its layout)."""
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
    if wanted == "fp4" and not fp4_units_take(shape.gpu, fmt.name):  # no FP4 math, or not for this format's
        codes.append("fp4_weight_only_emulation")
    if row["tp"] > 1 and tp_link(shape.gpu, row["tp"], gpus_per_server=shape.gpus_per_server).kind == "pcie":
        codes.append("tp_over_pcie")
    if row["ep"] > row["tp"] and result.task == "inference":  # attention data parallelism: the experts are split
        codes += ["attention_dp_replicas", "ep_requires_engine_support"]
    elif row["ep"] > 1 and result.task == "inference":  # EP inside TP: the experts whole over each TP group
        codes.append("ep_requires_engine_support")
        if row["dp"] > 1:
            codes.append("ddp_no_memory_pooling")
    elif row["dp"] > 1 and result.task == "inference":
        codes.append("ddp_no_memory_pooling")
    if result.task != "inference" and public_network_only(offering) and crosses_network(offering, int(row["servers"])):
        codes.append("training_over_public_network")  # several VMs, not one server: plan --gpus N is that
    if shape.gpu.vendor == "AMD":
        codes.append("rocm_cuda_only_dependency")
    if result.task != "inference" and spec is not None:
        codes += _training_codes(result.task, row, spec)
    return tuple(codes)


def _training_codes(task: str, row: dict[str, Any], spec: SweepSpec) -> list[str]:
    """A training row's warnings as plan gives them for the same layout: the headroom's (an eager stack's
    activations, else a headroom under the measured error: :func:`fit_headroom_warnings`, plan's own rule) and the
    offload's (``offload_slows_training``, a row planned with its optimizer state in host memory)."""
    total = int(row["per_gpu_total_bytes"])
    recompute = RECOMPUTES[int(row["recompute"])] if row.get("recompute") is not None else "none"
    found = fit_headroom_warnings(total, int(row["budget_bytes"]) - total, task=task,
                                  activations_bytes=int(row["activations_bytes"]), recompute=recompute,
                                  train_stack=spec.workload.train_stack,
                                  fragmentation_fraction=spec.overheads.fragmentation_fraction)
    codes = [w.code for w in found]
    if row.get("offload", "none") != "none":
        codes.append("offload_slows_training")
    return codes


def _uneven_replicas_line(shown: Sequence[RecommendedOption]) -> str | None:
    """Where a shown serving row splits its users unevenly over engine replicas, what its speed assumes: the per-user
    figures (tokens/s a user, TTFT) are the busiest replica's (its ``ceil(users / replicas)`` sequences), and the total
    adds each replica's own rate, as ``plan --concurrency N`` does; None where every row splits them evenly.

    >>> from types import SimpleNamespace as R
    >>> print(_uneven_replicas_line([R(config={"concurrency": 64, "dp": 3, "ep": 1, "tp": 1})]))
    Users split unevenly over replicas (#1: 64 over 3): tok/s/user and TTFT are the busiest replica's (22 sequences); tok/s adds each replica's own rate, the lighter ones' at their own pace, as plan --concurrency N does for the same layout.
    >>> _uneven_replicas_line([R(config={"concurrency": 64, "dp": 4, "ep": 1, "tp": 1})]) is None
    True
    """
    rows = [(i, o.config) for i, o in enumerate(shown, 1)
            if o.config["dp"] > 1 and o.config["ep"] <= o.config["tp"] and o.config["concurrency"] % o.config["dp"]]
    if not rows:
        return None
    parts = [said("#{row}: {users:,} over {replicas}", row=i, users=c["concurrency"], replicas=c["dp"]) for i, c in rows]
    busiest = sorted({-(-c["concurrency"] // c["dp"]) for _, c in rows})
    return said("Users split unevenly over replicas ({parts}): tok/s/user and TTFT are the busiest replica's ({busiest} "
                "sequences); tok/s adds each replica's own rate, the lighter ones' at their own pace, as plan "
                "--concurrency N does for the same layout.", parts=said_joined(parts),
                busiest=", ".join(f"{b:,}" for b in busiest))


def _speed_figures_uncertain(gpu_name: str) -> bool:
    """True when a figure the speed estimate uses (BF16/FP8/FP4 peak, memory or link bandwidth) is marked '?'."""
    gpu = get_gpu(gpu_name)
    peaks = any(gpu.peaks[p].uncertain for p in ("bf16", "fp8", "fp4") if p in gpu.peaks)
    return peaks or any(f.startswith(("memory_bandwidth", "interconnect_bandwidth")) for f in gpu.uncertain_fields)


def recommend(
    model: ModelSpec,
    spec: SweepSpec,
    catalog: Catalog,
    term: Term | str,
    now: datetime,
    *,
    max_usd: Decimal | None = None,
    min_tokens_per_s_per_user: float | None = None,
    max_ttft_s: float | None = None,
    top: int = 10,
    max_servers: int = 4,
    offerings: Sequence[Offering] | None = None,
    progress: Any = None,
    lower_precision: bool = False,
) -> Recommendation:
    """Cheapest offerings that fit ``spec`` for ``term``, with speed, cost per output token or per run,
    the cost/speed Pareto front and why cheaper options were rejected.

    Precision is the plan's unless lower ones are listed in ``spec`` or allowed (``lower_precision``); see
    :func:`precision_choice`. Each row below the plan's precision carries ``lower_precision``. Serving only:
    ``min_tokens_per_s_per_user`` and ``max_ttft_s`` keep the configurations whose predicted figures meet them
    (:mod:`~anchorgpu.recommend.limits`)."""
    the_term = quotable_term(term)  # priced as `quote` prices it: no longer than it quotes
    if top < 1:
        raise InvalidWorkload(said("top={top}: at least one result", top=top))
    if max_usd is not None and max_usd <= 0:
        raise InvalidWorkload(said("max-usd={max_usd}: must be positive", max_usd=max_usd))
    # the workload's own bounds first, as plan() and the sweep check them: the per-GPU eligibility pass below reads
    # gpu_memory_utilization too, and a value past 1 (or NaN) came back from it as every offering unable to start vLLM
    validate_workload(spec.workload)
    # a format listed twice is swept once (POST /v1/recommend already dropped repeats; the CLI's list doubled the grid)
    spec = replace(spec, weights=tuple(dict.fromkeys(spec.weights)), kv_caches=tuple(dict.fromkeys(spec.kv_caches)))
    for kv in spec.kv_caches:  # a training sweep sizes no KV cache: one asked for would be silently dropped
        check_kv_cache_task(kv, spec.workload.task)
    chosen = tuple(offerings if offerings is not None else catalog.offerings)
    choice = precision_choice(model, spec, lower_precision=lower_precision)
    chosen, unable = able_to_run(chosen, spec.workload, catalog, the_term, now, spec.kv_caches, model, choice.weights)
    shapes = shapes_from_catalog(chosen, max_servers=max_servers)
    kvs = choice.kv_caches
    engine = spec.workload.engine
    if choice.kv_per_gpu:  # the checkpoint's KV cache where the engine runs it on the GPU, else fp8/bf16 (as plan)
        defaults = {default_kv_cache(choice.reference_kv, sh.gpu, engine, model) for sh in shapes}
        kvs = tuple(k for k in kvs if k in defaults)
    serving = spec.workload.task == "inference"
    spec = replace(spec, weights=choice.weights, kv_caches=kvs,
                   min_tokens_per_s_per_user=min_tokens_per_s_per_user if serving else None,
                   max_ttft_s=max_ttft_s if serving else None)
    # reads a few columns and rows, and no speed figure of a configuration that does not fit (closest_miss and
    # miss_reason read such a row's memory only)
    result = sweep(model, shapes, spec, progress=progress, flatten=False, fitting_only=True)
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
        moe = model.moe is not None  # and NVFP4 experts on AMD GPUs (engine_weights_refusal)
        if len(result.weights) > 1 and (engine == "trtllm" or (moe and "nvfp4" in result.weights)):
            # a format the engine has no kernels for on the GPU
            loads = np.array([[engine_weights_refusal(engine, f, get_format(f).native, sh.gpu, moe=moe) is None
                               for f in result.weights] for sh in shapes])
            usable &= c.widen(loads[c.compact("shape"), c.compact("weights")])
    else:  # and splits the stated global batch: a micro-batch per data-parallel rank at least, as plan() requires
        usable = np.asarray(c["fits"], dtype=bool) & np.asarray(c["splits_batch"], dtype=bool)
    applied = LimitsApplied()
    training_sweep = result.task != "inference"
    if result.task == "inference":
        usable, applied = apply_limits(result, usable, spec.min_tokens_per_s_per_user, spec.max_ttft_s)
    # serving: stages on NVLink/xGMI servers only where TP alone holds nothing, as plan's chooser; a training group's
    # layout by plan's chooser's rule: its first that fits, replaced only beyond the training layout margin or by a
    # simpler split (planner.speed.chooser_margin), the launch held as plan holds it
    best = (best_serving_per_group(result, usable) if not training_sweep else
            best_per_group(result, usable, margin=calibrated(spec.efficiencies).training_layout_margin,
                           reach_held=spec.workload.train_stack == "pytorch"))
    misses = closest_miss(result, skip=best)  # only the groups with no configuration kept are read
    # training: a group no layout without offload fits, planned as plan's first "What would fit" offers it (the
    # optimizer state in host memory) where plan can state it
    offloaded = offloaded_rows(model, spec, result, chosen, best) if training_sweep else {}
    seq = default_seq_tokens(spec.workload, model.max_context_tokens)  # a training sweep's sequence, as it sizes it
    training = result.task != "inference"
    candidates: list[Candidate] = []
    rejected: list[Rejection] = list(unable)
    for s, offering in enumerate(chosen):
        try:
            quotes = servers_prices(catalog, offering.id, range(1, max_servers + 1), the_term, now)
        except UnpricedOffering as exc:
            rejected += [Rejection(offering=offering.id, servers=servers, total_usd=None,
                                   reason=said("unpriced for this term: {exc_message}", exc_message=exc.message))
                         for servers in range(1, max_servers + 1) if (s, servers) in best or servers == 1]
            continue
        for servers, quote in enumerate(quotes, start=1):
            key = (s, servers)
            found = offloaded.get(key)
            if found is not None and found.row is not None:
                kept = row_candidate(found.row, offering, s, servers, quote, catalog, now)
                if max_usd is not None and kept.budget_usd > max_usd:
                    rejected.append(over_budget(kept, max_usd))
                    continue
                candidates.append(kept)
                continue
            if key not in best:
                miss = misses.get(key)
                if miss is not None:
                    row = result.row(miss)
                    cap = None if training else engine_cap(spec.workload, get_gpu(row["gpu"]))
                    reason = miss_reason(row, spec.min_tokens_per_s_per_user, training, cap,
                                         batch_tokens=spec.global_batch_tokens, seq_tokens=seq if training else None,
                                         max_ttft_s=spec.max_ttft_s)
                    if found is not None and found.short:  # the offload that would fit, had its servers the RAM
                        reason = said("{first}; {second}", first=reason, second=found.short)
                    rejected.append(Rejection(offering=offering.id, servers=servers, total_usd=quote.total_usd,
                                              reason=reason))
                continue
            kept = candidate(result, best[key], offering, s, servers, quote, the_term, catalog, now)
            if max_usd is not None and kept.budget_usd > max_usd:
                rejected.append(over_budget(kept, max_usd))
                continue
            candidates.append(kept)

    # a training run with a token count is ranked by the price of the whole run; one whose run has no price comes
    # after every priced run (its term's price is not the run's)
    candidates.sort(key=lambda o: (training and o.run_hours is not None and o.run_usd is None,
                                   o.run_usd if (training and o.run_usd is not None) else o.total_usd, -o.speed,
                                   o.offering, o.servers))
    built: dict[int, RecommendedOption] = {}  # an option is built once, when shown (in the results or the front)

    def option(c: Candidate) -> RecommendedOption:
        if id(c) not in built:
            row = dict(c.row) if c.row is not None else result.row(c.index)
            shape = result.shapes[c.shape]
            # the roofline beside each figure, as plan gives it
            row.update(row_ceilings(model, spec, result, row, shape=shape))
            is_lower = lowered(model, choice, row)
            built[id(c)] = RecommendedOption(
                offering=c.offering, gpu=c.source.gpu, kind=c.source.kind, region=c.quote.region,
                servers=c.servers, gpus=c.quote.gpus, config=row, total_usd=c.total_usd,
                per_gpu_hour_usd=c.quote.per_gpu_hour_usd,
                effective_per_gpu_hour_usd=c.quote.effective_per_gpu_hour_usd,
                usd_per_million_output_tokens=per_million(c, the_term), run_hours=c.run_hours, run_usd=c.run_usd,
                run_term=c.run_term, run_refused=c.run_refused,
                network_gbit_per_s_per_gpu=(network_gbit_per_s_per_gpu(c.source)
                                            if training and crosses_network(c.source, c.servers) else None),
                codes=_codes(result, row, c.source, shipped=choice.reference_weights, lowered=is_lower,
                             shipped_kv=choice.reference_kv, shape=shape, spec=spec),
                lower_precision=is_lower)
        return built[id(c)]

    shown = [option(c) for c in candidates[:top]]
    runs = [c for c in candidates if c.run_usd is not None] if training else []
    front = tuple(option(c) for c in (pareto(runs, cost=lambda c: c.run_usd) if runs else pareto(candidates)))
    cheapest = candidates[0].total_usd if candidates else None
    rejected.sort(key=lambda r: (r.total_usd is None, r.total_usd or Decimal(0), r.offering, r.servers))
    shown_rejected = one_per_offering(
        [r for r in rejected if r.total_usd is None or cheapest is None or r.total_usd <= cheapest])
    w = spec.workload
    # no length given: more than one sequence is sized at the request, one alone at the model's window (as plan)
    contexts = dict(result.concurrency_contexts)
    many = max(contexts) if contexts else None
    workload = {
        # a training sweep serves no sequence and keeps no KV cache: its sequence is the one it trained on (given or
        # the default, as plan states it), not the model's window that was shown as its context
        "task": result.task,
        "context_tokens": None if training else result.context_tokens if many is None else contexts[many],
        "concurrency": w.concurrency, "prompt_tokens": result.prompt_tokens if not training else None,
        "output_tokens": result.output_tokens if not training else None,
        "seq_tokens": seq if training else None, "train_tokens": spec.train_tokens,
        "global_batch_tokens": spec.global_batch_tokens if training else None,
        "train_precision": w.train_precision if training else None,
        "train_stack": w.train_stack if training else None, "engine": w.engine if not training else None,
        "weights": list(result.weights), "kv_caches": list(result.kv_caches) if not training else [],
        "mfu": spec.efficiencies.mfu, "mbu": spec.efficiencies.mbu,
    }
    if many is not None and contexts.get(1, contexts[many]) != contexts[many]:
        workload["one_sequence_context_tokens"] = contexts[1]
    if result.encoder_input_tokens or result.encoder_prefill_equivalent_tokens:
        # the prompt the sequence holds; beside it the encoder's input (an encoder-decoder, cross-attention images)
        # and the encoder's or vision tower's work as prompt tokens of the same cost (as plan's performance)
        workload["prompt_tokens"] = result.prompt_tokens - result.encoder_prefill_equivalent_tokens
        if result.encoder_input_tokens:
            workload["encoder_input_tokens"] = result.encoder_input_tokens
        workload["encoder_prefill_equivalent_tokens"] = result.encoder_prefill_equivalent_tokens
    assumptions = [choice.assumption, *result.assumptions]
    assumptions.append(said(
        "Prices are list prices for a {term} term ({hours} h), whole servers, no options, priced exactly as "
        "`anchorgpu quote`; 'per GPU-hour' is the 730-h comparison rate.", term=str(the_term), hours=the_term.hours))
    uncertain = sorted({o.gpu for o in shown if _speed_figures_uncertain(o.gpu)})
    if uncertain:
        assumptions.append(said("Speed figures of {gpus} rest partly on secondary or conflicting sources (marked '?' in "
                                "the GPU table): treat their tokens/s as rougher.", gpus=", ".join(uncertain)))
    if not training:
        assumptions.append(said("Cost per million output tokens assumes the servers decode at the estimated total "
                                "tokens/s for the whole term."))
        wide_ep = any(o.config["ep"] > o.config["tp"] for o in (*shown, *front))  # attention DP shown
        uneven = _uneven_replicas_line(shown)
        if uneven:
            assumptions.append(uneven)
        # the ladder chose each row for total tokens/s; a one-token answer streams nothing to read at a latency target
        slow = (slow_users_line([o.config for o in shown])
                if spec.workload.concurrency is None and min_tokens_per_s_per_user is None
                and result.output_tokens != 1 else None)
        if slow:
            assumptions.append(slow)
        limited = limits_line(applied)
        if limited:
            assumptions.append(limited)
        assumptions.extend(serving_caveats(calibrated(spec.efficiencies).caveats, moe=model.moe is not None,
                                           engine=spec.workload.engine, wide_ep=wide_ep))
    else:
        assumptions.append(said("A training run costs the whole hours it needs, billed by the quote rules "
                                "(a longer unit when cheaper)."))
        network = multi_server_network_line(((o.offering, o.servers) for o in (*shown, *front)), catalog)
        if network:
            assumptions.append(network)
        marked = [(i, o.config, fmt_bytes(catalog.offering(o.offering).ram_bytes))
                  for i, o in enumerate(shown, 1) if o.config.get("offload", "none") != "none"]
        timed = next((offloaded[(c.shape, c.servers)].assumption for c in candidates[:top] if c.row is not None), None)
        offload = offload_line(marked, timed)
        if offload:
            assumptions.append(offload)
        long_run = longer_than_the_term(candidates, the_term, max_servers, model.name)
        if long_run:
            assumptions.append(long_run)
        assumptions.extend(training_caveats(calibrated(spec.efficiencies).caveats, moe=model.moe is not None))
    return Recommendation(
        model=model.name, task=result.task, term=the_term, workload=workload, evaluated=result.evaluated,
        results=tuple(shown), pareto=front, rejected=tuple(shown_rejected[:10]),
        assumptions=tuple(assumptions), warnings=result.warnings, moe=model.moe is not None,
        efficiencies=spec.efficiencies, limits=applied,
        step_figures=step_figures_of(model, spec, result.shapes) if training else None,
    )
