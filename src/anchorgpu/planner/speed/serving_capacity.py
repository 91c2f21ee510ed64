"""How many sequences a serving plan's KV cache holds: the bytes one sequence keeps on a GPU, the engine's limits,
and the concurrency the engine keeps running when requests never stop (at their average length, reserved up front,
or by SGLang's ratio), or at their full length. Pure; :mod:`.serving_plan` times the figures at these counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner.engine_limits import block_size_of, engine_limits_on
from anchorgpu.planner.inputs import KV_CACHE_DTYPES
from anchorgpu.planner.serving_handoff import ServingTerms, shaped_kv_bytes
from anchorgpu.planner.sglang import admission_tokens, admitted_requests
from anchorgpu.planner.speed.serving import ServingSetup
from anchorgpu.units import at_least, clamp

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["ENGINE_RESERVATION", "KvReservation", "encoder_terms", "engine_limits_of", "full_length_concurrency",
           "kv_bytes_per_gpu", "saturation_concurrency", "uncached_tokens"]


def encoder_terms(plan: Plan) -> tuple[int, int]:
    """An encoder-decoder plan's (prompt tokens that stand for the encoder's prefill work, cross-attention K/V bytes
    per sequence per GPU): the first hold no K/V of the decoder; the second are read at every decode step and held
    for the request's life (``plan_inference`` puts both in the breakdown). (0, 0) for any other model."""
    b = plan.breakdown
    if "encoder_input_tokens" not in b:
        return 0, 0
    return int(b.get("encoder_prefill_equivalent_tokens", 0)), int(b.get("cross_attention_kv_per_sequence_bytes", 0))


def uncached_tokens(plan: Plan) -> int:
    """Prompt tokens of the request timed that stand for an encoder's or vision tower's prefill work and hold no
    K/V: an encoder-decoder's or cross-attention model's (:func:`encoder_terms`), or a vision tower's whose image
    tokens sit in the context (the image tokens are cached; the tower's work as tokens of the same cost is not)."""
    b = plan.breakdown
    if "encoder_input_tokens" in b:
        return encoder_terms(plan)[0]
    return int(b.get("encoder_prefill_equivalent_tokens", 0))


def kv_bytes_per_gpu(plan: Plan, tokens: int, block_size: int = 1) -> int:
    """KV-cache bytes one sequence of ``tokens`` holds on one GPU of the plan's layout (under the workload's
    ``attention_dp_kv``, a GPU's average share: each rank holds its own sequences' caches whole), in pages of
    ``block_size`` tokens (1: unrounded)."""
    model, lay = plan.model, plan.layout
    assert isinstance(model, ModelSpec)
    return mm.kv_sequence_bytes(model, tokens, KV_CACHE_DTYPES[plan.precision.kv_cache], lay.tp, lay.pp, block_size,
                                plan.workload.attention_dp_kv)


def engine_limits_of(plan: Plan) -> tuple[int, int]:
    """(tokens per step, sequences): the workload's, else vLLM's defaults for the plan's GPU, as memory sized them
    (an inference plan's workload holds both, resolved by ``plan``: :func:`engine_limits` returns them as they are)."""
    w = plan.workload
    if w.max_num_batched_tokens and w.max_num_seqs:
        return w.max_num_batched_tokens, w.max_num_seqs
    return engine_limits_on(w, plan.gpu)


KvReservation = Literal["average", "full", "ratio"]
"""How an engine admits requests against its KV cache: ``average`` (vLLM: pages fill as tokens arrive and a
running request is preempted when they run out, so the cache holds sequences at their average cached length),
``full`` (TensorRT-LLM's default capacity policy, GUARANTEED_NO_EVICT: a request starts only when the cache
for its prompt plus its maximum output fits; TensorRT-LLM docs, performance tuning guide, "Useful Runtime
Options") or ``ratio`` (SGLang: the average cached length, plus its ``new_token_ratio`` of what each running
request may still write, with room left for the next request's prompt and output:
:func:`~anchorgpu.planner.sglang.admission_tokens`)."""


ENGINE_RESERVATION: dict[str, KvReservation] = {"vllm": "average", "trtllm": "full", "sglang": "ratio"}
"""Each engine's own admission, the :data:`KvReservation` a plan for it takes unless told another."""


def saturation_concurrency(plan: Plan, setup: ServingSetup, *, reserve_tokens: int | None = None,
                           limits: tuple[int, int] | None = None, ratio_request: tuple[int, int] | None = None,
                           average_tokens: int | None = None) -> int:
    """Sequences the engine keeps running at once when requests never stop coming (offline benchmarks):
    the KV capacity over the average cached length (paged caches fill as tokens arrive), or over
    ``reserve_tokens`` per sequence where the engine reserves them up front, or, for SGLang's admission of
    requests of ``ratio_request`` (prompt, output) tokens, :func:`~anchorgpu.planner.sglang.admitted_requests` of
    the average length plus its ratio's charge, leaving the next request's room; at most the engine's sequence cap,
    per replica. ``average_tokens``: the timed prompt plus half the output, where the prompt holds a vision tower's
    work as tokens (:func:`uncached_tokens`), which the decode step is timed reading but the cache never holds."""
    b = plan.breakdown
    capacity = int(b.get("kv_cache_capacity_bytes", 0))
    per_seq = setup.kv_bytes_per_sequence_per_gpu
    if not per_seq > 1.0:  # at_least(per_seq, 1.0), inline
        per_seq = 1.0
    cap = (limits or engine_limits_of(plan))[1]
    # a plan of a text model has no encoder's work in its breakdown: uncached_tokens' 0, without its call
    uncached = uncached_tokens(plan) if "encoder_prefill_equivalent_tokens" in b else 0
    if average_tokens is not None and uncached and "encoder_input_tokens" not in b:
        held = setup.kv_bytes_per_sequence_per_gpu - kv_bytes_per_gpu(plan, average_tokens) + kv_bytes_per_gpu(
            plan, average_tokens - uncached)
        per_seq = at_least(held, 1.0)
    if reserve_tokens is not None or ratio_request is not None:
        assert isinstance(plan.model, ModelSpec)
        state = mm.recurrent_state_bytes(plan.model, sequences=1, tp=plan.layout.tp, pp=plan.layout.pp)
        equivalent, cross = uncached, encoder_terms(plan)[1]
    if ratio_request is not None:  # in bytes a GPU: the ratio's tokens each cost one token's KV
        charge_tokens, next_tokens = admission_tokens(ratio_request[0], ratio_request[1])
        per_run = per_seq + charge_tokens * float(kv_bytes_per_gpu(plan, 1))
        newcomer = float(kv_bytes_per_gpu(plan, next_tokens - equivalent) + state + cross)
        return clamp(admitted_requests(capacity, per_run, newcomer), 0, cap) * setup.replicas
    if reserve_tokens is not None:
        per_seq = max(1.0, float(kv_bytes_per_gpu(plan, reserve_tokens - equivalent) + state + cross))
    held = int(capacity // per_seq)
    return (0 if held < 0 else cap if held > cap else held) * setup.replicas  # clamp(held, 0, cap), inline


def full_length_concurrency(plan: Plan, setup: ServingSetup, tokens: int, limits: tuple[int, int],
                            handed: ServingTerms | None = None) -> int:
    """The most sequences of ``tokens`` (prompt + output, as ``plan --concurrency N`` sizes each) the KV capacity
    holds at their full length, each rounded up to the engine's blocks as the plan's cache is (plus a hybrid's
    recurrent state and an encoder's cross-attention K/V), at most the engine's sequence cap, over the replicas.
    ``handed``: the plan's own terms, where ``plan()`` handed them over (a text model's: its KV shape, page and
    capacity; ``planner.serving_handoff``)."""
    if handed is not None:  # the same operations on the terms the plan sized its cache with
        per_seq = float(shaped_kv_bytes(handed.kv_shape, tokens, handed.bytes_per_value, handed.block_tokens))
        if not per_seq > 1.0:
            per_seq = 1.0
        held, cap = int(handed.capacity_bytes // per_seq), limits[1]
        return (0 if held < 0 else cap if held > cap else held) * setup.replicas
    model, b = plan.model, plan.breakdown
    assert isinstance(model, ModelSpec)
    capacity = int(b.get("kv_cache_capacity_bytes", 0))
    # a transformer keeps no recurrent state (0), a decoder-only model no cross-attention K/V (encoder_terms' 0)
    state = 0 if model.recurrent is None else mm.recurrent_state_bytes(model, sequences=1, tp=plan.layout.tp,
                                                                        pp=plan.layout.pp)
    uncached = uncached_tokens(plan) if "encoder_prefill_equivalent_tokens" in b else 0  # a text model's 0, no call
    kv = kv_bytes_per_gpu(plan, tokens - uncached, block_size_of(plan.workload))
    per_seq = float(kv + state + (encoder_terms(plan)[1] if "encoder_input_tokens" in b else 0))
    if not per_seq > 1.0:  # at_least(per_seq, 1.0), inline
        per_seq = 1.0
    held, cap = int(capacity // per_seq), limits[1]
    return (0 if held < 0 else cap if held > cap else held) * setup.replicas  # clamp(held, 0, cap), inline
