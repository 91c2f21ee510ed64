"""Vectorized sweep: every hardware shape x server count x layout x precision x batch, in numpy. Pure.

The sweep evaluates memory fit and speed for many configurations at once. It never sees prices (the
recommend service joins prices afterwards). Its memory figures are the planner's own: per-model
constants come from the same scalar functions :func:`anchorgpu.planner.plan` uses
(:mod:`anchorgpu.planner.memory`, :mod:`anchorgpu.planner.formats`), computed once per distinct
(format, TP, PP) and then broadcast over the grid; training memory, which depends only on the layout,
comes from :func:`~anchorgpu.planner.plan` itself, once per distinct layout. Speed follows
:mod:`anchorgpu.planner.speed` (serving written out in array form in :mod:`anchorgpu.planner.sweep_serving`, training
in :mod:`anchorgpu.planner.sweep_training`; the layouts of the grid come from :mod:`anchorgpu.planner.sweep_grid`).
``tests/recommend`` checks both against the scalar functions on sampled configurations. The result's columns
are a :class:`~anchorgpu.planner.grid_columns.GridColumns`: each kept on the grid's axes, flattened when read; the
values it takes and gives are :mod:`anchorgpu.planner.sweep_types`'.

Grid (in this order, which is also the order of the result columns; the sweep is deterministic):
shape -> servers (1..max_servers whole servers) -> TP (powers of two up to the GPUs of one server,
valid for the model's heads) -> PP (powers of two: training the depths plan()'s chooser tries,
:func:`~anchorgpu.planner.train_sizes.train_pp_sizes`, serving up to ``max_pp``; across servers only where a fabric joins them)
-> DP (the rest of the GPUs) -> ZeRO stage (training) -> EP (training a mixture of experts) -> CP (training
sequences of 16,384 tokens or more: :func:`~anchorgpu.planner.train_sizes.train_cp_sizes`, as plan()'s chooser) -> weight
format -> KV-cache dtype -> concurrency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.engine_choice import engine_refusal
from anchorgpu.planner.formats import format_for_model, qlora_default_format, shipped_format
from anchorgpu.planner.global_batch import check_split
from anchorgpu.planner.grid_columns import GridColumns
from anchorgpu.planner.inference import request_media
from anchorgpu.planner.inputs import (
    KV_CACHE_DTYPES,
    Layout,
    PrecisionPlan,
    Workload,
    default_seq_tokens,
)
from anchorgpu.planner.media import encoder_equivalent_tokens, sequence_tokens, text_request
from anchorgpu.planner.plan import plan
from anchorgpu.planner.qlora_tp import stages_alone, task_runs_tp
from anchorgpu.planner.serving_queue import KV_SHOWN_REQUESTED, KV_SHOWN_RUNNING, QUEUED_PREFIX
from anchorgpu.planner.serving_request import asked_context, ladder_context_note
from anchorgpu.planner.speed.estimate import check_tokens_cover_a_step
from anchorgpu.planner.speed.mixed_attention import mixed_attention_sweep_line
from anchorgpu.planner.speed.pipeline import default_batch_tokens
from anchorgpu.planner.sweep_grid import layout_grid, valid_tp
from anchorgpu.planner.sweep_lines import (
    chosen_per_layout_line,
    expert_parallel_line,
    swept_line,
    training_stacks_line,
)
from anchorgpu.planner.sweep_request import context_speed_line, cross_speed_line, timed_request
from anchorgpu.planner.sweep_training import stated_layouts, training_columns
from anchorgpu.planner.sweep_types import (
    DEFAULT_INFERENCE_WEIGHTS,
    DEFAULT_KV_CACHES,
    HardwareShape,
    Progress,
    SweepResult,
    SweepSpec,
)
from anchorgpu.planner.sweep_vllm import vllm_sweep_line
from anchorgpu.planner.terms import overhead_rule_line
from anchorgpu.planner.workload_checks import validate_workload

__all__ = [
    "BATCH_LADDER",  # noqa: F822  (served by __getattr__ below, from sweep_ladder)
    "HardwareShape",  # re-exported from sweep_types: sweep_serving and sweep_serving_ticks import them from here
    "SweepSpec",
    "sweep",
    "valid_tp",
]


def __getattr__(name: str) -> tuple[int, ...]:
    """``BATCH_LADDER`` from :mod:`~anchorgpu.planner.sweep_ladder`, loaded when asked: a training sweep never loads
    the serving modules."""
    if name == "BATCH_LADDER":
        from anchorgpu.planner.sweep_ladder import BATCH_LADDER

        return BATCH_LADDER
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sweep(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec | None = None, *,
          progress: Progress | None = None, flatten: bool = True, fitting_only: bool = False) -> SweepResult:
    """Evaluate every configuration of ``spec`` on ``shapes``; see the module docstring for the grid.

    The workload is validated once through :func:`anchorgpu.planner.plan` (same one-line errors, same
    defaults); its assumptions and warnings that hold for every configuration are returned.
    ``progress(done, total)`` is called a few times for long sweeps. ``flatten=False`` leaves each result
    column on the grid's axes until it is read (:class:`~anchorgpu.planner.grid_columns.GridColumns`), for a
    caller that reads a few of them (``recommend``); the values are the same. ``fitting_only``: a serving sweep
    leaves out speed figures no configuration that fits reads (NaN in their place: ``serving_columns``), for a caller
    that reads none of a configuration that does not fit (``recommend``); every figure of one that fits is the same.
    """
    spec = spec or SweepSpec()
    w = spec.workload
    if not shapes:
        raise InvalidWorkload(said("nothing to sweep: no hardware shapes given"))
    if w.task not in ("inference", "train", "lora", "qlora"):
        raise InvalidWorkload(said("the sweep covers inference and training tasks, not {task!r}", task=w.task))
    validate_workload(w)  # first, as plan() checks it: trtllm for training is refused for the task, not for a GPU
    refused = engine_refusal(w.engine, (sh.gpu for sh in shapes), w.engine_source)  # as plan() refuses it
    if refused:
        raise InvalidWorkload(refused)
    training = w.task != "inference"
    if training:
        # QLoRA over a checkpoint that ships bitsandbytes 4-bit keeps it (as plan())
        weights = spec.weights or ((qlora_default_format(model).name,) if w.task == "qlora" else ("bf16",))
        kvs: tuple[str, ...] = ("bf16",)
        concs: tuple[int, ...] = (w.micro_batch or 1,)
    else:
        from anchorgpu.planner.sweep_ladder import BATCH_LADDER  # serving only: not loaded by a training sweep
        shipped = shipped_format(model).name  # the checkpoint's own format first, then the usual three
        weights = spec.weights or tuple(dict.fromkeys((shipped, *DEFAULT_INFERENCE_WEIGHTS)))
        kvs = spec.kv_caches or DEFAULT_KV_CACHES
        concs = spec.concurrencies or ((w.concurrency,) if w.concurrency is not None else BATCH_LADDER)
        if min(concs) < 1:
            raise InvalidWorkload(said("concurrency={concs}: at least one sequence", concs=min(concs)))
    for name in weights:
        format_for_model(model, name)  # unknown format: one-line error
    for k in kvs:
        if k not in KV_CACHE_DTYPES:
            raise InvalidWorkload(said("unknown kv-cache dtype {k!r}; valid: {KV_CACHE_DTYPES}", k=k,
                                       KV_CACHE_DTYPES=', '.join(KV_CACHE_DTYPES)))
    probe_w = replace(w, concurrency=concs[0] if w.concurrency is None else w.concurrency)
    if not training and (spec.prompt_tokens is not None or spec.output_tokens is not None):
        # the request as plan is given it: its prompt and output where given (None: plan's defaults within the
        # sequence); without a context each sequence is sized at prompt + output, and a request its context cannot
        # hold is refused, as plan() does both
        probe_w = replace(probe_w, prompt_tokens=spec.prompt_tokens, output_tokens=spec.output_tokens)
    # validate once with the scalar planner (context limit, task rules, formats allowed for the task)
    probe = plan(model, probe_w, precision=PrecisionPlan(weights=weights[0], kv_cache=kvs[0]),
                 layout=Layout(gpus=1, tp=1, pp=1, dp=1), suggest=False, choose_layout=False)
    ctx = probe.workload.context_tokens or model.max_context_tokens
    # the request plan times within that sequence: a text request by plan's rule (the ones given, else 256 output
    # tokens and a 1,024-token prompt within it)
    prompt, output = text_request(probe_w, ctx)
    media = (request_media(model, probe_w) if not training and (model.encoder is not None or model.image is not None)
             else None)
    # an encoder-decoder, images read through cross-attention or images in the context: timed with the request plan
    # times (sweep_request)
    cross = timed_request(model, probe_w, media, ctx)
    if cross is not None:
        prompt, output = cross.prompt_tokens, cross.output_tokens
    if training and spec.global_batch_tokens is not None:  # one line, as plan() says it, when no layout could split it
        check_split(spec.global_batch_tokens, dp=1, micro_batch=w.micro_batch or 1,
                    seq_tokens=default_seq_tokens(w, model.max_context_tokens))
    if training and spec.train_tokens is not None:  # a run shorter than one step is refused, as plan() refuses it
        check_tokens_cover_a_step(spec.train_tokens, spec.global_batch_tokens,
                                  default_batch_tokens(w.task, default_seq_tokens(w, model.max_context_tokens)))
    lay = layout_grid(model, shapes, training=training, max_pp=spec.max_pp, zero_stages=spec.zero_stages,
                      seq_tokens=default_seq_tokens(w, model.max_context_tokens) if training else 0,
                      train_stack=w.train_stack, launch_stages=w.launch_stages,
                      launch_tp_cp=w.launch_tp_cp, launch_tp=task_runs_tp(w.task),
                      stages_alone=stages_alone(w.task, w.train_stack))
    doubled = False  # the ladder run on past BATCH_LADDER
    floor = None  # serving over the ladder with a per-user limit: sweep_floor.UserLimits
    ladder_swept = not training and not spec.concurrencies and w.concurrency is None
    if ladder_swept:
        from anchorgpu.planner.sweep_ladder import concurrency_ladder
        # no concurrency named: the ladder doubles on past 512 while a layout swept could run that many users (its
        # engines' sequence cap x its replicas, within its memory), a sequence sized as plan sizes many at once
        many = replace(probe_w, concurrency=BATCH_LADDER[-1])
        ladder_tokens = asked_context(model, many, [])
        if media is not None:  # the sequence plan holds: a vision model's image tokens on top of the text
            ladder_tokens = sequence_tokens(media, many, ladder_tokens, [], model)
        concs = concurrency_ladder(model, shapes, w, lay, weights, kvs, ladder_tokens, media)
        doubled = len(concs) > len(BATCH_LADDER)
    # each concurrency's sequence as plan --concurrency N sizes it (no length given: one sequence at the model's
    # window, more at the request timed), in the order of ``concs``
    contexts = () if training else _contexts(model, w, probe_w, concs, ctx, weights[0], kvs[0])
    if training:
        cols = training_columns(model, shapes, spec, lay, weights, progress)
        inner = len(weights)
    else:
        # the serving columns' modules (and the ladder's, SGLang's, attention DP's), loaded only by a serving sweep:
        # a training recommend's cold start does without them (tests/planner/test_cold_start.py)
        from anchorgpu.planner.sweep_attention_dp import with_attention_dp
        from anchorgpu.planner.sweep_floor import UserLimits
        from anchorgpu.planner.sweep_serving import serving_columns

        # over the ladder, each layout also at the most sequences it runs (sweep_saturation): one rung a precision
        saturated = len(weights) * len(kvs) if ladder_swept else 0  # entries on the concurrency axis
        # and with a per-user speed floor or TTFT limit, at the most users it runs within them (sweep_floor): one rung
        # a precision
        limits = UserLimits(spec.min_tokens_per_s_per_user, spec.max_ttft_s)
        floor = limits if ladder_swept and limits.any else None
        saturated *= 1 if floor is None else 2
        cols = serving_columns(model, shapes, spec, lay, weights, kvs, concs, contexts, prompt, output, progress,
                               media, cross, saturation=bool(saturated), limits=floor, fitting_only=fitting_only)
        inner = len(weights) * len(kvs) * (len(concs) + saturated)
        # a mixture of experts: attention data parallelism on one server, planned whole
        lay, cols = with_attention_dp(model, shapes, spec, lay, cols, weights, kvs, concs, probe_w, contexts, prompt,
                                      output, saturated=bool(saturated), limits=floor)
    n = len(lay) * inner
    grid_shape = ((len(lay), len(weights)) if training
                  else (len(lay), len(weights), len(kvs), len(concs) + saturated))
    axes = (1,) * (len(grid_shape) - 2)  # per layout (L, 1, ...), per weight format (1, W, ...)
    grid: dict[str, npt.NDArray[Any]] = {
        name: values.reshape(-1, 1, *axes) for name, values in (
            ("shape", lay.shape), ("servers", lay.servers), ("gpus", lay.gpus), ("tp", lay.tp), ("pp", lay.pp),
            ("dp", lay.dp), ("zero", lay.zero), ("ep", lay.ep), ("cp", lay.cp))}
    grid["weights"] = np.arange(len(weights), dtype=np.int64).reshape(1, -1, *axes)
    grid["kv_cache"] = (np.zeros((1, 1), dtype=np.int64) if training
                        else np.arange(len(kvs), dtype=np.int64).reshape(1, 1, -1, 1))
    grid.update(cols)
    columns = GridColumns(grid, grid_shape, flatten=flatten)
    if progress:
        progress(n, n)
    # the probe's layout and KV dtype are one of the grid's: the sweep states its own below
    # (and a training sweep chooses each layout's micro-batch and recompute level: it states that below)
    # (and its runtime overhead is one GPU's, no NCCL: a training sweep states the rule each layout's follows)
    # (and users past its one GPU's sequence cap: every row recommend keeps runs its users at once)
    own = ("Layout not given", "KV cache: ", QUEUED_PREFIX) + (
        ("Micro-batch not given", "Activation recompute: ", "Runtime overhead") if training else ())
    # (and SGLang's settings follow each GPU and layout: the probe, planned without a GPU, names its fallback's)
    sglang = not training and w.engine == "sglang"
    # (and vLLM's scheduler defaults follow each GPU's size: the probe's line names one GPU's where they differ)
    vllm = None if training or w.engine != "vllm" else vllm_sweep_line(shapes, w)
    sized = dict(zip(concs, contexts, strict=True)) if contexts else {}
    ladder = ladder_context_note(model.max_context_tokens, sized) if len(set(contexts)) > 1 else None
    if sglang:
        from anchorgpu.planner.sweep_sglang import sglang_sweep_line
    assumptions = [ladder if ladder and a.startswith("Context not given") else
                   sglang_sweep_line(shapes, lay, w, model.mla is not None)
                   if sglang and a.startswith("Serving engine sized like SGLang") else
                   vllm if vllm and a.startswith("Serving engine sized like vLLM:") else
                   a.replace(KV_SHOWN_RUNNING, KV_SHOWN_REQUESTED) if a.startswith(KV_SHOWN_RUNNING) else
                   training_stacks_line(a, (sh.gpu for sh in shapes))
                   for a in probe.assumptions if not a.startswith(own)]
    if training:
        assumptions.append(overhead_rule_line(spec.overheads))
    assumptions.append(swept_line(len(shapes), lay, weights, kvs, concs, contexts, training=training,
                                  doubled=doubled, ladder_swept=ladder_swept,
                                  floor=floor))
    if training:
        assumptions.append(chosen_per_layout_line(w, model.moe is not None))
    if model.moe is not None:
        assumptions.append(expert_parallel_line(model, lay, w, training=training,
                                                scaled=not spec.concurrencies and w.concurrency is None))
    if not training and (mixed := mixed_attention_sweep_line(model, (sh.gpu for sh in shapes), w.engine)):
        assumptions.append(mixed)  # vLLM's FlashAttention 2 reread (speed.mixed_attention)
    if cross is not None and media is not None:
        assumptions.append(cross_speed_line(model, cross, media) if media.cross_tokens
                           else context_speed_line(model, cross, media))
    elif not training:
        assumptions.append(said(
            "Decode speed at {cached:,} cached tokens per sequence (prompt {prompt:,} + half of {output:,} output "
            "tokens); prefill of one {prompt:,}-token prompt.", cached=prompt + output // 2, prompt=prompt,
            output=output))
    warnings = tuple((x.code, x.message) for x in probe.warnings
                     if x.code in ("quantization_quality_unchecked", "context_beyond_model_limit",
                                   "checkpoint_restore_unverified"))
    return SweepResult(
        task=w.task, evaluated=n, shapes=tuple(shapes), weights=tuple(weights), kv_caches=kvs,
        context_tokens=ctx, prompt_tokens=prompt, output_tokens=output, columns=columns,
        concurrency_contexts=tuple(sized.items()),
        pipeline_layouts=stated_layouts(model, lay.pp.tolist()) if training else (),
        assumptions=tuple(assumptions), warnings=warnings,
        encoder_prefill_equivalent_tokens=(encoder_equivalent_tokens(media, model)
                                           if cross is not None and media is not None else 0),
        encoder_input_tokens=media.cross_tokens if cross is not None and media is not None else 0,
    )


def _contexts(model: ModelSpec, w: Workload, probe_w: Workload, concs: tuple[int, ...], ctx: int, weights: str,
              kv: str) -> tuple[int, ...]:
    """The tokens a sequence is sized at for each of ``concs``, as plan sizes it at that concurrency: the probe's
    ``ctx`` where the workload names its concurrency or a length (or each of ``concs`` asks the same as the probe),
    else one probe plan per distinct request (:func:`~anchorgpu.planner.serving_request.asked_context`: with no length
    given, one sequence at the model's window and more at the request the speed figures time), whose sequence (a
    vision model's image tokens added) is the one plan holds."""
    if w.concurrency is not None:
        return (ctx,) * len(concs)
    # (evolve: dataclasses.replace's copy without its per-field cost, the same values)
    asked = {c: asked_context(model, evolve(probe_w, concurrency=c), []) for c in dict.fromkeys(concs)}
    held = {asked[probe_w.concurrency or concs[0]]: ctx}
    for c, tokens in asked.items():
        if tokens not in held:
            other = plan(model, replace(probe_w, concurrency=c), precision=PrecisionPlan(weights=weights, kv_cache=kv),
                         layout=Layout(gpus=1, tp=1, pp=1, dp=1), suggest=False, choose_layout=False)
            held[tokens] = other.workload.context_tokens or model.max_context_tokens
    return tuple(held[asked[c]] for c in concs)


