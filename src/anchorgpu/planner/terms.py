"""Memory terms every task planner shares: the weights a GPU holds under a layout, the runtime context and
NCCL buffers, and :class:`TaskTerms`, what each task planner hands back to :func:`~anchorgpu.planner.plan.plan`. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.formats import ModelParts, WeightFormat, model_weight_parts
from anchorgpu.planner.inputs import Overheads, Workload
from anchorgpu.planner.result import MemoryBreakdown, ResolvedLayout

__all__ = ["TaskTerms", "context_bytes", "nccl_bytes", "weights_bytes"]


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


def weights_bytes(model: ModelSpec, fmt: WeightFormat, lay: ResolvedLayout, breakdown: dict[str, int]) -> int:
    """The weight bytes one GPU holds under ``lay``; the whole model's terms (and ZeRO-3's gather buffers) go to
    ``breakdown``. They depend on the (frozen) weight parts of (model, format) and the split only: memoised on
    them, so every plan of that split reuses them."""
    parts = model_weight_parts(model, fmt)
    zero3 = lay.zero == 3
    key = (id(parts), lay.tp, lay.pp, lay.ep, lay.dp if zero3 else 1, zero3, zero3 and lay.offload == "params")
    hit = _SHARDED.get(key)
    if hit is None or hit[0] is not parts:
        if len(_SHARDED) >= 1024:
            _SHARDED.clear()
        hit = _SHARDED[key] = (parts, *_weights_bytes(parts, lay))
    breakdown.update(hit[2])
    return hit[1]


_SHARDED: dict[tuple[int, int, int, int, int, bool, bool], tuple[ModelParts, int, dict[str, int]]] = {}


def _weights_bytes(parts: ModelParts, lay: ResolvedLayout) -> tuple[int, dict[str, int]]:
    """(bytes one GPU holds, the breakdown's weight terms in their order) for :func:`weights_bytes`."""
    sharded = mm.shard_share(parts, tp=lay.tp, pp=lay.pp, ep=lay.ep, dp_shard=lay.dp if lay.zero == 3 else 1)
    terms = dict(_whole_model_terms(parts))
    if lay.zero == 3:
        gather = mm.gather_buffer_bytes(parts, tp=lay.tp)
        terms["gather_buffer_bytes"] = gather
        if lay.offload == "params":
            sharded = 0
        return sharded + gather, terms
    return sharded, terms


_WHOLE: dict[int, tuple[ModelParts, dict[str, int]]] = {}


def _whole_model_terms(parts: ModelParts) -> dict[str, int]:
    """The whole model's weight bytes by kind, as the breakdown shows them: one set per (frozen) parts object,
    which :func:`model_weight_parts` keeps per (model, format), so every plan of that pair reuses it."""
    hit = _WHOLE.get(id(parts))
    if hit is not None and hit[0] is parts:
        return hit[1]
    terms = {"weights_linear_bytes": math.ceil(parts.dense + parts.experts),
             "weights_embeddings_bytes": math.ceil(parts.embed), "weights_head_bytes": math.ceil(parts.head),
             "weights_other_bytes": math.ceil(parts.layer_other), "weights_whole_model_bytes": math.ceil(parts.total)}
    if len(_WHOLE) >= 512:
        _WHOLE.clear()
    _WHOLE[id(parts)] = (parts, terms)
    return terms


def nccl_bytes(lay: ResolvedLayout, ov: Overheads) -> int:
    if lay.gpus == 1:
        return 0
    peers = (lay.tp - 1) + (lay.ep - 1) + (1 if lay.dp > 1 else 0) + (1 if lay.pp > 1 else 0)
    return ov.nccl_base_bytes + ov.nccl_per_peer_bytes * peers


def context_bytes(gpu: GpuSpec | None, ov: Overheads) -> int:
    return ov.rocm_context_bytes if gpu is not None and gpu.vendor == "AMD" else ov.cuda_context_bytes
