"""Memory of a serving engine (task inference), sized like vLLM V1 (or TensorRT-LLM with ``engine="trtllm"``, SGLang
with ``engine="sglang"``): on the engine's footprint and budget (:mod:`~anchorgpu.planner.serving_engine`), the KV
cache and recurrent state of the requested sequences, and the capacity left (most sequences, longest context) under
``gpu_memory_utilization`` (TensorRT-LLM: that fraction of the memory free after its profiling pass; SGLang:
``mem_fraction_static`` of the memory free at start holds the weights and the KV pool). Pure."""

from __future__ import annotations

import math
from dataclasses import replace

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import evolver, memo_on_frozen
from anchorgpu.planner.engine_limits import DEFAULT_BLOCK_SIZE_TOKENS, block_size_of
from anchorgpu.planner.engine_startup import (
    sglang_derived_fraction_refusal,
    sglang_reserve_bytes,
    sglang_reserve_refusal,
    startup_refusal,
)
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.inputs import KV_CACHE_DTYPES, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.media import (
    NO_MEDIA,
    cross_kv_bytes,
    encdec_request,
    encdec_speed_line,
    encoder_equivalent_tokens,
    resolve_media,
    sequence_tokens,
    speed_request,
    text_request,
)
from anchorgpu.planner.result import ResolvedLayout, new_memory_breakdown
from anchorgpu.planner.serving_engine import (
    EngineMemory,
    engine_defaults,
    engine_line,
    engine_memory,
    sglang_start_free,
)
from anchorgpu.planner.serving_handoff import new_serving_terms
from anchorgpu.planner.serving_queue import queued_line, running_sequences
from anchorgpu.planner.serving_request import (
    DEFAULT_REQUEST_NOTE,
    asked_context,
    attention_dp_groups_line,
    check_request_within_context,
    encoder_prompt_tokens,
    request_media,
)
from anchorgpu.planner.sglang import max_running_requests, sglang_gpu_memory_bytes
from anchorgpu.planner.terms import TaskTerms, new_task_terms
from anchorgpu.planner.warnings import PlanWarning, make_warning
from anchorgpu.units import at_least, fmt_bytes

__all__ = ["DEFAULT_REQUEST_NOTE", "EngineMemory", "engine_defaults", "engine_line", "engine_memory", "plan_inference", "request_media"]

# the engine's memory lines, said once here: a said line is a ``str.format`` of its template each time it is made
KV_REQUESTED_LINE = said("KV cache shown is what the requested sequences need; the serving engine reserves all the KV "
                         "cache its memory setting allows at start-up (kv_cache_capacity_bytes in the breakdown).")
KV_RUNNING_LINE = said("KV cache shown is what the sequences running at once need; the serving engine reserves all the "
                       "KV cache its memory setting allows at start-up (kv_cache_capacity_bytes in the breakdown).")
TRTLLM_PROFILE_LINE = said(
    "The profiling pass's peak holds the weights, a step of max_num_tokens prompt tokens, non-torch memory and the "
    "CUDA context; the KV cache is free_gpu_memory_fraction of what is left (TensorRT-LLM _torch/pyexecutor/_util.py "
    "cal_max_tokens), so engine_budget_bytes is that peak less the CUDA context plus the KV cache.")
VLLM_CONTEXT_LINE = said("CUDA context sits outside the engine budget (in the 1 - gpu_memory_utilization margin); CUDA "
                         "graphs are inside the profiled activation peak (vLLM V1).")


@memo_on_frozen
def _longest_kv_context(model: ModelSpec, capacity: int, seqs: int, bytes_per_value: float, tp: int, pp: int,
                        block: int, limit: int, attention_dp: bool = False) -> int:
    """:func:`~anchorgpu.planner.memory.longest_kv_context` (a search over block counts), memoised on the (frozen)
    model and its counts: the capacity is the layout's, so every plan of a layout at that many sequences per
    replica asks the same."""
    return mm.longest_kv_context(model, capacity=capacity, sequences=seqs, bytes_per_value=bytes_per_value, tp=tp,
                                 pp=pp, block_size=block, limit=limit, attention_dp=attention_dp)


def state_assumption(model: ModelSpec, per_sequence_bytes: int) -> str:
    """One line on the recurrent state a hybrid or state-space model keeps per sequence."""
    rec = model.recurrent
    assert rec is not None
    dtype = ("16-bit (the model dtype, as vLLM's mamba_cache_dtype=auto keeps it)" if rec.ssm_bytes_per_value is None
             else f"16-bit convolution state, {rec.ssm_bytes_per_value}-byte SSM state (the model's own setting)")
    kv = (f"KV cache only on the {model.attention_layers} attention layer(s)" if model.attention_layers
          else "no KV cache (no attention layer)")
    return (f"Recurrent state: {fmt_bytes(per_sequence_bytes)} per sequence per GPU at any length, over "
            f"{model.recurrent_layers} {rec.mixer} layer(s), {dtype}; {kv}; counted with the KV cache, as vLLM "
            f"allocates both from one pool.")


# the workload as planned: its context, concurrency, engine limits and speed prompt resolved (evolve, made once)
_resolved = evolver(Workload, "context_tokens", "concurrency", "max_num_batched_tokens", "max_num_seqs", "prompt_tokens",
                    "gpu_memory_utilization", "block_size_tokens", "output_tokens")


def plan_inference(model: ModelSpec, gpu: GpuSpec | None, w: Workload, precision: PrecisionPlan, fmt: WeightFormat,
               lay: ResolvedLayout, ov: Overheads, assumptions: list[str], warnings: list[PlanWarning]) -> TaskTerms:
    limit = model.max_context_tokens
    check_request_within_context(w, limit, model)
    ctx = asked_context(model, w, assumptions)
    media = NO_MEDIA  # a text-only model's request: nothing to resolve (plan() has refused images given to it)
    text_ctx = ctx
    if model.encoder is not None or model.image is not None:
        media = resolve_media(model, w, assumptions, prompt_tokens=encoder_prompt_tokens(w))
        ctx = sequence_tokens(media, w, ctx, assumptions, model)
    if ctx > limit:
        if not w.allow_long_context:
            # the image tokens a sized request carries on top of its text are named, as the user typed neither sum
            images = ctx - text_ctx
            if images <= 0:
                what = said("context {ctx:,}", ctx=ctx)
            elif media.cross_tokens:  # mllama: one text token an image
                what = said("{text:,} text + {images:,} image placeholder tokens = {ctx:,}", text=text_ctx, images=images,
                            ctx=ctx)
            else:
                what = said("{text:,} text + {images:,} image tokens = {ctx:,}", text=text_ctx, images=images, ctx=ctx)
            fewer = ("" if images <= 0 else said(", or fewer or smaller images") if w.images_per_request is not None
                     else said(", or --images-per-request 0 for text only: a vision model's request has 1 image by "
                               "default"))
            raise InvalidWorkload(said("{what} exceeds {model_name}'s limit of {limit:,} tokens (add "
                                       "--allow-long-context to plan anyway{fewer})", what=what,
                                       model_name=model.name, limit=limit, fewer=fewer))
        warnings.append(make_warning("context_beyond_model_limit", f"context {ctx:,} > model limit {limit:,}"))
    concurrency = w.concurrency or 1
    if w.concurrency is None:
        assumptions.append("Concurrency not given: checked for one sequence; max_concurrency reports the most.")
    per_replica = math.ceil(concurrency / lay.dp)
    if lay.dp > 1:
        assumptions.append(f"{lay.dp} replicas share the {concurrency:,} sequences: at most {per_replica:,} per replica."
                           if concurrency >= lay.dp else
                           f"{lay.dp} replicas for {concurrency:,} sequence{'' if concurrency == 1 else 's'}: "
                           f"{lay.dp - concurrency:,} of them idle.")
    # attention DP (EP wider than TP; ResolvedLayout.attention_dp), asked once: without it one group, no ranks
    adp_ranks = lay.attention_dp_ranks if lay.ep > lay.tp else 0
    if lay.ep > lay.tp and (groups := lay.attention_dp_groups) > 1:  # copies of one engine's EP group, on own GPUs
        assumptions.append(attention_dp_groups_line(groups, lay.tp, adp_ranks, lay.ep, lay.gpus))
    utilization = w.gpu_memory_utilization
    if (refusal := startup_refusal(w.engine, gpu, utilization, ov)) is not None:
        raise InvalidWorkload(refusal)
    # block_size_of(w), its usual answers inline: the page given, else vLLM's (and TensorRT-LLM's) 16 tokens
    block = (w.block_size_tokens if w.block_size_tokens is not None else DEFAULT_BLOCK_SIZE_TOKENS
             if w.engine != "sglang" else block_size_of(w))
    em = engine_memory(model, fmt, gpu, ov, lay.tp, lay.pp, lay.ep, w.engine, w.max_num_batched_tokens, w.max_num_seqs,
                       utilization, type(utilization), block, adp_ranks)
    tokens, seqs, weights, prefill, sampler, non_torch = em.tokens, em.seqs, em.weights, em.prefill, em.sampler, \
        em.non_torch
    if em.sglang is not None and gpu is not None and (refusal := sglang_derived_fraction_refusal(
            em.utilization, em.sglang.derived, em.sglang.reserve_mib, (sglang_gpu_memory_bytes(gpu) or 0) / 2**20,
            tokens)) is not None:
        raise InvalidWorkload(refusal)
    if em.sglang is not None and gpu is not None and (refusal := sglang_reserve_refusal(
            em.utilization, em.sglang.derived, sglang_start_free(em, gpu), prefill, tokens)) is not None:
        raise InvalidWorkload(refusal)
    assumptions.append(em.line)
    engine_terms = em.terms
    breakdown = dict(engine_terms)
    bytes_per_value = KV_CACHE_DTYPES[precision.kv_cache]
    # the sequences a replica holds a KV cache and recurrent state for: those its engine runs at once, at most its
    # sequence cap as the chooser and recommend hold a replica to it (the one given, else the engine's default: SGLang's
    # request pool's most, whose pool-derived cap, lower, leaves a plan past it short either way: sweep_serving's
    # _sequence_caps); the rest wait in its queue holding none (planner.serving_queue's sources)
    running = running_sequences(per_replica, seqs)
    if running < per_replica:
        assumptions.append(queued_line(concurrency, running, lay.dp, w.engine))
    kv_one, kv, kv_shape = mm.kv_cache_bytes_and_shape(model, ctx, running, bytes_per_value, lay.tp, lay.pp, block,
                                                       w.attention_dp_kv)
    breakdown["kv_per_sequence_bytes"] = kv_one
    if running < per_replica:  # which sequences the KV cache row is, where some wait (the CLI and the page say it)
        breakdown["kv_cache_sequences_per_replica"] = running
    state_one = state = cross_one = cross = 0  # a transformer keeps no recurrent state; text has no cross-attention
    if model.recurrent is not None:
        state_one = mm.recurrent_state_bytes(model, sequences=1, tp=lay.tp, pp=lay.pp)
        state = mm.recurrent_state_bytes(model, sequences=running, tp=lay.tp, pp=lay.pp)
        breakdown["state_per_sequence_bytes"] = state_one
        breakdown["recurrent_state_bytes"] = state
        assumptions.append(state_assumption(model, state_one))
    # images and encoder outputs: cross-attention K/V per sequence, fixed whatever the text length
    if media.cross_tokens:
        cross_one = cross_kv_bytes(model, media, sequences=1, bytes_per_value=bytes_per_value, tp=lay.tp, pp=lay.pp)
        cross = cross_kv_bytes(model, media, sequences=running, bytes_per_value=bytes_per_value, tp=lay.tp,
                               pp=lay.pp)
    if media.images:
        breakdown["image_tokens_per_image"] = media.tokens_per_image
        breakdown["image_tokens_per_request"] = media.images * media.tokens_per_image
    if cross_one:
        breakdown["cross_attention_kv_per_sequence_bytes"] = cross_one
    output_tokens = w.output_tokens
    if (req := encdec_request(model, w, ctx)) is not None:  # timed within the encoder's and the decoder's limits
        equivalent = encoder_equivalent_tokens(media, model)
        breakdown["encoder_input_tokens"], breakdown["encoder_prefill_equivalent_tokens"] = media.cross_tokens, equivalent
        output_tokens = req.output_tokens
        assumptions.append(encdec_speed_line(model, replace(req, encoder_tokens=media.cross_tokens), equivalent, ctx))
    elif media.cross_tokens:  # images read through cross-attention (mllama): the encoder's input, as vLLM serves it
        breakdown["encoder_input_tokens"] = media.cross_tokens
        breakdown["encoder_prefill_equivalent_tokens"] = encoder_equivalent_tokens(media, model)
        output_tokens = text_request(w, ctx)[1]  # the vision tower's work takes no room in the text's sequence
    elif media.context_tokens and (tower := encoder_equivalent_tokens(media, model)):
        # image tokens in the context: the vision tower's work, timed as prompt tokens the sequence does not hold
        breakdown["encoder_prefill_equivalent_tokens"] = tower
    state_one, state = state_one + cross_one, state + cross
    assumptions.append(KV_REQUESTED_LINE if running == per_replica else KV_RUNNING_LINE)
    if w.engine == "sglang":
        assumptions.append(
            "SGLang sizes its KV pool as mem_fraction_static of the memory free at start (after the CUDA context and "
            "NCCL) less the weights (model_runner profile_max_num_token); the prefill activations and CUDA graphs "
            "live in the rest (sglang_reserve_bytes), so engine_budget_bytes is the weights, activations and "
            "non-torch memory plus that pool.")
    elif w.engine == "trtllm":
        assumptions.append(TRTLLM_PROFILE_LINE)
    else:
        assumptions.append(VLLM_CONTEXT_LINE)
    per_gpu = new_memory_breakdown(weights, kv + state, prefill + sampler, 0, 0,  # weights, KV, activations,
                                   overhead_bytes=non_torch)  # gradients, optimizer (MemoryBreakdown's order)
    budget = None
    max_conc = max_ctx = None
    if gpu is not None and em.budget is not None and em.capacity is not None:
        used = weights + prefill + sampler + non_torch
        budget, capacity = em.budget, em.capacity  # engine_memory's, from the layout and the engine's settings
        breakdown["engine_budget_bytes"] = budget
        free = capacity if capacity > 0 else 0  # at_least(capacity, 0), inline
        breakdown["kv_cache_capacity_bytes"] = free
        if em.sglang is not None:
            seqs = _sglang_admission(w, em, breakdown, free, (model, bytes_per_value, ctx), lay, gpu)
        held_one = kv_one + state_one
        max_conc = free // (held_one if held_one > 1 else 1) * lay.dp  # at_least(held_one, 1), inline
        cap_limit = limit if not w.allow_long_context else max(limit, ctx) * 16
        room = capacity - state  # the recurrent state of the sequences does not grow with the context
        # the largest context (at most cap_limit) whose KV for the running sequences fits the room
        max_ctx = (_longest_kv_context(model, room, running, bytes_per_value, lay.tp, lay.pp, block, cap_limit,
                                       w.attention_dp_kv)
                   if room >= 0 else 0)
        if capacity <= 0 and w.engine == "sglang":
            start_free = sglang_start_free(em, gpu)
            warnings.append(make_warning(
                "weights_exceed_engine_budget",
                f"weights of {fmt_bytes(weights)} take more than mem_fraction_static {em.utilization:g} of the "
                f"{fmt_bytes(start_free)} free at SGLang's start "
                f"({fmt_bytes(int(em.utilization * start_free))}): no room for the KV pool; raise "
                "--gpu-memory-utilization or spread the weights over more GPUs"))
        elif capacity <= 0 and w.engine == "trtllm":
            warnings.append(make_warning(
                "weights_exceed_engine_budget",
                f"weights, activations, non-torch memory and the CUDA context take "
                f"{fmt_bytes(used + engine_terms['cuda_context_outside_budget_bytes'])} of "
                f"{fmt_bytes(gpu.memory_bytes)}: no room for the KV cache"))
        elif capacity <= 0:
            warnings.append(make_warning(
                "weights_exceed_engine_budget",
                f"weights, activations and non-torch memory take {fmt_bytes(budget - capacity)}, "
                + ("the whole" if capacity == 0 else f"{fmt_bytes(-capacity)} more than the")
                + f" {fmt_bytes(budget)} engine budget: no room for the KV cache"))
    timed = speed_request(media, model, w, ctx, assumptions) if media is not NO_MEDIA else None
    # a text model's terms its speed estimate reads again (serving_handoff): handed over rather than derived twice
    handed = (new_serving_terms(kv_shape, bytes_per_value, block, breakdown["kv_cache_capacity_bytes"], tokens, seqs,
                                engine_memory=em)
              if budget is not None and media is NO_MEDIA and model.recurrent is None and tokens and seqs else None)
    return new_task_terms(per_gpu, breakdown, budget, max_concurrency=max_conc, max_context_tokens=max_ctx,
                          workload=_resolved(w, context_tokens=ctx, concurrency=concurrency,
                                             max_num_batched_tokens=tokens, max_num_seqs=seqs,
                                             gpu_memory_utilization=em.utilization, block_size_tokens=block,
                                             prompt_tokens=timed[0] if timed else w.prompt_tokens,
                                             output_tokens=timed[1] if timed else output_tokens),
                          serving=handed)


def _sglang_admission(w: Workload, em: EngineMemory, breakdown: dict[str, int], capacity: int,
                      sized: tuple[ModelSpec, float, int], lay: ResolvedLayout, gpu: GpuSpec) -> int:
    """SGLang's KV pool in token slots (``max_total_num_tokens``), its ``max_running_requests`` (the one given, else
    its default from that pool and ``sized``'s context, the launch's ``--context-length``: max_running_requests) and
    the reserve it leaves for activations and graphs, into the breakdown (a reserve below the prefill activation peak
    was refused before: :func:`~anchorgpu.planner.engine_startup.sglang_reserve_refusal`).
    ``sized``: (model, KV bytes a value, the plan's context in tokens)."""
    model, bytes_per_value, context_tokens = sized
    cell = mm.kv_cache_bytes_one_and_all(model, context_tokens=1, sequences=1, bytes_per_value=bytes_per_value,
                                         tp=lay.tp, pp=lay.pp, block_size=1, attention_dp=w.attention_dp_kv)[0]
    kv_tokens = capacity // at_least(cell, 1)
    breakdown["kv_pool_tokens"] = kv_tokens
    start_free = sglang_start_free(em, gpu)
    breakdown["sglang_reserve_bytes"] = sglang_reserve_bytes(em.utilization, start_free)
    if w.max_num_seqs is not None:
        return w.max_num_seqs
    return max(1, max_running_requests(kv_tokens, context_tokens))
