"""Memory of a serving engine (task inference), sized like vLLM V1 (or TensorRT-LLM with ``engine="trtllm"``, SGLang
with ``engine="sglang"``): weights, the engine's activation peak and non-torch memory, the KV cache and recurrent state
of the requested sequences, and the capacity left (most sequences, longest context) under ``gpu_memory_utilization``
(TensorRT-LLM: that fraction of the memory free after its profiling pass; SGLang: ``mem_fraction_static`` of the
memory free at start holds the weights and the KV pool). Pure."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache, partial
from typing import NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import evolver, memo_on_frozen
from anchorgpu.planner.engine_startup import (
    sglang_derived_fraction_refusal,
    sglang_reserve_bytes,
    sglang_reserve_refusal,
    startup_refusal,
)
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.inputs import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    KV_CACHE_DTYPES,
    Engine,
    Overheads,
    PrecisionPlan,
    Workload,
    block_size_of,
    engine_limits,
    large_engine_defaults,
)
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
from anchorgpu.planner.serving_request import (
    DEFAULT_REQUEST_NOTE,
    asked_context,
    attention_dp_groups_line,
    check_request_within_context,
    encoder_prompt_tokens,
    request_media,
)
from anchorgpu.planner.sglang import SglangSettings, max_running_requests, sglang_gpu_memory_bytes, sglang_settings
from anchorgpu.planner.terms import TaskTerms, context_bytes, new_task_terms, split_weights_bytes
from anchorgpu.planner.warnings import PlanWarning, make_warning
from anchorgpu.units import at_least, fmt_bytes

__all__ = ["DEFAULT_REQUEST_NOTE", "EngineMemory", "engine_defaults", "engine_line", "engine_memory", "plan_inference", "request_media"]


def engine_defaults(gpu: GpuSpec | None, workload: Workload, assumptions: list[str]) -> tuple[int, int]:
    """vLLM V1 defaults for the OpenAI server: 8,192 batched tokens and 1,024 sequences on GPUs with at
    least 70 GiB but the A100 (:func:`~anchorgpu.planner.inputs.large_engine_defaults`), else 2,048 and 256 (vLLM
    ``arg_utils._set_default_args``)."""
    tokens, seqs = engine_limits(workload, large_gpu=large_engine_defaults(gpu),
                                 gpu_memory_bytes=gpu.memory_bytes if gpu is not None else None)
    assumptions.append(engine_line(workload.engine, tokens, seqs,
                                    workload.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
                                    block_size_of(workload)))
    return tokens, seqs


@lru_cache(maxsize=256, typed=True)  # typed: 1 and 1.0 print differently
def engine_line(engine: str, tokens: int, seqs: int, utilization: float, block: int) -> str:
    """The serving-engine assumption: the engine's settings, nearly always its defaults, so a few lines recur
    across every model, GPU and request size (memoised, like the runtime-overhead line of training)."""
    if engine == "trtllm":
        return (f"Serving engine sized like TensorRT-LLM (trtllm-serve, PyTorch backend): max_num_tokens {tokens}, "
                f"max_batch_size {seqs}, free_gpu_memory_fraction {utilization}: the KV cache takes that share of the "
                "memory left free once the weights and its profiling pass's peak (a step of max_num_tokens prompt "
                "tokens) are in place; GUARANTEED_NO_EVICT admits a request only when its prompt and output fit.")
    return (f"Serving engine sized like vLLM: max_num_batched_tokens {tokens}, max_num_seqs {seqs}, "
            f"gpu_memory_utilization {utilization}, KV block {block} tokens.")


@lru_cache(maxsize=256)
def _sglang_line(s: SglangSettings, given_seqs: bool, reads: str = "the GPU's memory") -> str:
    """The serving-engine assumption under SGLang: its settings, derived or given (``reads``: the GPU memory its
    tiers and fraction divide by, :func:`_sglang_reads`)."""
    fraction = (f"mem_fraction_static {s.mem_fraction_static:g} (SGLang's default for this GPU and layout: 1 - a "
                f"{s.reserve_mib:,.0f} MiB reserve for activations and CUDA graphs over {reads})" if s.derived
                else f"mem_fraction_static {s.mem_fraction_static:g} (given)")
    seqs = "max_running_requests as given" if given_seqs else ("max_running_requests its default: half the KV pool's "
                                                                "tokens, at most its request pool")
    return (f"Serving engine sized like SGLang: {fraction} of the memory free at start holds the weights and the KV "
            f"pool; chunked_prefill_size {s.chunked_prefill_size}, cuda_graph_max_bs {s.cuda_graph_max_bs}, "
            f"{seqs}; KV pool in one-token slots (page_size 1).")


def _sglang_reads(gpu: GpuSpec | None) -> str:
    """The GPU memory SGLang's tiers and ``mem_fraction_static`` divide by, in words: nvidia-smi's total where the
    catalog sources it (rocminfo's on AMD), else the runtime total the plan budgets against, said so."""
    if gpu is None:
        return "the GPU's memory"
    if gpu.memory_smi_mib is not None:
        tool = "rocminfo" if gpu.vendor == "AMD" else "nvidia-smi"
        return f"the {gpu.memory_smi_mib:,} MiB {tool} reports"
    mib = f"{gpu.memory_bytes / 2**20:,.0f} MiB"
    total = (f"the {mib} the {'ROCm' if gpu.vendor == 'AMD' else 'CUDA'} runtime reports" if gpu.memory_is_runtime
             else f"the vendor's {mib}")
    return f"{total} (no {'rocminfo' if gpu.vendor == 'AMD' else 'nvidia-smi'} total sourced for {gpu.name})"


def _engine_footprint(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int,
                      ep: int, tokens: int, seqs: int, engine: str = "vllm") -> tuple[int, int, int, int, dict[str, int]]:
    """What the engine holds on one GPU before any request: (weights, the prefill activation peak, the sampler's
    logits, non-torch memory, and their terms of the breakdown in order, the CUDA context's last). It depends on
    the (frozen) model, weight format, GPU and overheads, the split and the engine's batch limits only: memoised
    on them (through :func:`engine_memory`), so every request shape served by that engine shares it. The terms are
    shared: copy them.
    TensorRT-LLM's profiling pass runs context requests only (no sampler warm-up over a full batch), so its
    sampler term is 0; SGLang profiles no step at all (its reserve is a rule), so its is 0 too."""
    weights, weight_terms = split_weights_bytes(model, fmt, tp, pp, ep)
    prefill = mm.prefill_activation_bytes(model, tokens=tokens, tp=tp)
    sampler = (0 if engine != "vllm" else  # SGLang profiles no sampler: its reserve covers the step's logits
               mm.sampler_activation_bytes(sequences=min(tokens, seqs), vocab=model.vocab_size))
    non_torch = ov.serving_non_torch_tp1_bytes if tp * pp == 1 else ov.serving_non_torch_multi_bytes
    terms = {**weight_terms, "prefill_activation_bytes": prefill, "sampler_logits_bytes": sampler,
             "non_torch_bytes": non_torch, "cuda_context_outside_budget_bytes": context_bytes(gpu, ov)}
    return weights, prefill, sampler, non_torch, terms


class EngineMemory(NamedTuple):
    """What a serving engine holds on one GPU before any request, and what it leaves for the KV cache: the part of a
    serving plan's memory that depends on the (frozen) model, weight format, GPU and overheads, the split and the
    engine's settings only (:func:`engine_memory`), never on the request's sizes."""

    tokens: int  # max_num_batched_tokens (TensorRT-LLM: max_num_tokens; SGLang: chunked_prefill_size) as planned
    seqs: int  # max_num_seqs (max_batch_size; SGLang: max_running_requests given, else its request pool's most)
    line: str  # the serving-engine assumption
    weights: int
    prefill: int  # the profiled prefill activation peak
    sampler: int  # the sampler's logits (0 under TensorRT-LLM)
    non_torch: int
    terms: dict[str, int]  # their terms of the breakdown in order, the CUDA context's last (shared: copy them)
    budget: int | None  # the engine's budget and the KV cache's capacity in it; None without a GPU
    capacity: int | None
    utilization: float  # gpu_memory_utilization as planned (SGLang: mem_fraction_static, given or derived)
    sglang: SglangSettings | None  # SGLang's start-up settings; None for the other engines


@partial(memo_on_frozen, frozen=4)
def engine_memory(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int, ep: int,
                  engine: Engine, max_tokens: int | None, max_seqs: int | None, utilization: float | None,
                  utilization_type: type, block: int, dp_attention: int = 0) -> EngineMemory:
    """The :class:`EngineMemory` of a layout: the engine's limits (:func:`engine_defaults`) and footprint
    (:func:`_engine_footprint`), its budget under ``gpu_memory_utilization`` and the capacity left for the KV cache.
    Memoised on the frozen four by identity and the plain values after them (``utilization_type``: 1 and 1.0 print
    differently in the assumption), so every request served by that engine on that layout shares it.
    ``utilization`` None takes the engine's default: 0.9, or SGLang's derived ``mem_fraction_static``
    (:func:`~anchorgpu.planner.sglang.sglang_settings`, ``dp_attention`` its dp_size under attention data parallelism).
    Under SGLang the budget is the weights, activations and non-torch memory plus the KV pool: ``mem_fraction_static``
    of the memory free at start (the CUDA context and non-torch memory taken) less the weights
    (``profile_max_num_token``); the activations and CUDA graphs live in the rest."""
    if engine == "sglang":
        return _sglang_memory(model, fmt, gpu, ov, tp, pp, ep, max_tokens, max_seqs, utilization, block, dp_attention)
    utilization = utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    probe = Workload(engine=engine, max_num_batched_tokens=max_tokens, max_num_seqs=max_seqs,
                     gpu_memory_utilization=utilization, block_size_tokens=block)
    line: list[str] = []
    tokens, seqs = engine_defaults(gpu, probe, line)
    weights, prefill, sampler, non_torch, terms = _engine_footprint(model, fmt, gpu, ov, tp, pp, ep, tokens, seqs,
                                                                    engine)
    budget = capacity = None
    if gpu is not None:
        used = weights + prefill + sampler + non_torch
        if engine == "trtllm":  # a share of what its profiling pass leaves free, the CUDA context counted
            free = gpu.memory_bytes - terms["cuda_context_outside_budget_bytes"]
            capacity = int(utilization * (free - used))
            budget = min(used + capacity, free)  # never past the memory free at start (a peak past it: short by that)
        else:
            budget = math.ceil(gpu.memory_bytes * utilization)
            capacity = budget - used
    return EngineMemory(tokens, seqs, line[0], weights, prefill, sampler, non_torch, terms, budget, capacity,
                        utilization, None)


def _sglang_memory(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int, ep: int,
                   max_tokens: int | None, max_seqs: int | None, utilization: float | None, block: int,
                   dp_attention: int) -> EngineMemory:
    """:func:`engine_memory` under SGLang (its sequence cap before the KV pool is sized: the request pool's most)."""
    s = sglang_settings(sglang_gpu_memory_bytes(gpu), tp=tp * dp_attention if dp_attention else tp,
                        pp=pp, chunked_prefill_size=max_tokens, mla=model.mla is not None, dp_attention=dp_attention,
                        mem_fraction_static=utilization)
    _, seqs = engine_limits(Workload(engine="sglang", max_num_seqs=max_seqs), large_gpu=True)
    weights, prefill, sampler, non_torch, terms = _engine_footprint(model, fmt, gpu, ov, tp, pp, ep,
                                                                    s.chunked_prefill_size, seqs, "sglang")
    budget = capacity = None
    if gpu is not None:
        used = weights + prefill + sampler + non_torch
        start_free = _start_free(gpu, terms["cuda_context_outside_budget_bytes"], non_torch)
        capacity = int(s.mem_fraction_static * start_free) - weights
        budget = used + capacity  # weights above the fraction's share leave a budget below them: short by the excess
    return EngineMemory(s.chunked_prefill_size, seqs, _sglang_line(s, max_seqs is not None, _sglang_reads(gpu)),
                        weights, prefill, sampler, non_torch, terms, budget, capacity, s.mem_fraction_static, s)


def _start_free(gpu: GpuSpec, context_bytes: int, non_torch_bytes: int) -> int:
    """The memory free at SGLang's start on ``gpu``: its total less the CUDA context and non-torch memory (NCCL), of
    which ``mem_fraction_static`` holds the weights and the KV pool."""
    return gpu.memory_bytes - context_bytes - non_torch_bytes


def _sglang_start_free(em: EngineMemory, gpu: GpuSpec) -> int:
    """:func:`_start_free` of a plan's engine memory."""
    return _start_free(gpu, em.terms["cuda_context_outside_budget_bytes"], em.non_torch)


@memo_on_frozen
def _longest_kv_context(model: ModelSpec, capacity: int, seqs: int, bytes_per_value: float, tp: int, pp: int,
                        block: int, limit: int) -> int:
    """:func:`~anchorgpu.planner.memory.longest_kv_context` (a search over block counts), memoised on the (frozen)
    model and its counts: the capacity is the layout's, so every plan of a layout at that many sequences per
    replica asks the same."""
    return mm.longest_kv_context(model, capacity=capacity, sequences=seqs, bytes_per_value=bytes_per_value, tp=tp,
                                 pp=pp, block_size=block, limit=limit)


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
            kind = "image placeholder" if media.cross_tokens else "image"  # mllama: one text token an image
            what = f"{text_ctx:,} text + {images:,} {kind} tokens = {ctx:,}" if images > 0 else f"context {ctx:,}"
            fewer = ("" if images <= 0 else ", or fewer or smaller images" if w.images_per_request is not None
                     else ", or --images-per-request 0 for text only: a vision model's request has 1 image by default")
            raise InvalidWorkload(f"{what} exceeds {model.name}'s limit of {limit:,} tokens (add --allow-long-context "
                                  f"to plan anyway{fewer})")
        warnings.append(make_warning("context_beyond_model_limit", f"context {ctx} > model limit {limit}"))
    concurrency = w.concurrency or 1
    if w.concurrency is None:
        assumptions.append("Concurrency not given: checked for one sequence; max_concurrency reports the most.")
    per_replica = math.ceil(concurrency / lay.dp)
    if lay.dp > 1:
        assumptions.append(f"{lay.dp} replicas share the {concurrency:,} sequences: at most {per_replica:,} per replica."
                           if concurrency >= lay.dp else
                           f"{lay.dp} replicas for {concurrency:,} sequence{'' if concurrency == 1 else 's'}: "
                           f"{lay.dp - concurrency:,} of them idle.")
    if (groups := lay.attention_dp_groups) > 1:  # copies of one engine's EP group, each on its own GPUs
        assumptions.append(attention_dp_groups_line(groups, lay.tp, lay.attention_dp_ranks, lay.ep, lay.gpus))
    utilization = w.gpu_memory_utilization
    if (refusal := startup_refusal(w.engine, gpu, utilization, ov)) is not None:
        raise InvalidWorkload(refusal)
    em = engine_memory(model, fmt, gpu, ov, lay.tp, lay.pp, lay.ep, w.engine, w.max_num_batched_tokens, w.max_num_seqs,
                       utilization, type(utilization), block_size_of(w), lay.attention_dp_ranks)
    tokens, seqs, weights, prefill, sampler, non_torch = em.tokens, em.seqs, em.weights, em.prefill, em.sampler, \
        em.non_torch
    if em.sglang is not None and gpu is not None and (refusal := sglang_derived_fraction_refusal(
            em.utilization, em.sglang.derived, em.sglang.reserve_mib, (sglang_gpu_memory_bytes(gpu) or 0) / 2**20,
            tokens)) is not None:
        raise InvalidWorkload(refusal)
    if em.sglang is not None and gpu is not None and (refusal := sglang_reserve_refusal(
            em.utilization, em.sglang.derived, _sglang_start_free(em, gpu), prefill, tokens)) is not None:
        raise InvalidWorkload(refusal)
    assumptions.append(em.line)
    engine_terms = em.terms
    breakdown = dict(engine_terms)
    bytes_per_value, block = KV_CACHE_DTYPES[precision.kv_cache], block_size_of(w)
    kv_one, kv = mm.kv_cache_bytes_one_and_all(model, context_tokens=ctx, sequences=per_replica,
                                               bytes_per_value=bytes_per_value, tp=lay.tp, pp=lay.pp, block_size=block)
    breakdown["kv_per_sequence_bytes"] = kv_one
    state_one = state = cross_one = cross = 0  # a transformer keeps no recurrent state; text has no cross-attention
    if model.recurrent is not None:
        state_one = mm.recurrent_state_bytes(model, sequences=1, tp=lay.tp, pp=lay.pp)
        state = mm.recurrent_state_bytes(model, sequences=per_replica, tp=lay.tp, pp=lay.pp)
        breakdown["state_per_sequence_bytes"] = state_one
        breakdown["recurrent_state_bytes"] = state
        assumptions.append(state_assumption(model, state_one))
    # images and encoder outputs: cross-attention K/V per sequence, fixed whatever the text length
    if media.cross_tokens:
        cross_one = cross_kv_bytes(model, media, sequences=1, bytes_per_value=bytes_per_value, tp=lay.tp, pp=lay.pp)
        cross = cross_kv_bytes(model, media, sequences=per_replica, bytes_per_value=bytes_per_value, tp=lay.tp,
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
    assumptions.append(
        "KV cache shown is what the requested sequences need; the serving engine reserves all the KV cache its "
        "memory setting allows at start-up (kv_cache_capacity_bytes in the breakdown).")
    if w.engine == "sglang":
        assumptions.append(
            "SGLang sizes its KV pool as mem_fraction_static of the memory free at start (after the CUDA context and "
            "NCCL) less the weights (model_runner profile_max_num_token); the prefill activations and CUDA graphs "
            "live in the rest (sglang_reserve_bytes), so engine_budget_bytes is the weights, activations and "
            "non-torch memory plus that pool.")
    elif w.engine == "trtllm":
        assumptions.append(
            "The profiling pass's peak holds the weights, a step of max_num_tokens prompt tokens, non-torch memory "
            "and the CUDA context; the KV cache is free_gpu_memory_fraction of what is left (TensorRT-LLM "
            "_torch/pyexecutor/_util.py cal_max_tokens), so engine_budget_bytes is that peak less the CUDA context "
            "plus the KV cache.")
    else:
        assumptions.append(
            "CUDA context sits outside the engine budget (in the 1 - gpu_memory_utilization margin); CUDA graphs "
            "are inside the profiled activation peak (vLLM V1).")
    per_gpu = new_memory_breakdown(weights_bytes=weights, kv_cache_bytes=kv + state,
                                   activations_bytes=prefill + sampler, gradients_bytes=0, optimizer_bytes=0,
                                   overhead_bytes=non_torch)
    budget = None
    max_conc = max_ctx = None
    if gpu is not None and em.budget is not None and em.capacity is not None:
        used = weights + prefill + sampler + non_torch
        budget, capacity = em.budget, em.capacity  # engine_memory's, from the layout and the engine's settings
        breakdown["engine_budget_bytes"] = budget
        free = at_least(capacity, 0)
        breakdown["kv_cache_capacity_bytes"] = free
        if em.sglang is not None:
            seqs = _sglang_admission(w, em, breakdown, free, (model, bytes_per_value, ctx), lay, gpu)
        max_conc = free // at_least(kv_one + state_one, 1) * lay.dp
        cap_limit = limit if not w.allow_long_context else max(limit, ctx) * 16
        room = capacity - state  # the recurrent state of the sequences does not grow with the context
        # the largest context (at most cap_limit) whose KV for per_replica sequences fits the room
        max_ctx = (_longest_kv_context(model, room, per_replica, bytes_per_value, lay.tp, lay.pp, block, cap_limit)
                   if room >= 0 else 0)
        if capacity <= 0 and w.engine == "sglang":
            start_free = _sglang_start_free(em, gpu)
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
    return new_task_terms(per_gpu=per_gpu, breakdown=breakdown, budget_bytes=budget, max_concurrency=max_conc,
                          max_context_tokens=max_ctx,
                          workload=_resolved(w, context_tokens=ctx, concurrency=concurrency,
                                             max_num_batched_tokens=tokens, max_num_seqs=seqs,
                                             gpu_memory_utilization=em.utilization, block_size_tokens=block,
                                             prompt_tokens=timed[0] if timed else w.prompt_tokens,
                                             output_tokens=timed[1] if timed else output_tokens))


def _sglang_admission(w: Workload, em: EngineMemory, breakdown: dict[str, int], capacity: int,
                      sized: tuple[ModelSpec, float, int], lay: ResolvedLayout, gpu: GpuSpec) -> int:
    """SGLang's KV pool in token slots (``max_total_num_tokens``), its ``max_running_requests`` (the one given, else
    its default from that pool and ``sized``'s context, the launch's ``--context-length``: max_running_requests) and
    the reserve it leaves for activations and graphs, into the breakdown (a reserve below the prefill activation peak
    was refused before: :func:`~anchorgpu.planner.engine_startup.sglang_reserve_refusal`).
    ``sized``: (model, KV bytes a value, the plan's context in tokens)."""
    model, bytes_per_value, context_tokens = sized
    cell = mm.kv_cache_bytes_one_and_all(model, context_tokens=1, sequences=1, bytes_per_value=bytes_per_value,
                                         tp=lay.tp, pp=lay.pp, block_size=1)[0]
    kv_tokens = capacity // at_least(cell, 1)
    breakdown["kv_pool_tokens"] = kv_tokens
    start_free = _sglang_start_free(em, gpu)
    breakdown["sglang_reserve_bytes"] = sglang_reserve_bytes(em.utilization, start_free)
    if w.max_num_seqs is not None:
        return w.max_num_seqs
    return max(1, max_running_requests(kv_tokens, context_tokens))
