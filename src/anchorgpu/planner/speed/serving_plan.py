"""The serving half of a plan's ``performance`` section: the setup one replica's steps are timed with, how many
sequences the engine keeps running when requests never stop, and the figures (time to first token, time per output
token, output tokens/s at the requested and at the saturating concurrency), each with its band, its ceiling and
what it assumed. Pure; :mod:`.estimate` calls it for an inference plan."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import builder, memo_on_frozen
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.serving_handoff import ServingTerms
from anchorgpu.planner.sglang import (
    decode_graph_batch_sizes,
    dequantises_absorbed_weights,
    sglang_gpu_memory_bytes,
    sglang_settings,
)
from anchorgpu.planner.speed.assumption_lines import (
    expert_parallel_line,
    launches_line,
    prompt_attention_apart_line,
    prompt_queue_line,
    serving_constants_line,
    serving_line,
)
from anchorgpu.planner.speed.attention_rate import trtllm_context_attention
from anchorgpu.planner.speed.batching import ServingEstimate, serving_estimate
from anchorgpu.planner.speed.caveats import serving_caveats
from anchorgpu.planner.speed.chunked_attention import chunked_read_factor, chunked_read_scale
from anchorgpu.planner.speed.constants import Band, Calibration, band_kind_of
from anchorgpu.planner.speed.evidence import evidence_kind
from anchorgpu.planner.speed.experts import whole_dense_layers_extra_bytes
from anchorgpu.planner.speed.figures import (
    Evidence,
    evidence_items,
    evidence_of,
    plan_band,
    put_evidence,
    put_serving_figures,
)
from anchorgpu.planner.speed.handed_memos import handed_pair
from anchorgpu.planner.speed.launches import is_block_fp8
from anchorgpu.planner.speed.links import (
    PeakChoice,
    compute_precision_for_weights,
    peak_for,
    weights_precision_on,
)
from anchorgpu.planner.speed.mixed_attention import FA2_CAPABILITY, mixed_attention_assumption
from anchorgpu.planner.speed.moe_backend import (
    VLLM_MARLIN,
    moe_backend_line,
    requested_moe_backend,
    trtllm_moe_backend,
    vllm_marlin_line,
    vllm_moe_backend,
)
from anchorgpu.planner.speed.product_shares import head_quantized_share, quantized_product_shares
from anchorgpu.planner.speed.serving import ServingSetup, ep_gather_bytes
from anchorgpu.planner.speed.serving_capacity import (
    ENGINE_RESERVATION,
    KvReservation,
    encoder_terms,
    engine_limits_of,
    full_length_concurrency,
    kv_bytes_per_gpu,
    saturation_concurrency,
)
from anchorgpu.planner.speed.serving_lines import admission_line, pp_host_line
from anchorgpu.planner.speed.step_constants import host_passes_per_cycle, prompt_attention_apart
from anchorgpu.units import at_least

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["ENGINE_RESERVATION", "NVFP4_KV_SPEED_LINE", "SERVER_GPUS", "KvReservation", "ServingContext", "ServingCore",
           "context_of", "saturation_concurrency", "serving_band_kind", "serving_context", "serving_core",
           "serving_performance", "serving_saturation", "serving_setup"]

SERVER_GPUS = 8
"""GPUs per server assumed by ``plan`` estimates: groups larger than this cross the network."""

NVFP4_KV_SPEED_LINE = (
    "NVFP4 KV cache: decode reads 0.5625 bytes a cached value (half a byte and an FP8 scale per 16) and the cache holds "
    "that many more tokens; the attention kernels' unpacking of FP4 to 16 bit is not timed, and no measured run here "
    "used an NVFP4 KV cache, so this speed rests on the 16-bit and FP8 runs (time a few steps before relying on it).")
"""The assumption a serving estimate with an NVFP4 KV cache adds: its bytes are the plan's, its kernels' cost is not
in the calibration (no measured row uses one)."""


# ServingSetup(...) once per plan's estimate, its first 23 fields by position and the last by name: as keywords some
# would take the call past CPython 3.11's 30 stack slots, a dictionary built and unpacked (builder's ``positional``),
# and each keyword costs a match
_new_setup: Callable[..., ServingSetup] = builder(ServingSetup, positional=23)


@lru_cache(maxsize=256)
def _weights_terms(weights: str | None, engine: str) -> tuple[str, bool, float]:
    """(compute precision, FP8 in blocks, bytes a gathered value takes under attention DP) of a weight format
    planned (None: 16 bit) and an engine."""
    return (compute_precision_for_weights(weights or "bf16"), is_block_fp8(weights),
            ep_gather_bytes(engine, weights or "bf16"))


@memo_on_frozen
def _product_shares(model: ModelSpec, weights: str) -> tuple[float, float, float]:
    """:func:`quantized_product_shares` and :func:`head_quantized_share` of ``model`` in the weight format planned (its
    name), memoised on the (frozen) model and the name: every plan of that model in that format asks the same."""
    fmt = format_for_model(model, weights)
    return (*quantized_product_shares(model, fmt), head_quantized_share(model, fmt))


SetupTerms = tuple[str, bool, float, float, float, float]
"""What a :class:`ServingSetup` takes from the plan's model, weight format and engine alone: the compute precision,
FP8 in blocks, the bytes a gathered value takes under attention DP (:func:`_weights_terms`) and the quantized shares
of the products, of the routed experts' and of the LM head's (:func:`_product_shares`)."""


def setup_terms(model: ModelSpec, weights: str | None, engine: str) -> SetupTerms:
    """The :data:`SetupTerms` of ``model`` in the weight format planned (None: 16 bit) on ``engine``."""
    share, expert_share, head_share = _product_shares(model, weights) if weights else (1.0, 1.0, 1.0)
    return (*_weights_terms(weights, engine), share, expert_share, head_share)


def serving_setup(plan: Plan, prompt_tokens: int, output_tokens: int, limits: tuple[int, int] | None = None,
                  graph_batch_sizes: tuple[int, ...] = (), host_overlap: bool = True,
                  absorbed_dequant: bool = False, engine: str | None = None,
                  terms: SetupTerms | None = None, handed: ServingTerms | None = None) -> ServingSetup:
    """One replica's :class:`ServingSetup` of an inference plan; ``engine`` names the engine whose kernels ran where
    it is not the workload's (a measured row planned with vLLM's memory on TensorRT-LLM: ``rows_report.engine_of``);
    ``terms``: the plan's :func:`setup_terms`, where the caller has them (its :class:`ServingContext`'s). A plan for
    SGLang pads its decode-only steps to the graphs SGLang captures and, on AMD GPUs, dequantises an FP8 MLA model's
    absorbed weights every step (:func:`sglang_step_terms`). ``handed``: the plan's own terms, where ``plan()`` handed
    them over (a text model's: its KV shape, no encoder or recurrent state; ``planner.serving_handoff``). Every
    argument may be given by position (the estimate's own call: no keyword to match)."""
    model, lay, w, weights = plan.model, plan.layout, plan.workload, plan.precision.weights
    assert isinstance(model, ModelSpec)
    if w.engine == "sglang":
        graphs, dequant = sglang_step_terms(plan)
        graph_batch_sizes, absorbed_dequant = graph_batch_sizes or graphs, absorbed_dequant or dequant
    # Llama 4's chunked layers, read once a query head where TensorRT-LLM's decode falls back to MMHA
    # (speed.chunked_attention): 1 elsewhere
    # (the engine test inline: chunked_read_factor's first, without its call where it is not TensorRT-LLM)
    read = (1 if (engine or w.engine) != "trtllm" else
            chunked_read_factor(model, plan.gpu, "trtllm", prompt_tokens + output_tokens))
    if handed is not None:  # a text model's KV shape as its plan sized the cache: no encoder, no recurrent state
        values, groups, stage, layers = handed.kv_shape  # shaped_kv_bytes in pages of 1 token, inline
        cached, token_slots = prompt_tokens + output_tokens // 2, 0
        for window, count in groups:
            token_slots += (cached if window is None else min(cached, window) * read) * count
        kv_seq = math.ceil(token_slots * values * handed.bytes_per_value * 1 * stage / layers)
    else:
        # a plan of a decoder-only model has no encoder's input in its breakdown: encoder_terms' (0, 0), without its
        # call
        equivalent, cross = encoder_terms(plan) if "encoder_input_tokens" in plan.breakdown else (0, 0)
        cached = prompt_tokens - equivalent + output_tokens // 2
        kv_seq = kv_bytes_per_gpu(plan, cached) + cross
        if read != 1:
            kv_seq += math.ceil((kv_seq - cross) * (chunked_read_scale(model, cached, read) - 1))
        # a recurrent layer reads (and rewrites) its fixed-size state every step instead of a growing KV cache
        if model.recurrent is not None:
            kv_seq += mm.recurrent_state_bytes(model, sequences=1, tp=lay.tp, pp=lay.pp)
    precision, block_fp8, gather_bytes, share, expert_share, head_share = (
        terms or setup_terms(model, weights, w.engine))
    if precision == "fp4" and plan.gpu is not None:  # FP4 units that do not take the format: weight-only (speed.peaks)
        precision = weights_precision_on(plan.gpu, weights or "bf16")
    # the byte counts as floats, the type the step's arithmetic is in (exact: they are far below 2**53)
    # by position: weights_bytes_per_gpu, kv_bytes_per_sequence_per_gpu, precision, tp, pp, replicas,
    # max_num_batched_tokens, gpus_per_server, graph_batch_sizes, ep, block_fp8, host_overlap, ep_gather_bytes, the
    # three quantized shares, absorbed_dequant, engine, attention_dp, whole_dense_extra_bytes, kv_fp8, moe_backend,
    # adp_balance, then weights_format by name (ServingSetup's field order: a call of 26 stack slots)
    engine = engine or w.engine
    # TensorRT-LLM's MoE kernel, as the workload states it or the engine's AUTO picks it (speed.moe_backend)
    # (a dense model has none: both functions' first answer, without their calls)
    moe_backend = ("" if model.moe is None else
                   trtllm_moe_backend(model, plan.gpu, weights, w.moe_backend) if engine == "trtllm" else
                   vllm_moe_backend(model, weights, w.moe_backend, plan.gpu) if engine == "vllm"
                   else "")
    return _new_setup(
        float(plan.per_gpu.weights_bytes), float(kv_seq), precision, lay.tp, lay.pp, lay.dp,
        (limits or engine_limits_of(plan))[0], SERVER_GPUS, graph_batch_sizes, lay.ep, block_fp8, host_overlap,
        gather_bytes, share, expert_share, head_share, absorbed_dequant, engine, w.attention_dp_kv,
        (whole_dense_layers_extra_bytes(model, format_for_model(model, weights), tp=lay.tp, pp=lay.pp)
         if w.attention_dp_kv else 0.0), plan.precision.kv_cache == "fp8", moe_backend,
        w.attention_dp_balance and engine == "trtllm", weights_format=weights or "bf16")


def sglang_step_terms(plan: Plan) -> tuple[tuple[int, ...], bool]:
    """What SGLang's own kernels and graphs add to a plan's steps: (the decode batch sizes it captures CUDA graphs
    for up to its ``cuda_graph_max_bs`` for this GPU and layout, a decode-only step padded to the first that holds it
    and run eagerly above: :func:`~anchorgpu.planner.sglang.decode_graph_batch_sizes`; whether it dequantises an MLA
    model's absorbed FP8 weights every step, as it does on ROCm: ``launches.absorbed_dequant_bytes``).

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
    >>> from anchorgpu.architectures import load_model
    >>> r1 = load_model("deepseek-r1")
    >>> p = plan(r1, Workload(engine="sglang", concurrency=4), precision=PrecisionPlan(weights="fp8-block128x128"),
    ...          layout=Layout(gpus=8, tp=8), gpu=get_gpu("mi300x"), suggest=False)
    >>> graphs, dequant = sglang_step_terms(p)
    >>> graphs[:6], graphs[-1], dequant
    ((1, 2, 4, 8, 12, 16), 512, True)
    """
    lay, gpu, model = plan.layout, plan.gpu, plan.model
    dp_attention = lay.attention_dp_ranks  # one engine's replicas (its EP group's)
    settings = sglang_settings(sglang_gpu_memory_bytes(gpu),
                               tp=lay.tp * dp_attention if dp_attention else lay.tp, pp=lay.pp,
                               chunked_prefill_size=plan.workload.max_num_batched_tokens, dp_attention=dp_attention)
    dequant = dequantises_absorbed_weights(gpu.vendor if gpu is not None else None,
                                           isinstance(model, ModelSpec) and model.mla is not None, plan.precision.weights)
    return decode_graph_batch_sizes(settings.cuda_graph_max_bs), dequant


@dataclass(frozen=True, slots=True)
class ServingContext:
    """What a serving plan's figures and assumptions take from its (frozen) GPU, calibration and model, its weight
    format, engine and split alone, formed once (:func:`serving_context`): every plan of them shares it."""

    choice: PeakChoice  # the peak the weights' products run at, with its warning (None where the GPU has it)
    band: Band
    constants_line: str  # serving_constants_line
    evidence: Evidence | None  # evidence_of the GPU's runs; None with the user's efficiencies
    launches_line: str  # launches_line ("" for a Llama-style layer)
    caveats: tuple[str, ...]  # serving_caveats
    setup_terms: SetupTerms  # what the plan's ServingSetup takes from the model, weight format and engine


@partial(memo_on_frozen, frozen=3)
def serving_context(gpu: GpuSpec, cal: Calibration, model: ModelSpec, weights: str | None, engine: str, pp: int,
                    wide_ep: bool) -> ServingContext:
    """The :class:`ServingContext` of a plan on ``gpu`` under ``cal`` of ``model`` with ``weights`` (the plan's
    format, None: 16 bit) on ``engine`` over ``pp`` stages, ``wide_ep`` where its experts are split over more GPUs
    than TP (memoised on the frozen three by identity and the plain values after them)."""
    precision, block_fp8, _ = _weights_terms(weights, engine)
    kind = serving_band_kind(model, pp)
    evidence = None if cal.origin == "user" else evidence_of(evidence_items(gpu, cal, evidence_kind("serve", kind),
                                                                              engine))
    if precision == "fp4":  # an FP4 format the GPU's FP4 units do not take runs weight-only (NVFP4 on CDNA4)
        precision = weights_precision_on(gpu, weights or "bf16")
    choice = peak_for(gpu, precision)  # a precision the GPU has no tensor cores for runs at the BF16 peak
    return ServingContext(
        choice=choice, band=plan_band(gpu, cal, "serve", kind, engine),
        constants_line=serving_constants_line(gpu, cal, choice.precision, block_fp8=block_fp8), evidence=evidence,
        launches_line=launches_line(model, cal.launches, block_fp8),
        caveats=tuple(serving_caveats(cal.caveats, moe=model.moe is not None, engine=engine, wide_ep=wide_ep)),
        setup_terms=setup_terms(model, weights, engine))


def context_of(plan: Plan, cal: Calibration) -> ServingContext:
    """:func:`serving_context` of an inference plan on a GPU."""
    model, lay = plan.model, plan.layout
    assert plan.gpu is not None and isinstance(model, ModelSpec)
    return serving_context(plan.gpu, cal, model, plan.precision.weights, plan.workload.engine, lay.pp,
                           model.moe is not None and lay.ep > lay.tp)


def serving_band_kind(model: ModelSpec, pp: int) -> str | None:
    """Which serving band a plan takes (:meth:`Calibration.band`): ``moe``, ``pp`` or the rest's."""
    return band_kind_of(moe=model.moe is not None, phase="serve", pp=pp)


class ServingCore(NamedTuple):
    """What a serving plan's figures are computed from (:func:`serving_core`): the replica's setup, the engine's
    limits (tokens a step, sequences), the saturation (sequences running at once over the replicas) and the
    estimate at the plan's concurrency."""

    setup: ServingSetup
    limits: tuple[int, int]
    saturation: int
    estimate: ServingEstimate


def serving_core(plan: Plan, model: ModelSpec, prompt: int, output: int, cal: Calibration,
                 kv_reservation: KvReservation = "average", graph_batch_sizes: tuple[int, ...] = (),
                 host_overlap: bool = True, context: ServingContext | None = None, absorbed_dequant: bool = False,
                 engine: str | None = None) -> ServingCore:
    """The :class:`ServingCore` of an inference plan on a GPU, as :func:`serving_performance` reads its figures
    from it (the arguments are that function's)."""
    setup, limits, sat = serving_saturation(plan, prompt, output, cal, kv_reservation, graph_batch_sizes,
                                            host_overlap, context, absorbed_dequant, engine)
    assert plan.gpu is not None
    est = serving_estimate(model, plan.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                           concurrency=plan.workload.concurrency or 1, saturation_concurrency=at_least(sat, 1),
                           cal=cal)
    return ServingCore(setup, limits, sat, est)


def serving_saturation(plan: Plan, prompt: int, output: int, cal: Calibration,
                       kv_reservation: KvReservation = "average", graph_batch_sizes: tuple[int, ...] = (),
                       host_overlap: bool = True, context: ServingContext | None = None, absorbed_dequant: bool = False,
                       engine: str | None = None,
                       handed: ServingTerms | None = None) -> tuple[ServingSetup, tuple[int, int], int]:
    """The first three of :func:`serving_core` (setup, limits, saturation), before its estimate; ``handed``: the
    plan's own terms (:func:`serving_setup`)."""
    ctx = context or context_of(plan, cal)
    limits = engine_limits_of(plan) if handed is None else (handed.max_num_batched_tokens, handed.max_num_seqs)
    setup = serving_setup(plan, prompt, output, limits, graph_batch_sizes, host_overlap, absorbed_dequant, engine,
                          ctx.setup_terms, handed)
    full = kv_reservation == "full"
    sat = saturation_concurrency(plan, setup, reserve_tokens=prompt + output if full else None, limits=limits,
                                 ratio_request=(prompt, output) if kv_reservation == "ratio" else None,
                                 average_tokens=prompt + output // 2)
    return setup, limits, sat


def serving_performance(plan: Plan, model: ModelSpec, prompt: int, output: int, out: dict[str, Any],
                        assumptions: list[str], cal: Calibration, kv_reservation: KvReservation = "average",
                        graph_batch_sizes: tuple[int, ...] = (), host_overlap: bool = True,
                        context: ServingContext | None = None, absorbed_dequant: bool = False,
                        engine: str | None = None, handed: ServingTerms | None = None) -> None:
    """An inference plan's serving figures into ``out`` and what they assumed into ``assumptions``, for ``prompt``
    and ``output`` tokens a request (:func:`~anchorgpu.planner.speed.estimate.plan_performance` resolved them);
    ``context``: the plan's :func:`context_of`, where the caller has it; ``absorbed_dequant``: the engine dequantises
    MLA's absorbed latent weights every step (:class:`~anchorgpu.planner.speed.serving.ServingSetup`); ``engine``:
    the engine whose kernels ran, where not the workload's (:func:`serving_setup`); ``handed``: the plan's own terms,
    where ``plan()`` handed them over (``planner.serving_handoff``)."""
    assert plan.gpu is not None
    ctx = context or context_of(plan, cal)
    band = ctx.band
    # serving_core's three steps, without its tuple
    if handed is not None and kv_reservation == "average":  # serving_saturation, inline, with saturation_concurrency's
        # paged case of a text model (no encoder's work): its operations on the handed capacity
        limits = (handed.max_num_batched_tokens, handed.max_num_seqs)
        setup = serving_setup(plan, prompt, output, limits, graph_batch_sizes, host_overlap, absorbed_dequant, engine,
                              ctx.setup_terms, handed)
        per_seq = setup.kv_bytes_per_sequence_per_gpu
        held, cap = int(handed.capacity_bytes // (per_seq if per_seq > 1.0 else 1.0)), limits[1]
        sat = (0 if held < 0 else cap if held > cap else held) * setup.replicas
    else:
        setup, limits, sat = serving_saturation(plan, prompt, output, cal, kv_reservation, graph_batch_sizes,
                                                host_overlap, ctx, absorbed_dequant, engine, handed)
    conc = plan.workload.concurrency or 1
    est = serving_estimate(model, plan.gpu, setup, prompt, output, conc, sat if sat > 1 else 1, cal,
                           None if handed is None else handed_pair(handed, model, plan.gpu, setup, cal))
    put_serving_figures(out, band, est.ttft_s, est.ttft_s_ceiling, est.tpot_s, est.tpot_s_ceiling,
                        est.output_tokens_per_s, est.output_tokens_per_s_ceiling, est.decode_tokens_per_s_per_user,
                        1.0 / est.tpot_s_ceiling, est.max_output_tokens_per_s if sat >= 1 else None,
                        est.max_output_tokens_per_s_ceiling)
    out["saturation_concurrency"] = sat
    if kv_reservation == "average" and sat >= 1:
        # a paged cache's sequences sit at their average length; at their full prompt + output each, what
        # plan --concurrency N sizes them at, fewer fit: the most that call plans
        out["saturation_full_length_concurrency"] = min(sat, full_length_concurrency(plan, setup, prompt + output,
                                                                                      limits, handed))
    out["kv_reservation"] = kv_reservation
    out["prompt_tokens"], out["output_tokens"] = prompt, output
    if "encoder_input_tokens" in plan.breakdown:  # the decoder's own prompt, the encoder's input beside it
        equivalent = encoder_terms(plan)[0]
        out["prompt_tokens"] = prompt - equivalent
        out["encoder_input_tokens"] = int(plan.breakdown["encoder_input_tokens"])
        out["encoder_prefill_equivalent_tokens"] = equivalent
    elif "encoder_prefill_equivalent_tokens" in plan.breakdown:
        # image tokens in the context: the prompt the sequence holds (text and image tokens), the tower's work beside
        equivalent = int(plan.breakdown["encoder_prefill_equivalent_tokens"])
        out["prompt_tokens"] = prompt - equivalent
        out["encoder_prefill_equivalent_tokens"] = equivalent
    out["decode_bound"] = est.bound
    # names kept from the first contract
    out["prefill_s"] = est.ttft_s
    out["decode_tokens_per_s_total"] = est.output_tokens_per_s
    assumptions.append(serving_line(conc, prompt, output, sat, kv_reservation, limits[1]))
    if 1 <= sat < conc:  # the users beyond what the engine runs: their wait, which TTFT leaves out
        assumptions.append(admission_line(conc, sat, output, est))
    if est.prompts_queue:  # the estimate's own test (prompt_bound_output_tokens), not asked again where it is False
        queued = prompt_queue_line(est.per_replica, setup.replicas, prompt, output, setup.max_num_batched_tokens,
                                   est.ttft_s, plan.workload.engine)
        if queued is not None:
            assumptions.append(queued)
    assumptions.append(ctx.constants_line)
    put_evidence(ctx.evidence, out, assumptions)
    if ctx.launches_line:
        assumptions.append(ctx.launches_line)
    if setup.moe_backend == VLLM_MARLIN:  # vLLM's Marlin MoE kernel, stated or its choice (speed.moe_backend)
        assumptions.append(vllm_marlin_line(plan.gpu, cal.stack(plan.gpu).moe_expert_half_tokens, cal,
                                            plan.workload.moe_backend))
    elif setup.moe_backend:  # TensorRT-LLM's MoE kernel (speed.moe_backend)
        assumptions.append(moe_backend_line(
            setup.moe_backend, plan.workload.moe_backend, plan.gpu, cal.stack(plan.gpu).moe_expert_half_tokens, cal,
            requested=requested_moe_backend(model, plan.gpu, plan.workload.moe_backend),
            weights=plan.precision.weights))
    if model.moe is not None and setup.ep > setup.tp:
        assumptions.append(expert_parallel_line(setup.ep, setup.tp, setup.ep_gather_bytes))
    if prompt_attention_apart(setup.engine):  # TensorRT-LLM's context and generation attention kernels, summed
        assumptions.append(prompt_attention_apart_line(
            trtllm_context_attention(plan.gpu, cal, apart=True, kv_fp8=setup.kv_fp8), prompt,
            cal.stack(plan.gpu).attention_efficiency))
    cc = plan.gpu.compute_capability  # FlashAttention 2's reread: mixed_attention's first test, inline (no call else)
    if cc and cc.startswith(FA2_CAPABILITY) and (mixed := mixed_attention_assumption(model, plan.gpu, setup,
                                                                                    est.per_replica)):
        assumptions.append(mixed)
    if host_passes_per_cycle(setup.engine, setup.pp) > 1:  # TensorRT-LLM's PP loop, the cap it puts on a replica
        assumptions.append(pp_host_line(plan, setup, est, cal))
    if plan.precision.kv_cache == "nvfp4":
        assumptions.append(NVFP4_KV_SPEED_LINE)
    assumptions.extend(ctx.caveats)
