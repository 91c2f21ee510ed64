"""Pipeline stages added around a serving TP the user gave (``--gpus N --tp T``, no ``--pp`` or ``--dp``). The GPUs
beyond one TP group are replicas (TP x DP), as vLLM's and SGLang's data-parallel launches run them, and that stays
the answer whenever those replicas hold the requested concurrency. Where they do not (the model's TP share does not
fit a GPU, or the replicas' engines cannot run that many sequences), the planner adds pipeline stages, which every
engine planned runs (vLLM ``--pipeline-parallel-size``, SGLang ``--pp-size``, TensorRT-LLM ``--pp_size``), and
keeps the TP exactly: of TP T x PP p x DP N/(T p) for each p that divides N/T, fewest stages first, the one that
holds the users and serves them fastest, but the one with fewest stages unless another is predicted faster by more
than the calibration's layout margin (the serving chooser's rule, :func:`~anchorgpu.planner.speed.serving_ranking.pick_over_first`).
An ``--ep`` given with it is kept: stages are added under EP inside TP (EP equal to TP, or smaller as EP x expert
TP on TensorRT-LLM and SGLang; vLLM's is refused, :mod:`~anchorgpu.planner.layout_resolution`), never under attention data
parallelism (EP wider than TP), which the chooser runs one stage only. Where no such layout holds the users the plan
is of the layout as given, with what would fit. Pure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.engine_limits import engine_limits_on
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.speed.layouts import Choice
from anchorgpu.planner.speed.serving_ranking import fastest, holds, split_words, users_words, which
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["stages_around_given_tp", "staged_layouts"]


def staged_layouts(model: ModelSpec, given: Layout) -> tuple[Layout, ...]:
    """The layouts of ``given.gpus`` GPUs with ``given.tp`` (and ``given.ep``) kept and pipeline stages added, fewest
    stages (most replicas) first; none where the TP group takes all the GPUs, or a given EP is wider than the TP.

    >>> from anchorgpu.architectures import load_model
    >>> [(s.tp, s.pp, s.dp) for s in staged_layouts(load_model("llama-3.1-70b"), Layout(gpus=8, tp=2))]
    [(2, 2, 2), (2, 4, 1)]
    >>> staged_layouts(load_model("qwen3-235b-a22b"), Layout(gpus=8, tp=1, ep=8))
    ()
    """
    gpus, tp, ep = given.gpus or 1, given.tp or 1, given.ep or 1
    if gpus % tp or ep > tp or tp % ep:
        return ()
    groups = gpus // tp  # TP groups on the GPUs asked: replicas today, stages and replicas here
    return tuple(evolve(given, pp=pp, dp=groups // pp) for pp in range(2, min(groups, model.num_layers) + 1)
                 if groups % pp == 0)


def _short_of(p: Plan, want: int, cap: int, replicas: int) -> str:
    """Why the replicas as given do not hold ``want`` sequences: memory, the engine's sequence cap, or capacity."""
    if p.fits is False and p.budget_bytes is not None:
        return f"it needs {fmt_bytes(p.per_gpu.total_bytes)} a GPU of the {fmt_bytes(p.budget_bytes)} engine budget"
    if -(-want // replicas) > cap:
        return f"{-(-want // replicas):,} a replica, more than the engine's max_num_seqs of {cap:,}"
    return f"its KV cache holds {p.max_concurrency or 0:,}"


def stages_around_given_tp(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                           overheads: Overheads) -> tuple[Choice | None, Plan] | None:
    """``(None, the plan as given)`` when the replicas of the given TP hold the requested concurrency (today's
    answer); ``(the choice and why, its plan)`` when they do not and a layout of :func:`staged_layouts` does (the
    chooser's ranking and margins, :func:`~anchorgpu.planner.speed.serving_ranking.fastest`); None when the TP
    group takes all the GPUs, the layout as given is refused, or nothing holds the users (the plan is then of the
    layout as given, which refuses or says what would fit)."""
    from anchorgpu.planner.plan import plan

    staged = staged_layouts(model, given)
    if not staged:
        return None
    want = w.concurrency or 1
    cap = engine_limits_on(w, gpu)[1]
    try:
        as_given = plan(model, w, precision=precision, layout=given, gpu=gpu, overheads=overheads, suggest=False,
                        choose_layout=False)
    except InvalidWorkload:
        return None  # the plan as given refuses it, with the reason
    replicas = as_given.layout.dp
    if as_given.fits and (as_given.max_concurrency or 0) >= want and -(-want // replicas) <= cap:
        return None, as_given
    held = [(lay, p) for lay in staged if (p := holds(model, w, precision, lay, gpu, overheads, want, cap)[0])]
    if not held:
        return None
    pick, speeds, classes = fastest(held, gpu)
    layout, chosen = held[pick]
    tp = as_given.layout.tp
    kept = f"--tp {tp}" + (f" --ep {given.ep}" if given.ep else "")
    reason = (f"Layout chosen on the {as_given.layout.gpus:,} GPUs asked: {split_words(layout)} - {kept} kept as "
              f"given, {layout.pp} pipeline stages added: TP {tp} as {replicas:,} replicas does not hold "
              f"{users_words(want)} ({_short_of(as_given, want, cap, replicas)}); "
              + which(held, pick, speeds, classes, users_words(want), first="the fewest stages")
              + "; pass --pp to choose the stages")
    return Choice(layout=layout, workload=w, reason=reason), chosen
