"""The launch recipe for a booked allocation: the model planned on exactly the servers and GPUs it holds.

``anchorgpu allocations recipe ID MODEL --kind vllm`` and ``GET /v1/allocations/{id}/recipe?kind=&model=``
both call :func:`allocation_recipe`: it reads the allocation (the account's own), its offering (GPU model and
GPUs per server) and its server count, plans the workload on those GPUs, and writes the recipe for that many
servers. Serving keeps each replica inside one server (TP = the server's GPUs when the model allows it);
training keeps to the layouts the launchers run: no pipeline stages (and no TP/CP under DeepSpeed), the rest chosen.
"""

from __future__ import annotations

from typing import Any

from anchorgpu.allocations.inputs import _catalog
from anchorgpu.allocations.reads import get_allocation
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.recipes._common import RECIPE_OPTION

__all__ = ["allocation_recipe", "launch_workload"]


def launch_workload(workload: Any, launched: str) -> Any:
    """``workload`` planned for the launch ``launched`` as ``plan --recipe`` and ``POST /v1/plan`` plan it: the layout
    held to what the launch can run and its memory counted as it holds it (``launch_reach``), training timed on the
    stack the launch runs (``resolve_train_stack``: PyTorch for torchrun-fsdp, deepspeed and accelerate), serving sized
    for the recipe's engine (``resolve_engine``: sglang, trtllm) unless the workload names another."""
    from dataclasses import replace

    from anchorgpu.planner.engine_choice import launch_reach, resolve_engine, resolve_train_stack

    reach: dict[str, Any] = dict(launch_reach(launched))
    if workload.task in ("train", "lora", "qlora"):
        # the faces here take no --train-stack: the launch's own, as resolve_train_stack picks it for plan --recipe
        reach["train_stack"] = resolve_train_stack(None, launched, workload.task)
    engine = resolve_engine(None, launched)  # vllm for a launch of no engine of its own (vllm, skypilot, k8s)
    if workload.task == "inference" and engine != "vllm" and engine != workload.engine:
        # its launch is planned with that engine's memory sizing, and a refusal names --recipe, not an --engine not given
        reach.update(engine=engine, engine_source="recipe")
    return replace(workload, **reach)


def named_as_kind(error: InvalidWorkload) -> InvalidWorkload:
    """A launch's refusal as the allocation's faces name their option: ``--kind`` (the CLI's ``allocations recipe``),
    which the API names as its ``kind`` parameter, not ``plan``'s ``--recipe``; the same line otherwise (its message
    id kept, so a page in another language still has its words). Any other refusal is returned as it is.

    >>> from anchorgpu.recipes import check_kind
    >>> try:
    ...     check_kind("deepspeed", task="inference")
    ... except InvalidWorkload as exc:
    ...     print(named_as_kind(exc))
    --kind deepspeed: a training recipe for an inference plan (use vllm, sglang or trtllm)
    """
    line = error.said
    if line is None or line.values.get("option") != RECIPE_OPTION:
        return error
    return InvalidWorkload(said(line.template, **{**line.values, "option": "--kind"}), code=error.code)


def allocation_recipe(uow: Any, *, account_id: str, allocation_id: str, clock: Any, kind: str, model: Any,
                      workload: Any, precision: Any = None, catalog: Any | None = None) -> dict[str, Any]:
    """``{allocation_id, offering, gpu, servers, gpus_per_server, plan{fits, headroom_bytes, total_bytes, layout},
    recipe}`` for ``model`` (a loaded spec) running ``workload`` on the allocation; a launch's refusal names the
    allocation's ``--kind`` (:func:`named_as_kind`)."""
    try:
        return _allocation_recipe(uow, account_id=account_id, allocation_id=allocation_id, clock=clock, kind=kind,
                                  model=model, workload=workload, precision=precision, catalog=catalog)
    except InvalidWorkload as exc:
        renamed = named_as_kind(exc)
        if renamed is exc:
            raise
        raise renamed from exc


def _allocation_recipe(uow: Any, *, account_id: str, allocation_id: str, clock: Any, kind: str, model: Any,
                       workload: Any, precision: Any = None, catalog: Any | None = None) -> dict[str, Any]:
    from anchorgpu.architectures.spec import DiffusionPipelineSpec
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, plan
    from anchorgpu.planner.report import plan_to_json
    from anchorgpu.recipes import Target, build_recipe, check_fits, check_kind, recipe_to_json

    launched = check_kind(kind, diffusion=isinstance(model, DiffusionPipelineSpec))  # as plan --recipe refuses it
    workload = launch_workload(workload, launched)
    body = get_allocation(uow, account_id=account_id, allocation_id=allocation_id, clock=clock)
    if body["state"] in ("terminated", "expired"):
        raise InvalidWorkload(said("allocation {allocation_id} is {state}: its servers are released",
                                   allocation_id=allocation_id, state=body['state']),
                              code="recipe_not_expressible")
    offering = _catalog(catalog).offering(body["offering"])
    servers = int(body["quantity"])
    gpu = get_gpu(offering.gpu)
    gpus = servers * offering.gpus
    layouts: list[Layout] = []
    if workload.task == "inference" and gpus > offering.gpus:
        # one replica per server (TP over the server's GPUs, the servers as replicas); when a server cannot hold
        # the model, one replica over all of them (TP in a server, a pipeline stage per server)
        layouts += [Layout(gpus=gpus, tp=offering.gpus), Layout(gpus=gpus, tp=offering.gpus, pp=servers)]
    elif workload.task != "inference":
        # training frameworks here have no pipeline stages (DeepSpeed's config no TP/CP either): keep them out
        flat = 1 if kind in ("deepspeed", "k8s", "skypilot") else None
        layouts.append(Layout(gpus=gpus, pp=1, tp=flat, cp=flat))
    layouts.append(Layout(gpus=gpus))  # the planner's own layout
    result = None
    for layout in layouts:  # the first that fits; else the first the model allows (refused below: it does not fit)
        try:
            candidate = plan(model, workload, precision=precision, layout=layout, gpu=gpu)
        except InvalidWorkload:
            if layout is layouts[-1] and result is None:
                raise
            continue  # the model's heads or layers do not split that way
        result = result or candidate
        if candidate.fits:
            result = candidate
            break
    assert result is not None
    key = check_kind(kind, diffusion=result.workload.task == "diffusion")
    check_fits(result, key, where=said("this allocation's {servers} x {gpus} {gpu}", servers=servers,
                                       gpus=offering.gpus, gpu=gpu.name), fixed_gpus=True)
    recipe = build_recipe(result, kind, target=Target(nodes=servers, gpus_per_node=offering.gpus))
    full = plan_to_json(result)
    return {
        "allocation_id": allocation_id, "offering": offering.id, "gpu": gpu.name, "servers": servers,
        "gpus_per_server": offering.gpus,
        "plan": {"fits": full["fits"], "headroom_bytes": full["headroom_bytes"],
                 "total_bytes": full["per_gpu"]["total_bytes"], "layout": full["layout"]},
        "recipe": recipe_to_json(recipe),
    }
