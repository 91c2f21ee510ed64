"""Turn a :class:`~anchorgpu.api.schemas.PlanRequest` into the planner's frozen inputs and run it.

Shared by ``POST /v1/plan``, ``POST /v1/recommend`` and the planner page, so the three take the same
options as ``anchorgpu plan`` and give the same answers.
"""

from __future__ import annotations

from typing import Any

from anchorgpu.api.models_ref import load_public_model
from anchorgpu.api.schemas import PlanRequest

__all__ = ["plan_inputs", "run_plan"]


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
