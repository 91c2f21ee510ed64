"""The planner's answer as frozen values: :class:`Plan`, its per-GPU :class:`MemoryBreakdown`, the
:class:`ResolvedLayout` actually planned and the :class:`Suggestion` that would make a workload fit. Pure."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import builder, fast_init
from anchorgpu.planner.inputs import Offload, PrecisionPlan, Workload
from anchorgpu.planner.pipeline_layout import PipelineLayout
from anchorgpu.planner.warnings import PlanWarning

__all__ = ["MemoryBreakdown", "Plan", "ResolvedLayout", "Suggestion"]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Per-GPU bytes by term (the DESIGN.md section 5 ``per_gpu`` keys); ``total_bytes`` is their sum."""

    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    overhead_bytes: int

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.kv_cache_bytes + self.activations_bytes + self.gradients_bytes
                + self.optimizer_bytes + self.overhead_bytes)


# MemoryBreakdown(...) for the task planners, once per plan (its fields by position but the last, or by name)
new_memory_breakdown: Callable[..., MemoryBreakdown] = builder(MemoryBreakdown, positional=5)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedLayout:
    """The layout actually planned: every count resolved, ``gpus == tp · cp · pp · dp``; ``pipeline_layout`` the
    explicit split of the layers over the pipeline chunks when one was given (else as even as whole layers allow)."""

    gpus: int
    tp: int
    pp: int
    dp: int
    ep: int
    zero: int
    fsdp: bool
    offload: Offload
    sequence_parallel: bool
    cp: int = 1
    virtual_stages: int = 1
    tp_overlap: bool = False
    ep_overlap: bool = False
    pipeline_layout: PipelineLayout | None = None

    @property
    def shard_group(self) -> int:
        """The GPUs that hold the same (non-expert) parameters and split their ZeRO/FSDP states: DP x CP. Context
        parallel ranks hold the same weights and reduce their gradients together, so Megatron-LM's distributed
        optimizer shards over its data-parallel group with CP and torchtitan's FSDP over its dp_shard x cp mesh."""
        return self.dp * self.cp

    @property
    def attention_dp(self) -> bool:
        """Attention data parallelism: a mixture of experts' routed experts split over more GPUs than one replica's
        TP (EP wider than TP), so the replicas are one engine whose MoE layers gather every replica's tokens."""
        return self.ep > self.tp

    @property
    def attention_dp_groups(self) -> int:
        """Under attention data parallelism, the independent EP groups the replicas form: ``tp · dp / ep``, each its
        own engine of ``ep / tp`` replicas with a whole copy of the experts (``--tp 1 --dp 16 --ep 8``: two engines of
        8 GPUs, one a server, the users split between them); 1 where EP spans every replica, or without attention
        DP."""
        if not self.attention_dp or self.ep % self.tp or (self.tp * self.dp) % self.ep:
            return 1
        return self.tp * self.dp // self.ep

    @property
    def attention_dp_ranks(self) -> int:
        """Under attention data parallelism, the replicas one engine runs together (the EP group's, ``ep / tp``; all
        ``dp`` where the EP group is every replica); 0 without attention DP."""
        return self.dp // self.attention_dp_groups if self.attention_dp else 0


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """A change that makes the workload fit (CLI flags in ``change``), the per-GPU total it gives and, for training,
    the tokens a second the speed model predicts for it (None for other tasks or where it has no estimate) with the
    band its plan gives it (``_low``/``_high``: where measured runs of the kind fell; the plan's own figures, so the
    suggestion costs no second estimate)."""

    change: str
    description: str
    gpus: int
    total_bytes: int
    headroom_bytes: int
    train_tokens_per_s: float | None = None
    train_tokens_per_s_low: float | None = None
    train_tokens_per_s_high: float | None = None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The answer: breakdown, verdict, capacity, and what was assumed and must still be checked.

    ``budget_bytes`` is what ``total`` is compared with: the GPU's memory, or for inference the serving
    engine's budget (memory × ``gpu_memory_utilization``). ``fits``/``headroom_bytes`` are None without
    a GPU. ``max_concurrency`` (inference) counts sequences of ``context_tokens`` over all replicas;
    ``max_context_tokens`` is the longest context at the planned concurrency. ``extra`` is open for
    other planner modules (performance) to attach their sections.
    """

    model: ModelSpec | DiffusionPipelineSpec
    gpu: GpuSpec | None
    workload: Workload
    precision: PrecisionPlan
    layout: ResolvedLayout
    per_gpu: MemoryBreakdown
    breakdown: Mapping[str, int]
    budget_bytes: int | None
    fits: bool | None
    headroom_bytes: int | None
    max_concurrency: int | None
    max_context_tokens: int | None
    checkpoint_bytes: int | None
    assumptions: tuple[str, ...]
    warnings: tuple[PlanWarning, ...]
    checks: tuple[str, ...]
    suggestions: tuple[Suggestion, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


# Plan(...) for plan(), without the class call's keyword round trip; every field but ``extra`` may be given by position
# (plan() gives them so, no keyword to match), and a call giving them by name stays a plain call (builder's docstring)
new_plan: Callable[..., Plan] = builder(Plan, positional=17)
