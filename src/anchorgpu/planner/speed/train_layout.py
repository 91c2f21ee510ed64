"""A training layout (``tp x cp x pp x dp``, ``ep`` inside ``tp x dp``, ZeRO stage, virtual stages, overlaps,
offload), what :func:`~anchorgpu.planner.speed.training.training_step` reads of one, and the refusals of a layout a
step cannot run (GPUs that do not multiply out, a CP split or chunks the sequence or layers do not allow, interleaving
the stack would not run). Pure; :mod:`.training` times a step of one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.pipeline_layout import PipelineLayout
from anchorgpu.planner.speed.context_parallel import cp_split_refusal
from anchorgpu.planner.speed.pipeline import chunks_refusal, interleaving_refusal

__all__ = ["AttentionKernel", "TrainLayout", "TrainSplit", "sequence_parallel_of"]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TrainLayout:
    """A training layout: ``gpus == tp * cp * pp * dp``; ``zero`` 0-3 (3 = FSDP); ``v`` virtual stages."""

    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1
    dp: int = 1
    ep: int = 1
    zero: int = 0
    virtual_stages: int = 1
    tp_overlap: bool = False
    ep_overlap: bool = False
    offload: str = "none"  # "optimizer": optimizer state and its step on the CPU; "params": the parameters too
    pipeline_layout: PipelineLayout | None = None  # an explicit split of the layers over the chunks (else even)
    sequence_parallel: bool | None = None  # None: on with TP > 1


AttentionKernel = Literal["flash", "fa2", "unfused"]
"""How a run's attention is computed: ``flash`` a current fused kernel (FlashAttention-3 / cuDNN class, what a plan
assumes), ``fa2`` a FlashAttention-2-class kernel, ``unfused`` the score matrix computed whole and masked."""


class TrainSplit(Protocol):
    """What :func:`~anchorgpu.planner.speed.training.training_step` reads of a layout: a :class:`TrainLayout`, or the planner's resolved layout
    (``ResolvedLayout`` has the same fields), read as it is."""

    @property
    def gpus(self) -> int: ...
    @property
    def tp(self) -> int: ...
    @property
    def pp(self) -> int: ...
    @property
    def cp(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def ep(self) -> int: ...
    @property
    def zero(self) -> int: ...
    @property
    def virtual_stages(self) -> int: ...
    @property
    def tp_overlap(self) -> bool: ...
    @property
    def ep_overlap(self) -> bool: ...
    @property
    def offload(self) -> str: ...
    @property
    def pipeline_layout(self) -> PipelineLayout | None: ...
    @property
    def sequence_parallel(self) -> bool | None: ...


def sequence_parallel_of(lay: TrainSplit) -> bool:
    """Whether a layout runs sequence parallelism: as it states, or (``None``) with TP > 1."""
    sp = lay.sequence_parallel
    return lay.tp > 1 if sp is None else sp


def _check(model: ModelSpec, lay: TrainSplit, seq_tokens: int) -> None:
    if lay.tp * lay.pp * lay.cp * lay.dp != lay.gpus:
        raise InvalidWorkload(
            said("layout tp {tp} x cp {cp} x pp {pp} x dp {dp} = {value:,} is not the {gpus:,} GPUs", tp=lay.tp,
                 cp=lay.cp, pp=lay.pp, dp=lay.dp, value=lay.tp * lay.cp * lay.pp * lay.dp, gpus=lay.gpus))
    refusal = cp_split_refusal(lay.cp, seq_tokens)
    if refusal is not None:
        raise InvalidWorkload(refusal)
    chunks = None if lay.pipeline_layout is not None else chunks_refusal(lay.pp, lay.virtual_stages,
                                                                          model.num_layers, model.name)
    if chunks is not None:
        raise InvalidWorkload(chunks)


def _check_interleaving(lay: TrainSplit, microbatches: int, train_stack: str) -> None:
    """Refuse interleaved chunks the training stack would not run with this step's micro-batches (one line)."""
    refusal = interleaving_refusal(lay.pp, lay.virtual_stages, microbatches, train_stack)
    if refusal is not None:
        raise InvalidWorkload(said("--virtual-stages {virtual_stages} with PP {pp} and {microbatches} "
                                   "micro-batch{value} a step: {refusal}", virtual_stages=lay.virtual_stages,
                                   pp=lay.pp, microbatches=microbatches, value='es' if microbatches != 1 else '',
                                   refusal=refusal))
