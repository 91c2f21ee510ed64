"""A launch recipe for every result of ``recommend``: each offering's GPUs, servers, layout and precision.

Each result is planned again with the layout and formats the sweep chose for it (so the recipe reads a full
:class:`~anchorgpu.planner.plan.Plan`) and written for that many servers of that many GPUs. A result whose
plan the recipe cannot express gets ``recipe: null`` and the one-line reason in ``recipe_refused``: the other
results keep theirs. Pure: no store, no face.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidInput
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.inputs import Layout, PrecisionPlan, Workload
from anchorgpu.planner.plan import plan
from anchorgpu.recipes import Target, build_recipe, check_kind, recipe_to_json

__all__ = ["attach_recipes", "request_sized"]


def request_sized(workload: Workload, prompt_tokens: int | None, output_tokens: int | None) -> Workload:
    """``workload`` with the request a result's launch is planned with, as the sweep sized the result: a serving workload
    with a prompt or an output and no context holds each sequence at prompt + output (``plan --prompt``,
    ``--output-tokens``; None: plan's default for that part); else it is unchanged (the workload's own context).
    Without them a recommended row was planned again at the default context and could be refused as not fitting (a
    vision model's 1,000-token request on one GPU, planned at its window)."""
    if (workload.task != "inference" or workload.context_tokens is not None
            or (prompt_tokens is None and output_tokens is None)):
        return workload
    return replace(workload, prompt_tokens=prompt_tokens, output_tokens=output_tokens)


def attach_recipes(body: dict[str, Any], model: ModelSpec, workload: Workload, kind: str) -> dict[str, Any]:
    """``body`` (``recommendation_to_json``) with ``recipe`` (or ``recipe_refused``) on each result and Pareto row."""
    kind = check_kind(kind)
    training = workload.task in ("train", "lora", "qlora")
    cache: dict[tuple[Any, ...], dict[str, Any]] = {}
    for section in ("results", "pareto"):
        for row in body.get(section, []):
            lay = row["layout"]
            key = (row["offering"], row["servers"], row["weights"], row.get("kv_cache"), row.get("concurrency"),
                   row.get("recompute"), lay["tp"], lay["pp"], lay["dp"], lay.get("zero"), lay.get("ep"), lay.get("cp"),
                   lay.get("virtual_stages"), lay.get("offload"))
            if key not in cache:
                cache[key] = _one(row, model, workload, kind, training)
            row.update(cache[key])
    return body


def _one(row: dict[str, Any], model: ModelSpec, workload: Workload, kind: str, training: bool) -> dict[str, Any]:
    lay = row["layout"]
    servers = int(row["servers"])
    try:
        # the workload as asked (its context, not the resolved sequence: a vision model's image tokens are added
        # by the plan again, and were counted twice) at the row's concurrency
        w = workload if training else replace(workload, concurrency=row.get("concurrency") or workload.concurrency)
        precision = PrecisionPlan(weights=row["weights"], kv_cache=row.get("kv_cache") or "bf16")
        ep = lay.get("ep") or 1  # a mixture of experts: the sweep's EP (training, or attention DP in serving)
        layout = Layout(gpus=row["gpus"], tp=lay["tp"], pp=lay["pp"], dp=lay["dp"], ep=ep if ep > 1 else None,
                        zero=lay.get("zero") if training else None, cp=lay.get("cp") or 1,
                        virtual_stages=lay["virtual_stages"] if training and lay.get("virtual_stages", 1) > 1 else None,
                        pipeline_layout=lay.get("pipeline_layout") if training else None,
                        # a training row no layout without offload fits: its optimizer state in host memory
                        offload=lay.get("offload") or "none")
        if training:
            # as the sweep sized and timed the row: its micro-batch and recompute level (planned at micro-batch 1 or
            # no recompute, a row the sweep ran at 4 with full recompute launched another job, or was refused)
            w = replace(w, micro_batch=row.get("concurrency") or w.micro_batch or 1,
                        recompute=row.get("recompute") or w.recompute)
            p = plan(model, w, precision=precision, layout=layout, gpu=get_gpu(row["gpu"]), suggest=False,
                     choose_layout=False)
        else:
            p = plan(model, w, precision=precision, layout=layout, gpu=get_gpu(row["gpu"]), suggest=False)
        recipe = build_recipe(p, kind, target=Target(nodes=servers, gpus_per_node=int(row["gpus"]) // servers))
    except InvalidInput as err:
        return {"recipe": None, "recipe_refused": err.message}
    return {"recipe": recipe_to_json(recipe)}
