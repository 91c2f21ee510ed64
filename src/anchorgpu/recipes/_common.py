"""What every recipe shares: the :class:`Recipe` record, the refusal, the flag lists and the plan's numbers.

Pure: reads the packaged JSON under ``recipes/data`` (each file names the tool, its version and where the
list came from) and a :class:`~anchorgpu.planner.plan.Plan`; imports no face.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.engine_choice import TRAINING_RECIPES
from anchorgpu.planner.inputs import TRAINING_TASKS
from anchorgpu.planner.plan import Plan
from anchorgpu.planner.speed.pipeline import default_batch_tokens

__all__ = ["KINDS", "SERVING_KINDS", "TRAINING_KINDS", "Recipe", "Target", "TrainSteps", "default_target", "flag_data",
           "is_training", "model_ref", "not_expressible", "shell_join", "train_steps"]

SERVING_KINDS = ("vllm", "sglang", "trtllm")
TRAINING_KINDS = TRAINING_RECIPES  # the planner times each as the PyTorch-native stack it launches
KINDS = (*SERVING_KINDS, *TRAINING_KINDS, "skypilot", "k8s")


@dataclass(frozen=True, slots=True, kw_only=True)
class Recipe:
    """A launch that realises a plan: the command, the files it reads (name, text), what was assumed and what
    the plan could not set (left to the user, e.g. the training script)."""

    kind: str
    command: str
    files: tuple[tuple[str, str], ...] = ()
    assumptions: tuple[str, ...] = ()
    cannot_set: tuple[str, ...] = ()
    tool_version: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where it runs: servers (nodes) and GPUs on each. Default: the plan's GPUs packed 8 to a server."""

    nodes: int
    gpus_per_node: int
    name: str = "anchorgpu"


RECIPE_OPTION = "--recipe"
"""The option a launch's refusal names (``{option}`` in its line): ``plan --recipe``'s; an allocation's launch says it
again with its own, ``--kind`` (:func:`anchorgpu.allocations.recipe.named_as_kind`)."""


def not_expressible(kind: str, reason: str) -> InvalidWorkload:
    """The one-line refusal (exit 2, HTTP 422) when a recipe cannot say what the plan needs."""
    return InvalidWorkload(said("{option} {kind}: {reason}", option=RECIPE_OPTION, kind=kind, reason=reason),
                           code="recipe_not_expressible")


@cache
def flag_data(name: str) -> dict[str, Any]:
    """``recipes/data/<name>.json``: a tool's flags or keys with ``tool``, ``version`` and ``source``."""
    text = resources.files("anchorgpu.recipes").joinpath("data", f"{name}.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def model_ref(plan: Plan, assumptions: list[str]) -> str:
    """The checkpoint to launch: another checkpoint of the row's architecture asked for by its Hub id or repository
    name (an instruct model planned as its base's row), else the Hub repository the registry row was published in,
    the Hub id asked for, or the local folder the config came from."""
    source = plan.model.source
    match = re.search(r"; checkpoint (\S+) \(as asked", source) or re.search(r"\(as published in ([^)\s]+)\)", source)
    if match:
        return match.group(1)
    if source.startswith("hub:"):
        return source[4:]
    if source and not source.startswith("registry:"):
        path = source.removesuffix("config.json").rstrip("/") or "."
        assumptions.append(f"Model: the local folder {path} (its config.json was planned); the weights must sit beside it.")
        return path
    assumptions.append(f"Model: {plan.model.name} has no published repository on record; replace it with the "
                       "checkpoint's Hub id or folder.")
    return plan.model.name


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainSteps:
    micro_batch: int
    seq_tokens: int
    accumulation: int
    global_batch_sequences: int  # micro-batch x accumulation x data-parallel ranks
    global_batch_tokens: int


def train_steps(plan: Plan, assumptions: list[str]) -> TrainSteps:
    """Micro-batch and gradient accumulation from the global batch (the plan's, else the task's default: 4M tokens for
    pretraining, 32 sequences for LoRA and QLoRA, as plan times it)."""
    w, lay = plan.workload, plan.layout
    micro = w.micro_batch or 1
    seq = w.seq_tokens or 2048
    tokens = w.global_batch_tokens
    if tokens is None:
        tokens = default_batch_tokens(w.task, seq)
        assumptions.append(f"Global batch not given: {tokens:,} tokens per optimizer step (the planner's default for "
                           f"{'fine-tuning' if w.task in ('lora', 'qlora') else 'pretraining'}).")
    accumulation = max(1, math.ceil(tokens / (lay.dp * micro * seq)))
    sequences = micro * accumulation * lay.dp
    if sequences * seq != tokens:
        assumptions.append(f"Global batch rounded to whole micro-batches: {sequences:,} sequences of {seq:,} tokens "
                           f"= {sequences * seq:,} tokens (asked {tokens:,}).")
    return TrainSteps(micro_batch=micro, seq_tokens=seq, accumulation=accumulation, global_batch_sequences=sequences,
                      global_batch_tokens=sequences * seq)


def default_target(plan: Plan, gpus_per_node: int = 8) -> Target:
    """The plan's GPUs on servers of ``gpus_per_node`` devices (one server when they fit in one): packages of several
    devices (MI250X: 2 GCDs) fill a server of 8 devices with 4 packages, as the 4-package MI250X boards do."""
    gpus = plan.layout.gpus
    if plan.gpu is not None:
        gpus_per_node = max(1, gpus_per_node // plan.gpu.devices_per_package)
    if gpus <= gpus_per_node:
        return Target(nodes=1, gpus_per_node=gpus)
    if gpus % gpus_per_node:
        raise InvalidWorkload(said("{gpus} GPUs do not fill servers of {gpus_per_node} evenly: plan a multiple of "
                                   "{gpus_per_node}", gpus=gpus, gpus_per_node=gpus_per_node), code="recipe_not_expressible")
    return Target(nodes=gpus // gpus_per_node, gpus_per_node=gpus_per_node)


def is_training(plan: Plan) -> bool:
    return plan.workload.task in TRAINING_TASKS


def shell_join(parts: list[str], *, indent: str = "  ") -> str:
    """A command over several lines, one flag (and its value) a line, ending each with a backslash."""
    lines: list[str] = []
    for part in parts:
        if part.startswith("--") or not lines:
            lines.append(part)
        else:
            lines[-1] += f" {part}"
    return (" \\\n" + indent).join(lines)

