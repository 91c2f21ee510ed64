"""``plan()``: per-GPU memory, fit verdict, capacity, warnings and suggestions for one configuration. Pure.

It resolves the stated defaults, picks the task's memory terms from :mod:`anchorgpu.planner.memory`
and :mod:`anchorgpu.planner.diffusion`, compares the per-GPU total with the GPU (inference: with the
serving engine's budget, vLLM profile-then-fill), and says what it assumed and what to check.
It reads no files, clock or environment, and renders nothing.

Its parts, by domain: :mod:`~anchorgpu.planner.validate` (inputs, weight format, layout; with
:mod:`~anchorgpu.planner.workload_checks` and :mod:`~anchorgpu.planner.layout_resolution`),
:mod:`~anchorgpu.planner.inference`, :mod:`~anchorgpu.planner.training` and
:mod:`~anchorgpu.planner.diffusion_plan` (each task's memory terms), :mod:`~anchorgpu.planner.checks`
(warnings) and :mod:`~anchorgpu.planner.suggest` (what would fit, the layout chosen for the user); the
answer's types live in :mod:`~anchorgpu.planner.result` and are re-exported here.
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import evolve, evolver
from anchorgpu.planner.checks import BASE_CHECK, plan_warnings
from anchorgpu.planner.closest_layout import closest_training_layout
from anchorgpu.planner.diffusion_plan import plan_diffusion
from anchorgpu.planner.engine_choice import engine_refusal, engine_weights_refusal
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.global_batch import check_whole_sequences, splits, unfit_fallback_refusal
from anchorgpu.planner.headroom import fit_headroom_warnings
from anchorgpu.planner.inference import plan_inference
from anchorgpu.planner.inputs import TRAINING_TASKS, Layout, Overheads, PrecisionPlan, Workload, default_seq_tokens
from anchorgpu.planner.layout_choice import choose_layout_plan, training_layout_open
from anchorgpu.planner.media import validate_media
from anchorgpu.planner.result import MemoryBreakdown, Plan, ResolvedLayout, Suggestion, new_plan
from anchorgpu.planner.serving_handoff import HANDED
from anchorgpu.planner.speed.assumption_lines import expert_tp_line
from anchorgpu.planner.suggest import suggestions_for
from anchorgpu.planner.training import check_training_seq, plan_training
from anchorgpu.planner.training_gpu_counts import training_gpu_counts
from anchorgpu.planner.validate import (
    check_kv_cache_task,
    check_layout_counts,
    check_layout_for_model,
    resolve_format,
    resolve_kv_cache,
    resolve_layout,
    validate_workload,
)
from anchorgpu.planner.warnings import (
    NO_CHANGE_FITS_CHECK,
    NO_COUNT_FITS_CHECK,
    WARNING_CODES,
    PlanWarning,
    make_warning,
)
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.speed.overrides import Overrides

__all__ = ["Layout", "MemoryBreakdown", "Overheads", "Plan", "PrecisionPlan", "ResolvedLayout", "Suggestion", "Workload",
           "plan"]


@lru_cache(maxsize=1024)
def _checkpoint_warning(checkpoint_bytes: int) -> PlanWarning:
    """The checkpoint-size warning (frozen, so shared): a model's checkpoint size recurs across its plans, and a said
    line costs a ``str.format`` of its template each time it is built."""
    return make_warning("checkpoint_restore_unverified",
                        said("a checkpoint takes {size}: test restoring it", size=fmt_bytes(checkpoint_bytes)))


# the defaults of the frozen inputs, built once
_WORKLOAD, _PRECISION, _LAYOUT, _OVERHEADS = Workload(), PrecisionPlan(), Layout(), Overheads()
_BASE_CHECKS = (BASE_CHECK,)  # what to check when nothing was warned about


def _check_fallback_batch(model: ModelSpec, w: Workload, lay: ResolvedLayout, gpu: GpuSpec) -> None:
    """Where a layout was open for the user but none that splits a stated batch fits ``gpu``, and the layout planned in
    its place does not split it either: say that, rather than refuse a layout the user never gave."""
    if w.task not in ("train", "lora", "qlora") or w.global_batch_tokens is None:
        return
    seq, mb = default_seq_tokens(w, model.max_context_tokens), w.micro_batch or 1
    if not splits(w.global_batch_tokens, dp=lay.dp, micro_batch=mb, seq_tokens=seq):
        raise InvalidWorkload(unfit_fallback_refusal(w.global_batch_tokens, dp=lay.dp, micro_batch=mb, seq_tokens=seq,
                                                     gpu_name=gpu.name))


_code_of = attrgetter("code")


@lru_cache(maxsize=256)
def _checks_for(codes: tuple[str, ...]) -> tuple[str, ...]:
    """What to check for warnings of these codes, in order and each once, the base check last: a handful of code
    sets recur across every plan (memoised on them)."""
    return tuple(dict.fromkeys([WARNING_CODES[code].check for code in codes] + [BASE_CHECK]))


@lru_cache(maxsize=256)
def _with_weights(weights: str, kv_cache: str) -> PrecisionPlan:
    """The precision planned: the weight format and KV dtype resolved. They are all of a :class:`PrecisionPlan`'s
    fields (``tests/planner/test_evolve.py`` holds it), so whatever precision was asked the answer is theirs
    alone: memoised on the two names, every plan of that format and KV dtype shares one (a memo on the asked
    precision's identity missed for every precision built afresh)."""
    return _planned_formats(_PRECISION, weights=weights, kv_cache=kv_cache)


_planned_formats = evolver(PrecisionPlan, "weights", "kv_cache")  # evolve of those two fields, made once


@lru_cache(maxsize=64)
def _moe_resident_line(experts: int, ep: int) -> str:
    """Where a mixture of experts' experts live: split over EP, or with TP (one line, memoised)."""
    if ep > 1:
        return said("MoE: all {experts} experts per layer resident, split over EP {ep}; compute follows the active "
                    "experts.", experts=experts, ep=ep)
    return said("MoE: all {experts} experts per layer resident, split with TP; compute follows the active experts.",
                experts=experts)


def plan(
    model: ModelSpec | DiffusionPipelineSpec,
    workload: Workload | None = None,
    *,
    precision: PrecisionPlan | None = None,
    layout: Layout | None = None,
    gpu: GpuSpec | None = None,
    overheads: Overheads | None = None,
    suggest: bool = True,
    choose_layout: bool = True,
    efficiencies: Overrides | None = None,
) -> Plan:
    """Plan one configuration: per-GPU bytes by term, fit verdict and capacity, with assumptions and warnings.

    Defaults (each stated in ``Plan.assumptions`` when used): one GPU; without a layout, inference shards by
    TP across the GPUs of one server (the largest valid TP <= 8 dividing the GPU count, the rest as
    replicas) and training replicates by DP, unless a layout is chosen for the user on a named GPU
    (:mod:`anchorgpu.planner.speed.layouts`); weights bf16 (nf4-dq for QLoRA), or as the checkpoint ships them; the KV
    cache bf16, or the FP8 one the checkpoint ships (on a GPU with FP8 hardware); inference checks one sequence
    of the model's context length (many sequences of no given length: the default request each); a diffusion
    model plans the diffusion task. ``efficiencies`` (the user's ``--mfu``/``--mbu``) rank the training layouts chosen
    for the user and time the suggestions' training speeds as they time the plan's own
    (:func:`~anchorgpu.planner.speed.estimate.plan_performance`).

    Raises :class:`anchorgpu.errors.InvalidWorkload` (or ``PartialGpuRequested``) with a one-line reason.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> p = plan(llama_3_1_8b(), Workload(context_tokens=8192))
    >>> p.per_gpu.kv_cache_bytes, p.fits
    (1073741824, None)
    """
    w = asked_w = workload or _WORKLOAD
    prec = precision or _PRECISION
    lay_in = layout or _LAYOUT
    ov = overheads or _OVERHEADS
    assumptions: list[str] = []
    fallback: GpuSpec | None = None
    asked_layout: Layout | None = None  # the layout asked, where the closest layout tried is planned in its place
    searched_on: GpuSpec | None = None  # the GPU a layout search ran on and chose nothing
    lm = model if isinstance(model, ModelSpec) else None  # a language model (None: a diffusion pipeline), asked once
    if isinstance(model, DiffusionPipelineSpec) and w.task != "diffusion":
        if w.task != "inference":
            raise InvalidWorkload(said("{model_name} is a diffusion pipeline: use --task diffusion (not {task})",
                                       model_name=model.name, task=w.task))
        w = evolve(w, task="diffusion")
        assumptions.append("A diffusion pipeline: planned as task diffusion (image generation).")
    if lm is not None and w.task == "diffusion":
        raise InvalidWorkload(said("--task diffusion needs a diffusion pipeline; {lm_name} is a language model",
                                   lm_name=lm.name))
    validate_workload(w)
    training = w.task in TRAINING_TASKS  # the task asked once: it decides several checks below
    if prec.kv_cache in ("fp8", "nvfp4"):  # never resolved for a task without a KV cache (its suggestions re-plan bf16)
        check_kv_cache_task(prec.kv_cache, w.task)
    if lm is not None:
        validate_media(lm, w)
    untrained = gpu.training_refusal(w.train_precision) if gpu is not None and training else None
    if untrained:  # no FP8/FP4 tensor cores, or no framework that trains in that precision there (gpus.toml)
        raise InvalidWorkload(untrained)
    refused = engine_refusal(w.engine, (gpu,), w.engine_source) if gpu is not None else None
    if refused:
        raise InvalidWorkload(refused)
    if lm is not None and training:  # whole sequences, before any layout is chosen
        check_whole_sequences(w.global_batch_tokens, default_seq_tokens(w, lm.max_context_tokens))  # for it
        check_training_seq(lm, w)  # a search would drop every candidate for it and refuse for another reason
    format_lines: list[str] | None = None  # resolve_format's lines, where it ran before the search
    if choose_layout and gpu is not None and lm is not None:
        check_layout_counts(lay_in)  # a count below 1 is refused before any layout is chosen around it
        check_layout_for_model(lm, lay_in, w)  # so is a flag the model rules out (--ep on a dense model)
        # a format the task cannot use is refused before the search (each of its thousands of candidates would refuse it)
        format_lines = []
        fmt = resolve_format(model, w, prec, format_lines)
        _check_engine_weights(w, fmt, gpu, lm.moe is not None)
        # whether a training layout leaves anything to choose, asked once: the search runs only then (it returns None
        # for a training layout given whole) and the fallback below reads it again
        layout_open = training and training_layout_open(lay_in, w)
        chosen = choose_layout_plan(lm, w, prec, lay_in, gpu, ov, efficiencies) if layout_open or not training else None
        if chosen is not None:
            return evolve(chosen, assumptions=(*assumptions, *chosen.assumptions))
        searched_on = gpu  # where the GPU count was left open, none tried held the job if the plan misses
        if layout_open:
            fallback = gpu  # a layout was open but none chosen fits: plain DP, or the rest as given, is planned
            # on the GPUs given, the closest layout tried instead (closest_layout), what was asked kept for the
            # suggestions (more GPUs, offload: chosen as plan answers them)
            near = closest_training_layout(lm, w, prec, lay_in, gpu, ov) if lay_in.gpus is not None else None
            if near is not None:
                asked_layout, asked_w = lay_in, w
                lay_in, w = near.layout, near.workload
                assumptions.append(near.line)
    if format_lines is None:
        fmt = resolve_format(model, w, prec, assumptions)
        _check_engine_weights(w, fmt, gpu, lm is not None and lm.moe is not None)
    else:  # the same answer and lines again (a pure function of the same arguments): not asked twice
        assumptions += format_lines
    kv = resolve_kv_cache(model, w, prec, gpu, assumptions)
    if prec.weights != fmt.name or prec.kv_cache != kv:
        prec = _with_weights(fmt.name, kv)
    lay = resolve_layout(model, w, lay_in, assumptions)
    counted_note = len(assumptions)  # where the counted search's sentence goes, should the plan not fit
    if fallback is not None and lm is not None:
        _check_fallback_batch(lm, w, lay, fallback)
    warnings: list[PlanWarning] = []
    if isinstance(model, DiffusionPipelineSpec):
        terms = plan_diffusion(model, gpu, w, fmt, lay, ov, assumptions)
    elif w.task == "inference":
        terms = plan_inference(model, gpu, w, prec, fmt, lay, ov, assumptions, warnings)
    else:
        terms = plan_training(model, gpu, w, fmt, lay, ov, assumptions, warnings)
    if lm is not None and lm.moe is not None:
        assumptions.append(_moe_resident_line(lm.moe.num_experts, lay.ep))
        if w.task == "inference" and 1 < lay.ep < lay.tp:
            assumptions.append(expert_tp_line(lm.moe.num_experts, lay.tp, lay.ep))
    warnings += plan_warnings(terms.workload, lay, fmt, prec, gpu, model)  # the layout's, then the precision's
    if terms.checkpoint_bytes is not None:
        warnings.append(_checkpoint_warning(terms.checkpoint_bytes))
    total = terms.per_gpu.total_bytes
    fits = headroom = None
    if terms.budget_bytes is not None:
        headroom = terms.budget_bytes - total
        fits = headroom >= 0
        if fits and training:  # the eager stack's warning, else the thin headroom's (recommend's training rows carry the same)
            warnings.extend(fit_headroom_warnings(total, headroom, task=w.task,
                                                  activations_bytes=terms.per_gpu.activations_bytes,
                                                  recompute=terms.workload.recompute or "none",
                                                  train_stack=w.train_stack,
                                                  fragmentation_fraction=ov.fragmentation_fraction,
                                                  language_model=lm is not None))
        if not fits:
            warnings.append(make_warning("does_not_fit", f"needs {fmt_bytes(total)} per GPU, "
                                         f"{fmt_bytes(-headroom)} more than the {fmt_bytes(terms.budget_bytes)} available"))
    else:
        warnings.append(make_warning("no_gpu_given", "no GPU named: fit and capacity not evaluated"))
    checks = _checks_for(tuple(map(_code_of, warnings))) if warnings else _BASE_CHECKS
    # the counted search's sentence: only a plan that does not fit says it, so only such a plan forms it
    counted = _counted_search(w, lay_in, searched_on) if searched_on is not None and fits is False else None
    suggestions: tuple[Suggestion, ...] = ()
    if suggest and fits is False and gpu is not None:
        suggestions = suggestions_for(model, terms.workload, prec, lay_in, lay, fmt, gpu, ov, asked=asked_w,
                                      notes=assumptions, short_bytes=-(headroom or 0), efficiencies=efficiencies,
                                      asked_layout=asked_layout)
        if not suggestions:  # the check would point at suggestions that are not there
            listed = WARNING_CODES["does_not_fit"].check
            # no layout flag to drop where the planner chose the count and found none that holds the job
            instead = NO_COUNT_FITS_CHECK if counted and evolve(lay_in, gpus=None) == _LAYOUT else NO_CHANGE_FITS_CHECK
            checks = tuple(instead if check == listed else check for check in checks)
    if fits is False and counted:
        assumptions.insert(counted_note, counted)
    if lay.gpus > 1 and training and lay.zero == 0 and lay_in.zero is None \
            and not lay_in.fsdp:
        assumptions.append(f"Layout not chosen for the user: {'none of the layouts fits' if gpu is not None else 'no GPU named'};"
                           f" planned as {_unchosen(lay)}.")
    planned = new_plan(  # every field but extra by position, in Plan's order (new_plan's comment)
        model, gpu, terms.workload, prec, lay, terms.per_gpu, terms.breakdown, terms.budget_bytes, fits, headroom,
        terms.max_concurrency, terms.max_context_tokens, terms.checkpoint_bytes, tuple(assumptions),
        tuple(warnings), checks, suggestions,
    )
    if terms.serving is not None:  # what its speed estimate would derive again from it (serving_handoff.hand_over,
        HANDED[0] = (planned, terms.serving)  # inline)
    return planned


def _unchosen(lay: ResolvedLayout) -> str:
    """What a training layout nobody chose is planned as: plain data parallelism, or the split given around it."""
    if lay.tp == lay.pp == lay.cp == 1:
        return "plain data parallelism"
    split = " x ".join(f"{name} {n}" for name, n in (("TP", lay.tp), ("PP", lay.pp), ("CP", lay.cp), ("DP", lay.dp))
                       if n and n > 1)
    return f"{split} as given, without sharding"


def _counted_search(w: Workload, lay_in: Layout, gpu: GpuSpec) -> str | None:
    """The sentence a plan that does not fit carries where the planner chose the GPU count (none given) and no count
    it tries held the job (the plan then shows one GPU): which counts were tried and what to do; None where the count
    was not the planner's to choose."""
    if w.task in ("train", "lora", "qlora"):
        if lay_in.gpus is not None or None not in (lay_in.tp, lay_in.pp, lay_in.dp) or not training_layout_open(lay_in, w):
            return None
        counts = training_gpu_counts(lay_in)  # multiples of the split given (--pp 3: 3 ... 768)
        top, held, shown = counts[-1], "this job as asked", counts[0]
    elif w.task == "inference" and lay_in.gpus is None and lay_in.tp is None and lay_in.pp is None \
            and lay_in.dp is None:
        from anchorgpu.planner.speed.serving_layouts import SERVING_GPU_COUNTS

        top, users, shown = SERVING_GPU_COUNTS[-1], w.concurrency or 1, 1
        held = f"{users:,} sequence{'s' if users > 1 else ''} as asked"
    else:
        return None
    planned = "one GPU is" if shown == 1 else f"the {shown:,} GPUs of the split given are"
    return (f"GPU count not given: no count of {gpu.name} up to {top:,} holds {held}, so {planned} planned to show "
            "what it needs; pass --gpus for more, or take GPUs with more memory.")


def _check_engine_weights(w: Workload, fmt: WeightFormat, gpu: GpuSpec | None, moe: bool = False) -> None:
    """Refuse serving weights the engine has no kernels for on ``gpu`` (:func:`~anchorgpu.planner.engine_choice.
    engine_weights_refusal`: TensorRT-LLM's FP8 and FP4 below Hopper or Blackwell; NVFP4 experts (``moe``) on AMD
    GPUs), naming the ways out."""
    if gpu is None or w.task != "inference" or (w.engine != "trtllm" and fmt.name != "nvfp4"):  # the usual case
        return
    why = engine_weights_refusal(w.engine, fmt.name, fmt.native, gpu, w.engine_source, moe=moe)
    if why and w.engine != "trtllm":  # NVFP4 experts on AMD: no engine runs them there
        raise InvalidWorkload(said("{why}; use --weights fp8 or mxfp4 (a checkpoint in that format), or an NVIDIA "
                                   "GPU", why=why))
    if why:
        vllm = "--recipe vllm" if w.engine_source == "recipe" else "--engine vllm"
        # a GGUF or NF4 file (no native math): the 4-bit format TensorRT-LLM loads; else FP8 where the GPU has it
        other = "int4-awq" if fmt.native is None else "fp8" if gpu.fp8_hardware and fmt.native != "fp8" else "bf16"
        raise InvalidWorkload(said("{why}; use --weights {other} (the checkpoint converted to {other}), or {vllm} "
                                   "(its weight-only kernels run them there)", why=why, other=other, vllm=vllm))
