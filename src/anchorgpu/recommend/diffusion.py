"""Recommendations for diffusion pipelines: which offerings hold the pipeline, cheapest first.

A diffusion pipeline is planned as replicas (one per GPU, no tensor or pipeline split), so an offering fits
when one of its GPUs holds the pipeline for the batch asked; every GPU of the server then runs a replica.
The planner estimates no speed for diffusion, so the ranking is by the total for the term alone, and the
answer says so. Prices come from :func:`anchorgpu.quotes.price_quote`, as for language models.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

from anchorgpu.architectures.spec import DiffusionPipelineSpec
from anchorgpu.catalog import Catalog, Offering
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.quotes import UnpricedOffering, price_quote
from anchorgpu.recommend.candidates import over_budget_reason
from anchorgpu.recommend.records import Recommendation, RecommendedOption, Rejection
from anchorgpu.units import Term, fmt_bytes, quotable_term

__all__ = ["recommend_diffusion"]


def recommend_diffusion(
    pipe: DiffusionPipelineSpec,
    workload: Workload,
    catalog: Catalog,
    term: Term | str,
    now: datetime,
    *,
    weights: str | None = None,
    max_usd: Decimal | None = None,
    top: int = 10,
    offerings: Sequence[Offering] | None = None,
) -> Recommendation:
    """One server of each offering whose GPU holds ``pipe`` for ``workload`` (task diffusion), cheapest first."""
    the_term = quotable_term(term)  # priced as `quote` prices it: no longer than it quotes
    if top < 1:
        raise InvalidWorkload(said("top={top}: at least one result", top=top))
    chosen = tuple(offerings if offerings is not None else catalog.offerings)
    precision = PrecisionPlan(weights=weights)
    probe = plan(pipe, workload, precision=precision, layout=Layout(gpus=1), suggest=False)  # one-line errors
    options: list[RecommendedOption] = []
    rejected: list[Rejection] = []
    by_gpu: dict[str, Any] = {}
    for offering in chosen:
        if offering.gpu not in by_gpu:
            by_gpu[offering.gpu] = plan(pipe, workload, precision=precision, layout=Layout(gpus=1),
                                        gpu=get_gpu(offering.gpu), suggest=False)
        result = by_gpu[offering.gpu]
        try:
            quote = price_quote(catalog, offering.id, 1, the_term, None, now)
        except UnpricedOffering as exc:
            rejected.append(Rejection(offering=offering.id, servers=1, total_usd=None,
                                      reason=said("unpriced for this term: {exc_message}", exc_message=exc.message)))
            continue
        per_gpu = result.per_gpu
        if not result.fits:
            rejected.append(Rejection(offering=offering.id, servers=1, total_usd=quote.total_usd, reason=(
                said("does not fit: one replica needs {total_bytes} per GPU of {budget_bytes} usable",
                     total_bytes=fmt_bytes(per_gpu.total_bytes), budget_bytes=fmt_bytes(result.budget_bytes)))))
            continue
        if max_usd is not None and quote.total_usd > max_usd:
            rejected.append(Rejection(offering=offering.id, servers=1, total_usd=quote.total_usd,
                                      reason=over_budget_reason(quote.total_usd, max_usd)))
            continue
        config = {
            "tp": 1, "pp": 1, "dp": offering.gpus, "zero": 0, "weights": result.precision.weights,
            "kv_cache": None, "concurrency": result.workload.images,
            "per_gpu_total_bytes": per_gpu.total_bytes, "budget_bytes": result.budget_bytes, "fits": True,
            "weights_bytes": per_gpu.weights_bytes, "kv_cache_bytes": 0,
            "activations_bytes": per_gpu.activations_bytes,
            "other_bytes": per_gpu.total_bytes - per_gpu.weights_bytes - per_gpu.activations_bytes,
        }
        options.append(RecommendedOption(
            offering=offering.id, gpu=offering.gpu, kind=offering.kind, region=quote.region, servers=1,
            gpus=quote.gpus, config=config, total_usd=quote.total_usd, per_gpu_hour_usd=quote.per_gpu_hour_usd,
            effective_per_gpu_hour_usd=quote.effective_per_gpu_hour_usd,
            codes=tuple(dict.fromkeys(w.code for w in result.warnings if w.code != "does_not_fit"))))
    options.sort(key=lambda o: (o.total_usd, o.offering))
    cheapest = options[0].total_usd if options else None
    rejected.sort(key=lambda r: (r.total_usd is None, r.total_usd or Decimal(0), r.offering))
    shown = [r for r in rejected if r.total_usd is None or cheapest is None or r.total_usd <= cheapest]
    assumptions = [
        *(a for a in probe.assumptions if not a.startswith("Layout not given")),
        "Diffusion: one pipeline replica per GPU (no tensor or pipeline split); one server of each offering, "
        "every GPU of it running a replica.",
        "Speed is not estimated for diffusion pipelines, so offerings are ranked by the total for the term alone.",
        f"Prices are list prices for a {the_term} term ({the_term.hours} h), whole servers, no options, priced "
        "exactly as `anchorgpu quote`; 'per GPU-hour' is the 730-h comparison rate.",
    ]
    w = probe.workload
    return Recommendation(
        model=pipe.name, task="diffusion", term=the_term,
        workload={"task": "diffusion", "images": w.images, "resolution": list(w.resolution) if w.resolution else None,
                  "vae_tiling": w.vae_tiling, "weights": [probe.precision.weights]},
        evaluated=len(chosen), results=tuple(options[:top]), pareto=(), rejected=tuple(shown[:10]),
        assumptions=tuple(dict.fromkeys(assumptions)),
        warnings=tuple((x.code, x.message) for x in probe.warnings if x.code not in ("does_not_fit", "no_gpu_given")),
    )
