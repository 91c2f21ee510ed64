"""``anchorgpu allocations recipe ID --kind KIND --model MODEL``: the launch for a booked allocation.

A thin face over :func:`anchorgpu.allocations.recipe.allocation_recipe` (the same as
``GET /v1/allocations/{id}/recipe``); the text rendering is ``anchorgpu plan --recipe``'s.
"""

from __future__ import annotations

from typing import Any

from anchorgpu.cli._app import console, emit_json
from anchorgpu.errors import InvalidWorkload


def allocation_recipe_command(store: Any, account_id: str, allocation_id: str | None, *, kind: str | None,
                              model: str | None, task: str, context: str | None, concurrency: str | None,
                              as_json: bool) -> None:
    from anchorgpu.allocations.recipe import allocation_recipe
    from anchorgpu.architectures import load_model
    from anchorgpu.cli.plan_parse import parse_count, parse_tokens
    from anchorgpu.cli.plan_render import render_recipe
    from anchorgpu.planner import Workload
    from anchorgpu.recipes import Recipe

    if allocation_id is None:
        raise InvalidWorkload("allocations recipe: give the allocation id, e.g. anchorgpu allocations recipe al_... "
                              "--kind vllm --model llama-3.1-8b")
    if kind is None or model is None:
        raise InvalidWorkload("allocations recipe: --kind and --model are both needed")
    if task not in ("inference", "train", "lora", "qlora"):
        raise InvalidWorkload(f"--task {task!r}: choose inference, train, lora or qlora")
    users = parse_count(concurrency, field="concurrency", example="64 or 1k")  # as plan reads it
    tokens = parse_tokens(context, field="context")
    workload = (Workload(task="inference", context_tokens=tokens, concurrency=users) if task == "inference"
                else Workload(task=task, seq_tokens=tokens))  # type: ignore[arg-type]  # checked just above
    body = allocation_recipe(store.uow_factory(), account_id=account_id, allocation_id=allocation_id,
                             clock=store.clock, kind=kind, model=load_model(model), workload=workload)
    if as_json:
        emit_json(body)
        return
    lay = body["plan"]["layout"]
    fits = body["plan"]["fits"]
    console().print(f"Allocation {body['allocation_id']}: {body['servers']} x {body['offering']} "
                    f"({body['servers'] * body['gpus_per_server']} x {body['gpu']}); plan "
                    f"{'FITS' if fits else 'DOES NOT FIT'} at TP {lay['tp']} x PP {lay['pp']} x DP {lay['dp']}",
                    markup=False, soft_wrap=True)
    r = body["recipe"]
    render_recipe(Recipe(kind=r["kind"], command=r["command"], files=tuple((f["name"], f["text"]) for f in r["files"]),
                         assumptions=tuple(r["assumptions"]), cannot_set=tuple(r["cannot_set"]),
                         tool_version=r["tool_version"]))
