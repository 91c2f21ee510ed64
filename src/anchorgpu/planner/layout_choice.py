"""The plan of the layout :func:`~anchorgpu.planner.plan.plan` chooses for the user where the flags leave it open:
a training layout searched on the GPUs given, or on the fewest that hold the job; a serving layout on the fewest
GPUs, on the GPUs given, or around a given TP. Pure; the changes that would make a plan fit are :mod:`.suggest`'s."""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.result import Plan
from anchorgpu.planner.suggest import suggestions_for
from anchorgpu.planner.training_gpu_counts import fewest_fitting_gpus

if TYPE_CHECKING:
    from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["choose_layout_plan", "training_layout_open"]


def training_layout_open(lay_in: Layout, w: Workload) -> bool:
    """Whether a training plan leaves something of its layout to choose (:func:`choose_layout_plan` searches then)."""
    open_knobs = (lay_in.tp is None or lay_in.pp is None or lay_in.dp is None or lay_in.cp is None
                  or (lay_in.zero is None and not lay_in.fsdp) or w.micro_batch is None or w.recompute is None
                  or (lay_in.virtual_stages is None and lay_in.pipeline_layout is None and (lay_in.pp or 1) > 1))
    if not open_knobs:
        return False
    # with --tp and --pp the rest of the split follows from what is given (speed.layouts._candidates): with the ZeRO
    # stage, micro-batch, recompute and chunks given too, one candidate, nothing to choose (--tp or --pp alone
    # leaves the other searched, as every split dimension not given is)
    split_given = lay_in.tp is not None and lay_in.pp is not None
    return not (split_given and (lay_in.zero is not None or lay_in.fsdp) and w.micro_batch is not None
                and w.recompute is not None and (lay_in.virtual_stages is not None or lay_in.pipeline_layout is not None
                                                 or (lay_in.pp or 1) == 1))


def choose_layout_plan(model: ModelSpec, w: Workload, prec: PrecisionPlan, lay_in: Layout, gpu: GpuSpec,
                       ov: Overheads, efficiencies: Overrides | None = None) -> Plan | None:
    """The plan of the layout chosen for the user, or None when nothing is open or nothing fits. ``efficiencies``
    (``--mfu``/``--mbu``) rank the training layouts at the speed the plan then shows."""
    if w.task in ("train", "lora", "qlora"):
        if not training_layout_open(lay_in, w):
            return None
        from anchorgpu.planner.speed import layouts  # it plans each candidate: imported where it is needed

        if lay_in.gpus is None and None in (lay_in.tp, lay_in.pp, lay_in.dp):
            # no GPU count, and the flags given do not make one: the fewest GPUs that hold the job, flags kept
            return _fewest_training_gpus(model, w, prec, lay_in, gpu, ov, efficiencies)
        found = layouts.choose_training_layout(model, w, prec, lay_in, gpu, ov, efficiencies)
        if found is None:
            return None
        choice, chosen = found
        return evolve(chosen, assumptions=(choice.reason, *chosen.assumptions))
    if w.task == "inference" and lay_in.gpus is None and lay_in.tp is None and lay_in.pp is None \
            and lay_in.dp is None:
        from anchorgpu.planner.speed import serving_layouts

        served = serving_layouts.choose_serving_layout(model, w, prec, lay_in, gpu, ov)
        if served is None:
            return None
        choice, chosen = served
        if chosen.layout.gpus == 1:
            return None  # one GPU is today's default: plan it the usual way
        return evolve(chosen, assumptions=(choice.reason, *chosen.assumptions))
    if w.task == "inference" and lay_in.gpus is not None and lay_in.tp is None and lay_in.pp is None \
            and lay_in.dp is None and lay_in.ep is None:
        from anchorgpu.planner.speed import serving_layouts

        on = serving_layouts.choose_serving_layout_on(model, w, prec, lay_in, gpu, ov)
        if on is None:
            return None  # nothing on these GPUs holds the job: the default's plan says what would fit
        why, chosen = on
        return chosen if why is None else evolve(chosen, assumptions=(why.reason, *chosen.assumptions))
    if w.task == "inference" and lay_in.gpus is not None and lay_in.tp is not None and lay_in.pp is None \
            and lay_in.dp is None and isinstance(model, ModelSpec):
        from anchorgpu.planner.speed.serving_given_tp import stages_around_given_tp

        # the given TP kept: its replicas where they hold the users, else pipeline stages added around it
        around = stages_around_given_tp(model, w, prec, lay_in, gpu, ov)
        if around is None:
            return None
        why, chosen = around
        return chosen if why is None else evolve(chosen, assumptions=(why.reason, *chosen.assumptions))
    return None


def _fewest_training_gpus(model: ModelSpec, w: Workload, prec: PrecisionPlan, lay_in: Layout, gpu: GpuSpec,
                          ov: Overheads, efficiencies: Overrides | None = None) -> Plan | None:
    """The plan of the fastest layout on the fewest GPUs of :data:`TRAINING_GPU_COUNTS` that fits the job, or None
    when none does (the plan then shows one GPU and what would fit)."""
    fewest = fewest_fitting_gpus(model, w, prec, lay_in, gpu, ov, efficiencies=efficiencies)
    if fewest is None:
        return None
    gpus, fewer, (choice, chosen) = fewest
    if gpus == 1:
        return evolve(chosen, assumptions=(choice.reason, *chosen.assumptions))
    # fewer is 0 where the first count tried held it: the split given (--pp 5) allows no fewer
    count = said("GPU count not given: {gpus:,} {gpu}, the fewest that hold this job as asked{fewer}; pass --gpus for "
                 "more - more GPUs train faster, up to what the global batch splits into.", gpus=gpus, gpu=gpu.name,
                 fewer=_fewer_training_gpus_with(model, w, prec, evolve(lay_in, gpus=fewer), gpu, ov) if fewer
                 else said(", as few as the split given allows"))
    return evolve(chosen, assumptions=(count, choice.reason, *chosen.assumptions))


def _fewer_training_gpus_with(model: ModelSpec, w: Workload, prec: PrecisionPlan, layout: Layout, gpu: GpuSpec,
                              ov: Overheads) -> str:
    """``; {n} would hold it with CHANGE or CHANGE`` when ``fewer`` GPUs hold the job with a change that keeps their
    count (what ``plan --gpus {n}`` offers under "What would fit": a shorter sequence, offloaded optimizer state), else
    ``; {n} do not``."""
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.validate import resolve_format

    fewer = layout.gpus
    cannot = said("; {n:,} does not", n=fewer) if fewer == 1 else said("; {n:,} do not", n=fewer)
    try:
        p = plan(model, w, precision=prec, layout=layout, gpu=gpu, overheads=ov, suggest=False, choose_layout=False)
        fmt = resolve_format(model, w, prec, [])
    except InvalidWorkload:
        return cannot
    # the changes that keep this count (the search for more GPUs, already done by the caller, is left out)
    kept = suggestions_for(model, p.workload, p.precision, layout, p.layout, fmt, gpu, ov, asked=w, more_gpus=False)
    from anchorgpu.planner.closest_layout import offload_suggestions  # offload with the layout chosen, as plan does

    kept += tuple(offload_suggestions(model, w, prec, layout, gpu, ov))
    same = list(dict.fromkeys(s.change for s in kept if s.gpus == fewer and not s.change.startswith("--task")))
    if not same:
        return cannot
    changes = reduce(lambda head, tail: said("{head} or {tail}", head=head, tail=tail), same[:3])
    return said("; {n:,} would hold it with {changes}", n=fewer, changes=changes)
