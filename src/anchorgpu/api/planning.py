"""Turn a :class:`~anchorgpu.api.schemas.PlanRequest` into the planner's frozen inputs and run it.

Shared by ``POST /v1/plan``, ``POST /v1/recommend`` and the planner page, so the three take the same
options as ``anchorgpu plan`` and give the same answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from anchorgpu.api.models_ref import load_public_model
from anchorgpu.api.schemas import PlanRequest, RecommendRequest

__all__ = ["plan_inputs", "run_plan", "run_recommend"]


def _resolution(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    width, _, height = text.partition("x")
    return int(width), int(height)


def plan_inputs(request: PlanRequest) -> tuple[Any, Any, Any]:
    """(Workload, PrecisionPlan, Layout) for the request; defaults left to the planner (it states them)."""
    from anchorgpu.planner import Layout, PrecisionPlan, Workload

    workload = Workload(
        task=request.task, context_tokens=request.context, concurrency=request.concurrency,
        allow_long_context=request.allow_long_context, gpu_memory_utilization=request.gpu_memory_utilization,
        micro_batch=request.micro_batch, seq_tokens=request.seq, recompute=request.recompute, optimizer=request.optimizer,
        lora_rank=request.lora_rank, lora_targets=tuple(dict.fromkeys(request.lora_targets)),
        resolution=_resolution(request.resolution), images=request.images, vae_tiling=request.vae_tiling,
    )
    precision = PrecisionPlan(weights=request.weights, kv_cache=request.kv_cache)
    layout = Layout(gpus=request.gpus, tp=request.tp, pp=request.pp, dp=request.dp, ep=request.ep, zero=request.zero,
                    fsdp=request.fsdp, offload=request.offload)
    return workload, precision, layout


def run_plan(request: PlanRequest, *, offline: bool) -> dict[str, Any]:
    """The plan JSON (``anchorgpu plan --json``) for the request."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import plan, plan_to_json

    model = load_public_model(request.model, offline=offline)
    gpu = get_gpu(request.gpu) if request.gpu else None
    workload, precision, layout = plan_inputs(request)
    result = plan(model, workload, precision=precision, layout=layout, gpu=gpu)
    return plan_to_json(_with_performance(result))


def _with_performance(result: Any) -> Any:
    """Attach the performance section when the performance module offers it (PERF's area)."""
    from anchorgpu.planner import performance

    attach = getattr(performance, "attach_performance", None)
    return attach(result) if callable(attach) else result


def run_recommend(request: RecommendRequest, *, offline: bool, now: datetime) -> dict[str, Any]:
    """The ``anchorgpu recommend --json`` answer for the request (catalog offerings priced for the term)."""
    from anchorgpu.architectures import ModelSpec
    from anchorgpu.catalog import find_offerings, load_catalog
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner import Workload
    from anchorgpu.planner.sweep import SweepSpec
    from anchorgpu.recommend import recommend, recommendation_to_json

    model = load_public_model(request.model, offline=offline)
    if not isinstance(model, ModelSpec):
        raise InvalidWorkload(f"{request.model} is a diffusion pipeline: recommendations cover language models; use the planner")
    catalog = load_catalog()
    offerings = find_offerings(catalog, gpu=request.gpu) if request.gpu else None
    workload = Workload(task=request.task, context_tokens=request.context, concurrency=request.concurrency,
                        micro_batch=request.micro_batch, seq_tokens=request.seq)
    spec = SweepSpec(
        workload=workload,
        weights=(request.weights,) if request.weights else (),
        kv_caches=(request.kv_cache,) if request.kv_cache else (),
        concurrencies=(request.concurrency,) if request.concurrency else (),
        output_tokens=request.output_tokens,
        train_tokens=request.train_tokens,
    )
    result = recommend(model, spec, catalog, request.term, now, max_usd=request.max_usd,
                       min_tokens_per_s_per_user=request.min_tokens_per_s_per_user, top=request.top,
                       max_servers=request.max_servers, offerings=offerings)
    return recommendation_to_json(result)
