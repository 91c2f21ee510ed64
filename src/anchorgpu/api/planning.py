"""Turn a :class:`~anchorgpu.api.schemas.PlanRequest` into the planner's frozen inputs and run it.

Shared by ``POST /v1/plan``, ``POST /v1/recommend`` and the planner page, so the three take the same
options as ``anchorgpu plan`` and give the same answers.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from anchorgpu.api.models_ref import load_public_model
from anchorgpu.api.schemas import PlanRequest, RecommendRequest
from anchorgpu.errors import said
from anchorgpu.validation import comma_list

__all__ = ["launch_json", "plan_inputs", "planned", "run_plan", "run_recommend"]


def _resolution(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    width, _, height = text.partition("x")
    return int(width), int(height)


def check_given(request: PlanRequest | RecommendRequest, model: object = None) -> None:
    """Refuse an option the request's task has no use for (:func:`~anchorgpu.planner.validate.check_task_options`):
    the request's fields default to null, so a field set is a field given. With the ``model`` loaded, a diffusion
    pipeline asked for with the default task is checked as the diffusion plan it gets."""
    from anchorgpu.planner.validate import check_task_options, planned_task
    from anchorgpu.planner.workload_checks import LORA_OPTIONS, SERVING_OPTIONS, TRAINING_OPTIONS

    fields = type(request).model_fields
    check_task_options(planned_task(request.task, model),
                       {name: getattr(request, name) for name in
                        (*TRAINING_OPTIONS, *LORA_OPTIONS, *SERVING_OPTIONS, "kv_cache") if name in fields})


def plan_inputs(request: PlanRequest) -> tuple[Any, Any, Any]:
    """(Workload, PrecisionPlan, Layout) for the request; defaults left to the planner (it states them)."""
    from anchorgpu.planner import Layout, PrecisionPlan
    from anchorgpu.planner.engine_choice import (
        check_engine_caps,
        engine_source,
        launch_reach,
        resolve_engine,
        resolve_train_stack,
    )
    from anchorgpu.planner.inputs import KV_CACHE_AUTO, workload_of

    check_given(request)
    if request.recipe is not None:  # a launch of another engine than the one given: refused before planning
        from anchorgpu.recipes import check_kind

        check_kind(request.recipe, engine=request.engine, task=request.task)
    engine = resolve_engine(request.engine, request.recipe)
    check_engine_caps(request.max_num_seqs, request.max_num_batched_tokens, engine)
    workload = workload_of(  # a field left null takes the planner's default
        task=request.task, context_tokens=request.context, concurrency=request.concurrency,
        allow_long_context=request.allow_long_context, gpu_memory_utilization=request.gpu_memory_utilization,
        engine=engine, engine_source=engine_source(request.engine, request.recipe), micro_batch=request.micro_batch, seq_tokens=request.seq, recompute=request.recompute, optimizer=request.optimizer,
        offload_activation_layers=request.offload_activation_layers,
        optimizer_state=request.optimizer_state,
        lora_rank=request.lora_rank,
        lora_targets=None if request.lora_targets is None else tuple(dict.fromkeys(request.lora_targets)),
        resolution=_resolution(request.resolution), images=request.images, vae_tiling=request.vae_tiling,
        train_precision=request.train_precision, train_stack=resolve_train_stack(request.train_stack, request.recipe, request.task),
        **launch_reach(request.recipe),
        cross_entropy=request.cross_entropy, max_num_batched_tokens=request.max_num_batched_tokens,
        max_num_seqs=request.max_num_seqs,
        global_batch_tokens=request.global_batch, prompt_tokens=request.prompt, output_tokens=request.output_tokens,
        images_per_request=request.images_per_request, image_resolution=_resolution(request.image_resolution),
        network_gbit_per_s_per_gpu=request.network_gbit_per_gpu,
    )
    precision = PrecisionPlan(weights=request.weights, kv_cache=request.kv_cache or KV_CACHE_AUTO)
    layout = Layout(gpus=request.gpus, tp=request.tp, pp=request.pp, dp=request.dp, ep=request.ep, zero=request.zero,
                    fsdp=request.fsdp, offload=request.offload, cp=request.cp, virtual_stages=request.virtual_stages,
                    tp_overlap=request.tp_overlap, ep_overlap=request.ep_overlap, pipeline_layout=request.pipeline_layout,
                    sequence_parallel=request.sequence_parallel)
    return workload, precision, layout


def overheads(request: PlanRequest) -> Any:
    """Runtime overheads with the request's overrides (the planner states them in its assumptions)."""
    import dataclasses

    from anchorgpu.planner import Overheads
    from anchorgpu.units import MIB

    ov = Overheads()
    if request.cuda_context_mib is not None:
        ov = dataclasses.replace(ov, cuda_context_bytes=request.cuda_context_mib * MIB, rocm_context_bytes=request.cuda_context_mib * MIB)
    if request.fragmentation is not None:
        ov = dataclasses.replace(ov, fragmentation_fraction=request.fragmentation)
    return ov


def run_plan(request: PlanRequest, *, offline: bool) -> dict[str, Any]:
    """The plan JSON (``anchorgpu plan --json``, performance section included) for the request, with its launch under
    ``recipe`` when the request names one (a launch that cannot express the plan refuses the whole answer)."""
    result, out = planned(request, offline=offline)
    if request.recipe is not None:
        out["recipe"] = launch_json(result, request.recipe)
    return out


def launch_json(result: Any, kind: str) -> dict[str, Any]:
    """The launch of ``kind`` for a planned result (what ``recipe`` holds), or its one-line refusal raised."""
    from anchorgpu.recipes import build_recipe, recipe_to_json

    return recipe_to_json(build_recipe(result, kind))


def planned(request: PlanRequest, *, offline: bool) -> tuple[Any, dict[str, Any]]:
    """(the planned result, its JSON without ``recipe``): the workload planned for the request's launch
    (``launch_reach``, its engine and training stack), so a face that writes the launch beside the plan, or refuses it
    there (the planner page), shows the same figures as ``POST /v1/plan``."""
    from anchorgpu.architectures import model_to_json
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import plan, plan_to_json
    from anchorgpu.planner.speed.estimate import attach_performance
    from anchorgpu.planner.speed.overrides import Overrides
    from anchorgpu.planner.workload_checks import check_diffusion_options

    model = load_public_model(request.model, offline=offline)
    gpu = get_gpu(request.gpu) if request.gpu is not None else None  # "" is refused, as the CLI's --gpu ''; the page drops a blank field
    workload, precision, layout = plan_inputs(request)
    check_given(request, model)  # a diffusion pipeline's default task is diffusion
    check_diffusion_options(model, images=request.images, resolution=request.resolution, vae_tiling=request.vae_tiling,
                            flags=False)
    result = plan(model, workload, precision=precision, layout=layout, gpu=gpu, overheads=overheads(request),
                  efficiencies=Overrides(mfu=request.mfu, mbu=request.mbu))
    options = {"train_tokens": request.tokens, "mfu": request.mfu, "mbu": request.mbu}
    result = attach_performance(result, **{k: v for k, v in options.items() if v is not None})
    out: dict[str, Any] = plan_to_json(result, model_json=model_to_json(model, kv_cache=result.precision.kv_cache))
    return result, out


def run_recommend(request: RecommendRequest, *, offline: bool, now: datetime) -> dict[str, Any]:
    """The ``anchorgpu recommend --json`` answer for the request (catalog offerings priced for the term)."""
    from anchorgpu.architectures import ModelSpec
    from anchorgpu.catalog import find_offerings, load_catalog
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner import Workload
    from anchorgpu.planner.engine_choice import (
        engine_source,
        launch_reach,
        resolve_engine,
        resolve_train_stack,
    )
    from anchorgpu.planner.inputs import workload_of
    from anchorgpu.planner.speed.overrides import Overrides
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.planner.validate import check_kv_cache_task
    from anchorgpu.recommend import recommend, recommendation_to_json

    check_given(request)
    model = load_public_model(request.model, offline=offline)
    check_given(request, model)  # a diffusion pipeline's default task is diffusion
    if request.recipe is not None and isinstance(model, ModelSpec):
        from anchorgpu.recipes import check_kind

        # up front, as the CLI and POST /v1/plan refuse it: a serving launch for training (or the reverse), or a serving
        # launch of another engine than the one the memory is sized for, was returned as recipe_refused on every row
        check_kind(request.recipe, engine=request.engine, task=request.task)
    catalog = load_catalog()
    # a blank name is refused ("the name is empty"), as the CLI's --gpu '' is, not read as no filter (the page drops
    # a blank form field before it builds the request)
    offerings = find_offerings(catalog, gpu=request.gpu) if request.gpu is not None else None
    if request.gpu is not None and not offerings:  # as the CLI's --gpu says it
        from anchorgpu.hardware import get_gpu

        raise InvalidWorkload(said("gpu {gpu}: the catalog has no offering of {name}", gpu=request.gpu,
                                   name=get_gpu(request.gpu).name))
    if not isinstance(model, ModelSpec):
        from anchorgpu.planner.workload_checks import validate_workload
        from anchorgpu.recommend.diffusion import recommend_diffusion

        if request.task not in ("inference", "diffusion"):
            raise InvalidWorkload(said("{model} is a diffusion pipeline: task {task} does not apply",
                                       model=request.model, task=request.task))
        if request.engine not in (None, "vllm"):
            raise InvalidWorkload(said("engine {engine} sizes a language model's serving engine; {model} is a "
                                       "diffusion pipeline", engine=request.engine, model=request.model))
        check_kv_cache_task(request.kv_cache, "diffusion")
        if request.recipe is not None:
            from anchorgpu.recipes import check_kind

            check_kind(request.recipe, diffusion=True)
        diffusion = Workload(task="diffusion", images=request.images, resolution=_resolution(request.resolution),
                             vae_tiling=request.vae_tiling, images_per_request=request.images_per_request,
                             image_resolution=_resolution(request.image_resolution))
        validate_workload(diffusion)  # images of a serving request: refused for the task, as plan refuses them
        return recommendation_to_json(recommend_diffusion(
            model, diffusion, catalog, request.term, now, weights=request.weights, max_usd=request.max_usd,
            top=request.top, offerings=offerings))
    if request.task == "diffusion":
        raise InvalidWorkload(said("task diffusion needs a diffusion pipeline; {model} is a language model",
                                   model=request.model))
    if request.images != 1 or request.resolution is not None or request.vae_tiling:
        raise InvalidWorkload(said("images, resolution and vae_tiling apply to diffusion pipelines; {model} is a "
                                   "language model", model=request.model))
    workload = workload_of(task=request.task, context_tokens=request.context, concurrency=request.concurrency,
                           micro_batch=request.micro_batch,  # not given: the sweep picks 1, 2 or 4 per layout, as plan does
                           seq_tokens=request.seq, train_precision=request.train_precision,
                           optimizer_state=request.optimizer_state, cross_entropy=request.cross_entropy,
                           train_stack=resolve_train_stack(request.train_stack, request.recipe, request.task),
                           **launch_reach(request.recipe),
                           recompute=request.recompute, optimizer=request.optimizer, lora_rank=request.lora_rank,
                           gpu_memory_utilization=request.gpu_memory_utilization,
                           allow_long_context=request.allow_long_context,
                           max_num_seqs=request.max_num_seqs, engine=resolve_engine(request.engine, request.recipe),
                           engine_source=engine_source(request.engine, request.recipe),
                           images_per_request=request.images_per_request,
                           image_resolution=_resolution(request.image_resolution))
    spec = SweepSpec(  # the request as given (null: plan's defaults, which the sweep resolves as plan does)
        workload=workload,
        weights=comma_list(request.weights, flag="weights"),
        kv_caches=(request.kv_cache,) if request.kv_cache else (),
        concurrencies=(request.concurrency,) if request.concurrency else (),
        prompt_tokens=request.prompt, output_tokens=request.output_tokens, train_tokens=request.tokens,
        global_batch_tokens=request.global_batch, efficiencies=Overrides(mfu=request.mfu, mbu=request.mbu),
    )
    result = recommend(model, spec, catalog, request.term, now, max_usd=request.max_usd,
                       min_tokens_per_s_per_user=request.min_tokens_per_s_per_user, max_ttft_s=request.max_ttft_s,
                       top=request.top,
                       max_servers=request.max_servers, offerings=offerings, lower_precision=request.lower_precision)
    body: dict[str, Any] = recommendation_to_json(result)
    if request.recipe is not None:
        from dataclasses import replace

        from anchorgpu.recipes.for_results import attach_recipes, request_sized

        sized_workload = replace(workload, global_batch_tokens=spec.global_batch_tokens)  # the launch's batch too
        body = attach_recipes(body, model, request_sized(sized_workload, spec.prompt_tokens, spec.output_tokens),
                              request.recipe)
    return body
