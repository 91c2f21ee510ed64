"""The page's "Launch" sections: a recipe for an allocation (and, later, a plan or a recommendation), or the
one-line reason it cannot be written. A thin face over :mod:`anchorgpu.allocations.recipe`."""

from __future__ import annotations

from typing import Any

from anchorgpu.errors import AnchorError
from anchorgpu.recipes import KINDS
from anchorgpu.web.i18n import PageText
from anchorgpu.web.refusals import planner_refusal

RECIPE_KINDS = KINDS

# the option each serving engine's launch sets its maximum sequence length with, as anchorgpu.recipes.serving writes
# it (vLLM --max-model-len, SGLang --context-length, TensorRT-LLM --max_seq_len): the recommendations page names it
# beside a row whose KV cache holds no whole window (max_model_len_tokens)
LENGTH_FLAGS = {"vllm": "--max-model-len", "sglang": "--context-length", "trtllm": "--max_seq_len"}


def launch_kind(plan_request: Any, kind: str, text: Any = None) -> tuple[str, str | None]:
    """(the kind in its canonical spelling, None), or (the kind as given, the reason in one line) when the launch is
    refused before anything is planned (:func:`~anchorgpu.recipes.check_kind`, as ``plan_inputs`` refuses it for
    ``POST /v1/plan``): the page then plans without it and says why beside the plan."""
    from anchorgpu.recipes import check_kind

    try:
        return check_kind(kind, engine=plan_request.engine, task=plan_request.task), None
    except AnchorError as err:
        return kind, planner_refusal(err, text)  # as the planner page says its refusals


def launch_for_plan(result: Any, kind: str, text: Any = None) -> tuple[dict[str, Any] | None, str | None]:
    """(recipe JSON, None) or (None, the reason in one line) for the planner page's plan, planned for this launch
    (:func:`~anchorgpu.api.planning.planned` with the request's ``recipe``), so the launch and the figures beside it
    are one plan, as ``POST /v1/plan`` answers."""
    from anchorgpu.api.planning import launch_json
    from anchorgpu.api.words import PAGE_COMMANDS, answer_words
    from anchorgpu.web.planning import PLAN_FIELDS

    try:
        launch = launch_json(result, kind)
    except AnchorError as err:
        return None, planner_refusal(err, text)  # as the planner page says its refusals
    # its lines in the form's names (engine trtllm, not --engine trtllm), as the plan beside it; the launch's own flags kept
    recipe: dict[str, Any] = answer_words({"recipe": launch}, PLAN_FIELDS, PAGE_COMMANDS)["recipe"]
    return recipe, None


def launch_for_allocation(uow_factory: Any, account_id: str, allocation_id: str, clock: Any, settings: Any,
                          form: dict[str, Any], text: Any = None) -> tuple[dict[str, Any] | None, str | None]:
    """(recipe JSON, None) or (None, the reason in one line) for the form's kind, model and workload; ``text`` (the
    page's :class:`~anchorgpu.web.i18n.PageText`) words the form's own reasons, the recipe's stay the API's."""
    from anchorgpu.allocations.recipe import allocation_recipe
    from anchorgpu.api.models_ref import load_public_model, server_offline
    from anchorgpu.planner import Workload
    from anchorgpu.validation import BINARY_SUFFIXES, whole_number

    try:
        if form["task"] not in ("inference", "train", "lora", "qlora"):
            return None, (text or PageText("en")).gettext("task %(task)s: choose inference, train, lora or qlora",
                                                          task=repr(form["task"]))
        tokens = (whole_number(form["context"], field="context", suffixes={k: v for k, v in BINARY_SUFFIXES.items() if k != "g"},
                               example="8192 or 8k", noun="a token count") if form["context"] else None)
        users = whole_number(form["concurrency"], field="concurrency", example="32") if form["concurrency"] else None
        workload = (Workload(task="inference", context_tokens=tokens, concurrency=users) if form["task"] == "inference"
                    else Workload(task=form["task"], seq_tokens=tokens))
        model = load_public_model(form["model"], offline=server_offline(settings))
        body = allocation_recipe(uow_factory(), account_id=account_id, allocation_id=allocation_id, clock=clock,
                                 kind=form["kind"], model=model, workload=workload)
    except AnchorError as err:  # its options named as the form's controls ("Launch kind" deepspeed: ...)
        from anchorgpu.web.form_fields import ALLOCATION_LAUNCH_LABELS
        from anchorgpu.web.planning import page_refusal

        return None, page_refusal(err.said or err.message, frozenset(ALLOCATION_LAUNCH_LABELS), ALLOCATION_LAUNCH_LABELS,
                                  text or PageText("en"))
    recipe: dict[str, Any] = body["recipe"]
    return recipe, None
