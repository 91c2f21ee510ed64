"""Launch recipes: turn a :class:`~anchorgpu.planner.plan.Plan` into the command and files that run it.

``build_recipe(plan, kind)`` for KIND in :data:`KINDS`: serving engines (vLLM, SGLang, TensorRT-LLM), training
launchers (torchrun with FSDP settings, DeepSpeed, accelerate) and cluster wrappers (SkyPilot, Kubernetes).
Each recipe says what it assumed and what the plan could not set; a recipe that cannot express the plan is
refused with one line (:class:`anchorgpu.errors.InvalidWorkload`, code ``recipe_not_expressible``).
Pure: reads only the plan and the packaged flag lists.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.plan import Plan
from anchorgpu.recipes._common import (
    KINDS,
    RECIPE_OPTION,
    SERVING_KINDS,
    TRAINING_KINDS,
    Recipe,
    Target,
    default_target,
    flag_data,
)
from anchorgpu.recipes.cluster import k8s_recipe, skypilot_recipe
from anchorgpu.recipes.devices import device_plan
from anchorgpu.recipes.serving import serving_recipe
from anchorgpu.recipes.training import training_recipe
from anchorgpu.units import fmt_bytes

__all__ = ["KINDS", "Recipe", "Target", "build_recipe", "check_fits", "check_kind", "flag_data", "recipe_to_json"]


def check_kind(kind: str, *, diffusion: bool = False, engine: str | None = None, task: str | None = None) -> str:
    """``kind`` in its canonical spelling, or the one-line refusal every face gives (CLI ``plan`` and ``recommend``,
    ``POST /v1/plan`` and ``/v1/recommend``), before anything is planned: an unknown kind, any kind for a diffusion
    pipeline, a serving engine's launch for a training ``task`` or a training launch for serving, and a serving launch
    of another engine than the one the plan's memory is sized for (``engine``, as the user gave it; ``None``: not
    given, the faces then size the plan for the launch's engine, :func:`~anchorgpu.planner.engine_choice.resolve_engine`).
    vLLM's ``gpu_memory_utilization`` is its share of each GPU, TensorRT-LLM's ``free_gpu_memory_fraction`` the share
    of the memory left after the weights and its profiling pass, SGLang's ``mem_fraction_static`` the share of the
    memory free at start for the weights and KV pool, and their sequence caps and admission differ: a launch of one
    from another's plan would carry the other's numbers. (A library plan left at the Workload's default vLLM still
    gives an SGLang launch, its fraction converted: :func:`build_recipe`.)

    >>> check_kind("TRTLLM", engine="trtllm"), check_kind("sglang", engine="sglang", task="inference")
    ('trtllm', 'sglang')
    >>> check_kind("sglang", engine="vllm")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --recipe sglang: the plan is sized for vLLM (--engine vllm), whose memory budget and admission differ; plan with --engine sglang (or without --engine) for a sglang launch
    >>> check_kind("trtllm", engine="vllm")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --recipe trtllm: the plan is sized for vLLM (--engine vllm), whose memory budget and admission differ; plan with --engine trtllm (or without --engine) for a trtllm launch
    """
    key = kind.strip().lower()
    if key not in KINDS:
        raise InvalidWorkload(said("{option} {kind!r}: unknown kind; choose one of {KINDS}", option=RECIPE_OPTION, kind=kind,
                                   KINDS=', '.join(KINDS)),
                              code="recipe_not_expressible")
    if diffusion:
        raise InvalidWorkload(said("{option} {key}: diffusion pipelines have no launch recipe yet", option=RECIPE_OPTION, key=key),
                              code="recipe_not_expressible")
    if task in ("train", "lora", "qlora") and key in SERVING_KINDS:
        raise InvalidWorkload(said("{option} {key}: a serving engine for a {task} plan (use torchrun-fsdp, "
                                   "deepspeed or accelerate)", option=RECIPE_OPTION, key=key, task=task), code="recipe_not_expressible")
    if task == "inference" and key in TRAINING_KINDS:
        raise InvalidWorkload(said("{option} {key}: a training recipe for an inference plan (use vllm, sglang or "
                                   "trtllm)", option=RECIPE_OPTION, key=key),
                              code="recipe_not_expressible")
    if engine == "trtllm" and key in SERVING_KINDS and key != "trtllm":
        raise InvalidWorkload(said("{option} {key}: the plan is sized for TensorRT-LLM (--engine trtllm), whose "
                                   "KV cache and admission differ; plan with --engine {key} (or without --engine) "
                                   "for a {key} launch", option=RECIPE_OPTION, key=key),
                              code="recipe_not_expressible")
    if engine in ("vllm", "sglang") and key in SERVING_KINDS and key != engine:
        named = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
        raise InvalidWorkload(said("{option} {key}: the plan is sized for {named} (--engine {engine}), whose "
                                   "memory budget and admission differ; plan with --engine {key} (or without "
                                   "--engine) for a {key} launch", option=RECIPE_OPTION, key=key, named=named, engine=engine),
                              code="recipe_not_expressible")
    return key


_ALLOCATION_FLAGS = frozenset({"--seq", "--context", "--concurrency"})
"""The flags of a plan's change that an allocation's launch takes (its faces' ``context`` and ``concurrency``; the
training sequence is its ``context``)."""


def _allocation_takes(change: str) -> bool:
    """Whether an allocation's launch can make ``change`` (every flag in it one of :data:`_ALLOCATION_FLAGS`).

    >>> _allocation_takes("--seq 512"), _allocation_takes("--weights int4-awq"), _allocation_takes("--gpus 16 --tp 8")
    (True, False, False)
    """
    flags = [word for word in change.split() if word.startswith("--")]
    return bool(flags) and all(flag in _ALLOCATION_FLAGS for flag in flags)


def plan_command(plan: Plan, change: str) -> str:
    """The ``anchorgpu plan`` command, quoted, that plans ``plan``'s model and workload on its GPUs with ``change``
    (each face names it its own way: ``POST /v1/plan with …``, the Planner page). Said, so a page in another language
    keeps its words around it."""
    w = plan.workload
    if w.task == "inference":
        workload = said("{context}{concurrency}",
                        context=f" --context {w.context_tokens}" if w.context_tokens else "",
                        concurrency=f" --concurrency {w.concurrency}" if w.concurrency and w.concurrency > 1 else "")
    else:
        workload = said(" --task {task}{seq}", task=w.task, seq=f" --seq {w.seq_tokens}" if w.seq_tokens else "")
    return said("`anchorgpu plan {model} --gpu {gpu} --gpus {gpus}{workload} {change}`", model=plan.model.name,
                gpu=plan.gpu.name if plan.gpu is not None else "", gpus=plan.layout.gpus, workload=workload,
                change=change)


def check_fits(plan: Plan, kind: str, *, where: str | None = None, fixed_gpus: bool = False) -> None:
    """Refuse, in one line, a launch for a plan that does not fit: it would run out of memory as planned.

    The line names the first "What would fit" change when the plan has one. ``where`` words the GPUs (default
    ``N x gpu``). ``fixed_gpus`` is an allocation's launch, whose servers are booked and whose faces take only the
    workload's length and users (``--context``, ``--concurrency``; ``allocations/recipe.py``): it names a change on
    that many GPUs that those options make when there is one; else a change on that many GPUs they cannot make (a
    weight format, offload, a layout) with the plan command that writes its launch; else how many GPUs the first
    change needs, with the plan command for them (stop 61: "--weights int4-awq" was offered to a route with no
    ``weights`` parameter).
    """
    if plan.fits is not False:
        return
    gpu = plan.gpu.name if plan.gpu is not None else "GPU"
    fit = said("the plan does not fit on {where}", where=where or f"{plan.layout.gpus} x {gpu}")
    short = (said(" (short by {short} per GPU)", short=fmt_bytes(-plan.headroom_bytes))
             if plan.headroom_bytes is not None else "")
    then: str = ""
    if not fixed_gpus:
        if plan.suggestions:
            then = said("; plan with {change} first", change=plan.suggestions[0].change)
    else:
        same = [s for s in plan.suggestions if s.gpus == plan.layout.gpus]
        taken = [s for s in same if _allocation_takes(s.change)]
        if taken:  # the allocation's launch takes the training sequence as --context
            then = said("; it would fit with {change}", change=taken[0].change.replace("--seq ", "--context "))
        elif same:
            # the plan, not its launch: the launch of the change may refuse in its own words (vLLM quantizes no
            # 16-bit checkpoint to int4-awq while loading)
            then = said("; it would fit on these GPUs only with a change this launch does not set: {command} plans it",
                        command=plan_command(plan, same[0].change))
        elif plan.suggestions:
            then = said("; it needs {gpus} GPUs: {command} plans them", gpus=plan.suggestions[0].gpus,
                        command=plan_command(plan, plan.suggestions[0].change))
    line = said("{fit}{short}{then}", fit=fit, short=short, then=then)
    raise InvalidWorkload(said("{option} {kind}: {line}", option=RECIPE_OPTION, kind=kind, line=line),
                          code="recipe_not_expressible")


def build_recipe(plan: Plan, kind: str, *, target: Target | None = None) -> Recipe:
    """The recipe of ``kind`` for ``plan``; ``target`` (servers and GPUs per server) defaults to the plan's GPUs
    packed eight to a server."""
    # a plan sized for TensorRT-LLM or SGLang launches that engine only; a vLLM-sized one (the Workload's default, which
    # a library caller may not have chosen) is told apart by the faces, which refuse --engine vllm --recipe trtllm up front
    own = plan.workload.task == "inference" and plan.workload.engine in ("trtllm", "sglang")
    key = check_kind(kind, diffusion=plan.workload.task == "diffusion", engine=plan.workload.engine if own else None)
    check_fits(plan, key)
    where = target or default_target(plan)
    if where.nodes * where.gpus_per_node != plan.layout.gpus:
        raise InvalidWorkload(said("{option} {key}: {nodes} server(s) x {gpus_per_node} GPUs is not the plan's "
                                   "{gpus} GPUs", option=RECIPE_OPTION, key=key, nodes=where.nodes, gpus_per_node=where.gpus_per_node,
                                   gpus=plan.layout.gpus), code="recipe_not_expressible")
    # a package its software sees as several devices (MI250X: 2 GCDs) launches over the devices, planned again there
    launch, where, note = device_plan(plan, key, where)
    if key in SERVING_KINDS:
        recipe = serving_recipe(launch, key, where)
    elif key in TRAINING_KINDS:
        recipe = training_recipe(launch, key, where)
    elif key == "skypilot":
        recipe = skypilot_recipe(launch, where)
    else:
        recipe = k8s_recipe(launch, where)
    return recipe if note is None else replace(recipe, assumptions=(note, *recipe.assumptions))


def recipe_to_json(recipe: Recipe) -> dict[str, Any]:
    """Stable keys: kind, tool_version, command, files [{name, text}], assumptions, cannot_set."""
    return {"kind": recipe.kind, "tool_version": recipe.tool_version, "command": recipe.command,
            "files": [{"name": name, "text": text} for name, text in recipe.files],
            "assumptions": list(recipe.assumptions), "cannot_set": list(recipe.cannot_set)}
