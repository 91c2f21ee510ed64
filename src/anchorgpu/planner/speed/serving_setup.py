"""One replica's :class:`~anchorgpu.planner.speed.serving.ServingSetup` of an inference plan: what its steps are timed
with (the bytes of its weights and of one sequence's KV cache per GPU, its split, precision and engine, and the terms
SGLang's graphs and MoE kernels add). Pure; :mod:`.serving_plan` times the figures on it."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
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
from anchorgpu.planner.speed.chunked_attention import chunked_read_factor, chunked_read_scale
from anchorgpu.planner.speed.experts import whole_dense_layers_extra_bytes
from anchorgpu.planner.speed.launches import is_block_fp8
from anchorgpu.planner.speed.links import (
    compute_precision_for_weights,
    weights_precision_on,
)
from anchorgpu.planner.speed.lookup_tables import named_lookup_edges
from anchorgpu.planner.speed.moe_backend import (
    trtllm_moe_backend,
    vllm_moe_backend,
)
from anchorgpu.planner.speed.product_shares import head_quantized_share, quantized_product_shares
from anchorgpu.planner.speed.serving import ServingSetup, ep_gather_bytes
from anchorgpu.planner.speed.serving_capacity import (
    encoder_terms,
    engine_limits_of,
    kv_bytes_per_gpu,
)

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan


__all__ = ["SERVER_GPUS", "SetupTerms", "serving_setup", "setup_terms", "sglang_step_terms", "weights_terms"]

SERVER_GPUS = 8
"""GPUs per server assumed by ``plan`` estimates: groups larger than this cross the network."""

# ServingSetup(...) once per plan's estimate, its first 24 fields by position and the last by name: as keywords some
# would take the call past CPython 3.11's 30 stack slots, a dictionary built and unpacked (builder's ``positional``),
# and each keyword costs a match
_new_setup: Callable[..., ServingSetup] = builder(ServingSetup, positional=24)


@lru_cache(maxsize=256)
def weights_terms(weights: str | None, engine: str) -> tuple[str, bool, float]:
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
FP8 in blocks, the bytes a gathered value takes under attention DP (:func:`weights_terms`) and the quantized shares
of the products, of the routed experts' and of the LM head's (:func:`_product_shares`)."""


def setup_terms(model: ModelSpec, weights: str | None, engine: str) -> SetupTerms:
    """The :data:`SetupTerms` of ``model`` in the weight format planned (None: 16 bit) on ``engine``."""
    share, expert_share, head_share = _product_shares(model, weights) if weights else (1.0, 1.0, 1.0)
    return (*weights_terms(weights, engine), share, expert_share, head_share)


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
    # adp_balance, lookup_table_bytes_per_gpu, then weights_format by name (ServingSetup's field order: a call of 27
    # stack slots)
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
        w.attention_dp_balance and engine == "trtllm",
        # the untied token embedding the GPU holds and the step only gathers rows from (speed.lookup_tables)
        named_lookup_edges(model, weights or "bf16")[1 if lay.pp > 1 else 0] / lay.tp,  # lookup_table_bytes_per_gpu's
        weights_format=weights or "bf16")


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


