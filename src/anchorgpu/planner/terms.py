"""Memory terms every task planner shares: the weights a GPU holds under a layout, the runtime context and
NCCL buffers, and :class:`TaskTerms`, what each task planner hands back to :func:`~anchorgpu.planner.plan.plan`. Pure."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import builder, fast_init, memo_on_frozen
from anchorgpu.planner.formats import WeightFormat, bnb_code_format
from anchorgpu.planner.inputs import Overheads, Workload
from anchorgpu.planner.pipeline_layout import busiest_rank_layers
from anchorgpu.planner.result import MemoryBreakdown, ResolvedLayout
from anchorgpu.planner.serving_handoff import ServingTerms
from anchorgpu.planner.weight_parts import ModelParts, model_weight_parts

__all__ = ["TaskTerms", "bnb_constants_line", "context_bytes", "layout_weights_bytes", "nccl_bytes", "overhead_rule_line", "split_weights_bytes",
           "weights_bytes"]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTerms:
    per_gpu: MemoryBreakdown
    breakdown: dict[str, int]
    budget_bytes: int | None
    max_concurrency: int | None = None
    max_context_tokens: int | None = None
    checkpoint_bytes: int | None = None
    workload: Workload
    serving: ServingTerms | None = None  # a text model's serving terms, for its speed estimate (serving_handoff)


# TaskTerms(...) for the task planners, once per plan (its first three fields by position or by name: a field without
# a default follows the defaulted ones)
new_task_terms: Callable[..., TaskTerms] = builder(TaskTerms, positional=3)


def weights_bytes(model: ModelSpec, fmt: WeightFormat, lay: ResolvedLayout, breakdown: dict[str, int], *,
                  bnb_constants_whole: bool = False) -> int:
    """The weight bytes one GPU holds under ``lay``; the whole model's terms (and ZeRO-3's gather buffers) go to
    ``breakdown``. They depend on the (frozen) weight parts of (model, format) and the split only: memoised on
    them (:func:`_sharded_weights`), so every plan of that split reuses them. ``bnb_constants_whole``: see
    :func:`layout_weights_bytes`."""
    held, terms = layout_weights_bytes(model, fmt, lay.tp, lay.pp, lay.ep, lay.dp, lay.cp, lay.zero, lay.offload,
                                       busiest_rank_layers(lay.pipeline_layout), bnb_constants_whole=bnb_constants_whole)
    breakdown.update(terms)
    return held


def layout_weights_bytes(model: ModelSpec, fmt: WeightFormat, tp: int, pp: int, ep: int, dp: int, cp: int, zero: int,
                         offload: str, stated: int | None = None, *, bnb_constants_whole: bool = False
                         ) -> tuple[int, dict[str, int]]:
    """:func:`weights_bytes` of a layout given by its counts (``stated``: the busiest rank's layers of an explicit
    pipeline layout): the bytes one GPU holds and the breakdown's terms, shared by every caller (read them, never
    change them). ``bnb_constants_whole``: a bitsandbytes 4-bit base under PyTorch's FSDP / DeepSpeed ZeRO-3 has only
    its packed codes sharded; its block constants (``quant_state``, not a parameter) stay whole on every GPU
    (:func:`~anchorgpu.planner.formats.bnb_code_format`); no effect on another format or without ZeRO-3."""
    zero3 = zero == 3
    expert_dp = mm.expert_data_parallel(tp=tp, dp=dp, cp=cp, ep=ep) if zero3 else 1
    parts = model_weight_parts(model, fmt)
    codes_fmt = bnb_code_format(fmt) if zero3 and bnb_constants_whole else None
    if codes_fmt is None:
        return _sharded_weights(parts, tp, pp, ep, dp * cp if zero3 else 1, zero3, zero3 and offload == "params",
                                expert_dp, stated)
    codes = model_weight_parts(model, codes_fmt)
    return _codes_sharded_weights(parts, codes, tp, pp, ep, dp * cp, offload == "params", expert_dp, stated)


def split_weights_bytes(model: ModelSpec, fmt: WeightFormat, tp: int, pp: int, ep: int) -> tuple[int, dict[str, int]]:
    """:func:`weights_bytes` of a layout without ZeRO-3 (a serving engine's): the bytes one GPU holds and the
    breakdown's weight terms, shared by every caller (read them, never change them). An EP smaller than TP splits
    each expert ``tp / ep`` ways as the engines do (:func:`~anchorgpu.planner.memory.serving_expert_tp`): the routed
    experts' bytes a GPU holds are then 1/tp of them, as with EP equal to TP."""
    return _sharded_weights(model_weight_parts(model, fmt), tp, pp, ep, 1, False, False, 1, None,
                            mm.serving_expert_tp(tp, ep))


@memo_on_frozen
def _sharded_weights(parts: ModelParts, tp: int, pp: int, ep: int, dp_shard: int, zero3: bool,
                     offload_params: bool, expert_shard: int = 1, stated: int | None = None, expert_tp: int = 1
                     ) -> tuple[int, dict[str, int]]:
    """(bytes one GPU holds, the breakdown's weight terms in their order) for :func:`weights_bytes`: the whole
    model's weight bytes by kind, then ZeRO-3's gather buffer (the parameters themselves leave the GPU when
    offloaded). Under ZeRO-3 the rest is sharded over ``dp_shard`` GPUs and, under EP, the routed experts over the
    ``expert_shard`` that hold the same ones; ``expert_tp``: the ways each expert is split under EP (serving EP
    smaller than TP). The terms are shared by every hit: read them, never change them."""
    sharded = mm.shard_share(parts, tp=tp, pp=pp, ep=ep, dp_shard=dp_shard, stated=stated, expert_tp=expert_tp)
    if ep > 1 and expert_shard != dp_shard:
        experts = mm.routed_expert_share(parts, tp=tp, pp=pp, ep=ep, stated=stated, expert_tp=expert_tp)
        sharded = math.ceil((mm.shard_share(parts, tp=tp, pp=pp, ep=ep, stated=stated, expert_tp=expert_tp) - experts)
                            / dp_shard
                            + experts / expert_shard)
    terms = {"weights_linear_bytes": math.ceil(parts.dense + parts.experts),
             "weights_embeddings_bytes": math.ceil(parts.embed), "weights_head_bytes": math.ceil(parts.head),
             "weights_other_bytes": math.ceil(parts.layer_other), "weights_whole_model_bytes": math.ceil(parts.total)}
    if not zero3:
        return sharded, terms
    gather = mm.gather_buffer_bytes(parts, tp=tp)
    terms["gather_buffer_bytes"] = gather
    return (0 if offload_params else sharded) + gather, terms


@partial(memo_on_frozen, frozen=2)
def _codes_sharded_weights(parts: ModelParts, codes: ModelParts, tp: int, pp: int, ep: int, dp_shard: int,
                           offload_params: bool, expert_shard: int, stated: int | None) -> tuple[int, dict[str, int]]:
    """:func:`_sharded_weights` under ZeRO-3 of a bitsandbytes 4-bit base: the packed codes (``codes``) sharded as any
    parameter (and offloaded with them), the block constants (``parts`` less ``codes``) split by TP/PP/EP only, whole
    on each data-parallel rank and left on the GPU (``quant_state`` is no parameter: FSDP neither shards, gathers nor
    offloads it). The terms are ``parts``' with ``weights_bnb_constants_bytes`` (those each GPU holds) added and
    ``gather_buffer_bytes`` the codes' (two units of packed codes: the constants are not gathered, so not in it)."""
    held_codes, _ = _sharded_weights(codes, tp, pp, ep, dp_shard, True, offload_params, expert_shard, stated)
    constants = ModelParts(dense=parts.dense - codes.dense, experts=parts.experts - codes.experts,
                           layer_other=parts.layer_other - codes.layer_other, embed=parts.embed - codes.embed,
                           head=parts.head - codes.head, num_layers=parts.num_layers, tied=parts.tied)
    constants_gpu = mm.shard_share(constants, tp=tp, pp=pp, ep=ep, stated=stated)
    _, terms = _sharded_weights(parts, tp, pp, ep, dp_shard, True, offload_params, expert_shard, stated)
    # the gather buffer holds the gathered codes only (held_codes counts it): the constants, never gathered, are
    # counted once, whole, in constants_gpu
    terms = {**terms, "gather_buffer_bytes": mm.gather_buffer_bytes(codes, tp=tp),
             "weights_bnb_constants_bytes": constants_gpu}
    return held_codes + constants_gpu, terms


@lru_cache(maxsize=64)
def bnb_constants_line(constants_bytes: int) -> str:
    """The plan's assumption line where :func:`_codes_sharded_weights` kept a 4-bit base's constants whole.

    >>> bnb_constants_line(2**30)[:46]
    "FSDP/ZeRO-3 shards the 4-bit base's packed cod"
    """
    from anchorgpu.units import fmt_bytes

    return said("FSDP/ZeRO-3 shards the 4-bit base's packed codes (4 bits a weight) only; its block constants (absmax, "
                "and with double quantization their own constants: bitsandbytes' quant_state, no parameter) stay whole "
                "on every GPU, {held} each (AnswerDotAI/fsdp_qlora PR #4: quant_state 'doesn't get synced by FSDP ... "
                "only supports syncing parameters and buffers').", held=fmt_bytes(constants_bytes))


def nccl_bytes(lay: ResolvedLayout, ov: Overheads) -> int:
    if lay.gpus == 1:
        return 0
    peers = (lay.tp - 1) + (lay.ep - 1) + (1 if lay.dp > 1 else 0) + (1 if lay.pp > 1 else 0)
    return ov.nccl_base_bytes + ov.nccl_per_peer_bytes * peers


def overhead_rule_line(ov: Overheads) -> str:
    """The runtime overhead of many layouts at once (the recommend sweep's), as the rule each one's memory follows
    (:func:`context_bytes`, :func:`nccl_bytes`): one line, where a plan of one layout states its own figures.

    >>> overhead_rule_line(Overheads())[:97]
    'Runtime overhead, each layout its own: context 512.00 MiB (768.00 MiB on ROCm), library workspace'
    """
    from anchorgpu.units import fmt_bytes

    return said("Runtime overhead, each layout its own: context {context} ({rocm_context} on ROCm), library workspace "
                "{workspace}, NCCL {nccl} plus {per_peer} a peer (TP - 1, EP - 1, one for DP and one for PP) on more "
                "than one GPU, none on one; allocator fragmentation {fragmentation:.0%} of tensors.",
                context=fmt_bytes(ov.cuda_context_bytes), rocm_context=fmt_bytes(ov.rocm_context_bytes),
                workspace=fmt_bytes(ov.cublas_workspace_bytes), nccl=fmt_bytes(ov.nccl_base_bytes),
                per_peer=fmt_bytes(ov.nccl_per_peer_bytes), fragmentation=ov.fragmentation_fraction)


def context_bytes(gpu: GpuSpec | None, ov: Overheads) -> int:
    return ov.rocm_context_bytes if gpu is not None and gpu.vendor == "AMD" else ov.cuda_context_bytes
