"""The serving half of a plan's ``performance`` section: on one replica's setup (:mod:`.serving_setup`), how many
sequences the engine keeps running when requests never stop, and the figures (time to first token, time per output
token, output tokens/s at the requested and at the saturating concurrency), each with its band, its ceiling and
what it assumed. Pure; :mod:`.estimate` calls it for an inference plan."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.serving_handoff import ServingTerms
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
from anchorgpu.planner.speed.constants import Band, Calibration, band_kind_of
from anchorgpu.planner.speed.engine_terms import host_passes_per_cycle, prompt_attention_apart
from anchorgpu.planner.speed.evidence import evidence_kind
from anchorgpu.planner.speed.figures import (
    Evidence,
    evidence_items,
    evidence_of,
    plan_band,
    put_evidence,
    put_serving_figures,
)
from anchorgpu.planner.speed.handed_memos import handed_pair
from anchorgpu.planner.speed.links import (
    PeakChoice,
    peak_for,
    weights_precision_on,
)
from anchorgpu.planner.speed.mixed_attention import FA2_CAPABILITY, mixed_attention_assumption
from anchorgpu.planner.speed.moe_backend import (
    VLLM_MARLIN,
    moe_backend_line,
    requested_moe_backend,
    vllm_marlin_line,
)
from anchorgpu.planner.speed.serving import ServingSetup
from anchorgpu.planner.speed.serving_capacity import (
    ENGINE_RESERVATION,
    KvReservation,
    encoder_terms,
    engine_limits_of,
    full_length_concurrency,
    saturation_concurrency,
)
from anchorgpu.planner.speed.serving_lines import admission_line, pp_host_line
from anchorgpu.planner.speed.serving_setup import SetupTerms, serving_setup, setup_terms, weights_terms
from anchorgpu.units import at_least

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["ENGINE_RESERVATION", "NVFP4_KV_SPEED_LINE", "KvReservation", "ServingContext", "ServingCore", "context_of",
           "saturation_concurrency", "serving_band_kind", "serving_context", "serving_core", "serving_performance",
           "serving_saturation"]

NVFP4_KV_SPEED_LINE = (
    "NVFP4 KV cache: decode reads 0.5625 bytes a cached value (half a byte and an FP8 scale per 16) and the cache holds "
    "that many more tokens; the attention kernels' unpacking of FP4 to 16 bit is not timed, and no measured run here "
    "used an NVFP4 KV cache, so this speed rests on the 16-bit and FP8 runs (time a few steps before relying on it).")
"""The assumption a serving estimate with an NVFP4 KV cache adds: its bytes are the plan's, its kernels' cost is not
in the calibration (no measured row uses one)."""


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
    precision, block_fp8, _ = weights_terms(weights, engine)
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
