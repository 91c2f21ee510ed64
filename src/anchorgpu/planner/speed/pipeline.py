"""A pipeline's share of a training step: the micro-batches a step accumulates (the one count a plan's speed, its
batch line and its memory read: :func:`step_microbatches`), the bubble of a 1F1B, interleaved or sequential
(:func:`pipeline_schedule`) schedule and the layers of its busiest rank. Pure."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Literal

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.memory.model_states import stage_layers
from anchorgpu.planner.qlora_tp import stages_alone

__all__ = [
    "DEFAULT_GLOBAL_BATCH_TOKENS",
    "FINETUNE_GLOBAL_BATCH_SEQUENCES",
    "PipelineSchedule",
    "bubble_line",
    "default_batch_tokens",
    "counts_embedding_and_loss",
    "chunks_refusal",
    "interleaving_refusal",
    "interleaving_refusal_line",
    "microbatches_for",
    "pipeline_bubble_fraction",
    "pipeline_bubble_stage_times",
    "pipeline_schedule",
    "p2p_transfers_per_microbatch",
    "slowest_stage_layers",
    "step_microbatches",
    "timed_batch_tokens",
]

DEFAULT_GLOBAL_BATCH_TOKENS = 4 * 2**20
"""Tokens per optimizer step when none is given: 4M (4,194,304), as Llama 2 and most 7-70B runs used
(Touvron et al. 2023, section 2.2; GPT-3 used 0.5-3.2M, Brown et al. 2020 Table 2.1). The default for pretraining
(``--task train``); fine-tuning takes :data:`FINETUNE_GLOBAL_BATCH_SEQUENCES`."""

FINETUNE_GLOBAL_BATCH_SEQUENCES = 32
"""Sequences per optimizer step when a LoRA or QLoRA run gives no global batch: 32, what the fine-tuning recipes run
with: torchtune's single-GPU Llama 3.1 8B QLoRA recipe takes ``batch_size: 2`` x ``gradient_accumulation_steps: 16``
(pytorch/torchtune@0b3e04ad recipes/configs/llama3_1/8B_qlora_single_device.yaml), and NeMo's LoRA benchmarks ran at
a global batch of 32 sequences (NVIDIA/NeMo@070a0bb1 docs/source/performance/performance_summary.md, fine-tuning
table; the N24-*-LORA rows of data/measured_runs.json). 4M tokens, the pretraining default, is 2,048 sequences of
2,048 tokens: minutes a step on one GPU, a batch no fine-tuning recipe uses."""


def default_batch_tokens(task: str, seq_tokens: int) -> int:
    """The global batch a training step is planned with when none is given: :data:`FINETUNE_GLOBAL_BATCH_SEQUENCES`
    sequences of ``seq_tokens`` for LoRA and QLoRA, else (pretraining) :data:`DEFAULT_GLOBAL_BATCH_TOKENS`.

    >>> default_batch_tokens("lora", 2048), default_batch_tokens("qlora", 4096), default_batch_tokens("train", 2048)
    (65536, 131072, 4194304)
    """
    if task in ("lora", "qlora"):
        return FINETUNE_GLOBAL_BATCH_SEQUENCES * seq_tokens
    return DEFAULT_GLOBAL_BATCH_TOKENS


PipelineSchedule = Literal["1f1b", "sequential"]
"""How a training stack runs its pipeline stages: ``1f1b`` overlaps the micro-batches across the stages (Megatron-Core's
and PyTorch's pipelining schedules, interleaved where ``v > 1``); ``sequential`` runs each micro-batch through the
stages one after another with no overlap (naive model parallelism: accelerate's ``device_map``)."""


def pipeline_schedule(task: str, train_stack: str) -> PipelineSchedule:
    """The pipeline schedule a plan of ``task`` on ``train_stack`` is timed with: ``sequential`` for QLoRA on the
    PyTorch stack, else ``1f1b``.

    On the PyTorch stack the one public split of a bitsandbytes 4-bit base over GPUs by layers is accelerate's
    ``device_map`` (transformers' ``from_pretrained(..., device_map="auto")``, which bitsandbytes' 4-bit loading relies
    on: huggingface/blog PR #1138; :mod:`anchorgpu.planner.qlora_tp`): each GPU holds whole layers and a micro-batch's
    activations are moved to the next GPU's layers, so "all but one GPU are idle at any given moment" (naive model
    parallelism: huggingface/transformers@032b32ab docs/source/en/perf_train_gpu_many.md, "From Naive Model
    Parallelism to Pipeline Parallelism"); gradient accumulation runs the micro-batches one after another. No
    PyTorch pipelining schedule (torch.distributed.pipelining, torchtitan) runs a bitsandbytes base: torchtitan's
    QLoRA is an open pull request (pytorch/torchtitan #2487). NeMo's QLoRA over Megatron-Core (``megatron``) runs
    Megatron-Core's 1F1B schedule (NVIDIA/NeMo ``nemo/collections/nlp/modules/common/megatron/adapters/qlora.py``).

    >>> pipeline_schedule("qlora", "pytorch"), pipeline_schedule("qlora", "megatron"), pipeline_schedule("lora", "pytorch")
    ('sequential', '1f1b', '1f1b')
    """
    return "sequential" if stages_alone(task, train_stack) else "1f1b"


def p2p_transfers_per_microbatch(pp: int, schedule: PipelineSchedule = "1f1b") -> int:
    """Stage-to-stage transfers on a step's critical path per micro-batch: one forward and one backward under 1F1B
    (its other transfers overlap other micro-batches' work, as Megatron-LM does), every one of the ``p - 1`` hops
    each way when the stages run one after another (``sequential``: nothing else runs while a micro-batch's
    activations move to the next GPU); none without stages.

    >>> p2p_transfers_per_microbatch(1), p2p_transfers_per_microbatch(4), p2p_transfers_per_microbatch(4, "sequential")
    (0, 2, 6)
    """
    if pp <= 1:
        return 0
    return 2 * (pp - 1) if schedule == "sequential" else 2


def pipeline_bubble_stage_times(pp: int, microbatches: int, virtual_stages: int = 1,
                                schedule: PipelineSchedule = "1f1b") -> float:
    """Idle time of a pipeline step, in stage times (one micro-batch's forward and backward through the ``v`` chunks
    of one rank): ``(p-1)/v + (p - min(m, p)) * (v-1)/v``; ``m * (p-1)`` when the stages run one after another
    (``schedule`` ``sequential``: each micro-batch's forward and backward pass through all ``p`` ranks in turn while
    the other ``p - 1`` wait, :func:`pipeline_schedule`), a bubble of ``(p-1)/p`` of the step whatever ``m`` is.

    With ``m >= p`` micro-batches and ``v`` chunks a rank this is Narayanan et al. 2021's ``(p-1)/v`` (arXiv
    2104.04473, section 2.2): the first micro-batch reaches the last rank, and the last one leaves the first, after
    ``p - 1`` chunk passes. Megatron-Core's interleaved schedule keeps that bubble only when every group of
    micro-batches it runs through a chunk at a time holds at least ``p`` of them (schedules.py,
    ``forward_backward_pipelining_with_interleaving``; :func:`interleaving_refusal`): a rank then has work for the ``p``
    chunk passes a micro-batch takes to come back to it. With ``m < p`` it has ``m`` passes of work and waits
    ``p - m`` at each of the ``v - 1`` returns to it forward and again backward, ``(p-m)(v-1)/v`` stage times more;
    at ``m = 1`` the step is the one micro-batch through all ``p * v`` chunks in turn, ``p`` stage times whatever
    ``v`` is. Without interleaving (``v = 1``) it is 1F1B's ``p - 1`` for any ``m``. Timing each rank's order of
    operations as Megatron-Core's ``get_schedule_table`` and ``get_pp_rank_microbatches`` lay them out (warm-up
    forwards, one-forward-one-backward pairs, cool-down backwards), each waiting for its input from the neighbouring
    chunk, gives this for every ``p``, ``v``, ``m`` and forward-to-backward ratio where the groups hold ``p`` or more
    micro-batches, and with one group of ``m < p``.

    >>> pipeline_bubble_stage_times(8, 64, 4), pipeline_bubble_stage_times(8, 8, 4), pipeline_bubble_stage_times(8, 3)
    (1.75, 1.75, 7.0)
    >>> pipeline_bubble_stage_times(8, 1, 4), pipeline_bubble_stage_times(8, 2, 4), pipeline_bubble_stage_times(1, 1, 1)
    (7.0, 6.25, 0.0)
    >>> pipeline_bubble_stage_times(4, 16, schedule="sequential"), pipeline_bubble_stage_times(1, 16, schedule="sequential")
    (48.0, 0.0)
    """
    if pp < 1 or microbatches < 1 or virtual_stages < 1:
        raise InvalidWorkload(said("pipeline stages, micro-batches and virtual stages must be at least 1"))
    if schedule == "sequential":
        return float(microbatches * (pp - 1))
    return (pp - 1) / virtual_stages + (pp - min(microbatches, pp)) * (virtual_stages - 1) / virtual_stages


def pipeline_bubble_fraction(pp: int, microbatches: int, virtual_stages: int = 1,
                             schedule: PipelineSchedule = "1f1b") -> float:
    """Idle fraction of a pipeline step: the bubble (:func:`pipeline_bubble_stage_times`) over the ``m`` stage times
    of work plus the bubble; ``(p-1) / (v*m + p - 1)`` once ``m >= p`` (Narayanan et al. 2021, section 2.2), and
    ``(p-1)/p`` at ``m = 1`` whatever ``v`` is, and for any ``m`` when the stages run one after another.

    >>> pipeline_bubble_fraction(1, 1), pipeline_bubble_fraction(4, 13), pipeline_bubble_fraction(8, 1, 4)
    (0.0, 0.1875, 0.875)
    >>> pipeline_bubble_fraction(8, 64, 4) == 7 / (4 * 64 + 7), pipeline_bubble_fraction(4, 16, schedule="sequential")
    (True, 0.75)
    """
    bubble = pipeline_bubble_stage_times(pp, microbatches, virtual_stages, schedule)
    return bubble / (microbatches + bubble)


def interleaving_refusal(pp: int, virtual_stages: int, microbatches: int, train_stack: str) -> str | None:
    """Why the training stack refuses ``v`` interleaved chunks a rank with ``m`` micro-batches a step, or ``None``
    where it runs them (always without interleaving). The clause says what is wrong; the caller names the inputs.

    * ``megatron``: Megatron-Core runs the micro-batches through each chunk in groups of
      ``--microbatch-group-size-per-virtual-pipeline-stage``, by default the pipeline size ``p``
      (model_parallel_config.py, ``microbatch_group_size_per_vp_stage``). Its interleaved schedule raises when that
      group is outside ``[p, m]`` (so ``m < p`` always fails) or when ``m`` leaves a last group of more than none and
      fewer than ``p``: by default, unless ``m`` is a multiple of ``p``
      (NVIDIA/Megatron-LM@00611e6e megatron/core/pipeline_parallel/schedules.py,
      ``forward_backward_pipelining_with_interleaving``). The planner assumes the default group.
    * ``pytorch``: PyTorch's ``ScheduleInterleaved1F1B`` (torchtitan's) runs ``max(1, m // p)`` rounds and raises
      unless they divide ``m`` (pytorch/pytorch@1fd7abc2 torch/distributed/pipelining/schedules.py); it runs
      ``m < p`` as one round, with the bubble of :func:`pipeline_bubble_stage_times`.

    >>> interleaving_refusal(8, 4, 1, "megatron")
    'Megatron-Core interleaves only when the micro-batches a step are a multiple of the 8 pipeline stages'
    >>> interleaving_refusal(8, 4, 12, "megatron") is not None, interleaving_refusal(8, 4, 16, "megatron")
    (True, None)
    >>> interleaving_refusal(8, 4, 1, "pytorch"), interleaving_refusal(4, 2, 9, "pytorch")
    (None, "PyTorch's interleaved 1F1B needs its 2 rounds (micro-batches // pipeline stages) to divide the micro-batches")
    >>> interleaving_refusal(8, 1, 3, "megatron") is None
    True
    """
    if virtual_stages <= 1 or pp <= 1:
        return None
    if train_stack == "pytorch":
        rounds = max(1, microbatches // pp)
        if microbatches % rounds:
            return (said("PyTorch's interleaved 1F1B needs its {rounds} rounds (micro-batches // pipeline stages) "
                         "to divide the micro-batches", rounds=rounds))
        return None
    if microbatches < pp or microbatches % pp:
        return said("Megatron-Core interleaves only when the micro-batches a step are a multiple of the {pp} "
                    "pipeline stages", pp=pp)
    return None


def microbatches_for(global_batch_tokens: int, *, dp: int, micro_batch: int, seq_tokens: int) -> int:
    """Micro-batches per data-parallel rank in one step (gradient accumulation), rounded up. Only the planner's own
    default batch is ever rounded here, and the plan says so (:func:`~anchorgpu.planner.global_batch.batch_timed_line`):
    ``plan()`` refuses a stated batch that is not whole micro-batches for each rank
    (:func:`~anchorgpu.planner.global_batch.check_split`), the layout chooser and the sweep keep only the layouts it
    splits, and every measured run's batch splits exactly.

    >>> microbatches_for(4 * 2**20, dp=4, micro_batch=1, seq_tokens=4096)
    256
    """
    per_micro = dp * micro_batch * seq_tokens
    if global_batch_tokens < per_micro:
        raise InvalidWorkload(
            said("--global-batch {global_batch_tokens:,}: smaller than one micro-batch per data-parallel rank "
                 "({dp:,} x {micro_batch:,} x {seq_tokens:,} = {per_micro:,} tokens)",
                 global_batch_tokens=global_batch_tokens, dp=dp, micro_batch=micro_batch, seq_tokens=seq_tokens,
                 per_micro=per_micro))
    return math.ceil(global_batch_tokens / per_micro)


def timed_batch_tokens(stated_tokens: int | None, *, dp: int, micro_batch: int, seq_tokens: int,
                       default_tokens: int = DEFAULT_GLOBAL_BATCH_TOKENS) -> int:
    """The global batch a training step is timed with, before :func:`microbatches_for` counts it: a stated batch as
    given (``plan()`` has refused one that is not whole micro-batches for each rank), else ``default_tokens`` (the
    task's :func:`default_batch_tokens`), raised to one micro-batch per data-parallel rank where a layout's round of
    ``dp x micro_batch x seq_tokens`` tokens is larger.

    >>> timed_batch_tokens(None, dp=3, micro_batch=1, seq_tokens=4096), timed_batch_tokens(None, dp=2048, micro_batch=1, seq_tokens=4096)
    (4194304, 8388608)
    >>> timed_batch_tokens(131_072, dp=8, micro_batch=1, seq_tokens=4096)
    131072
    >>> timed_batch_tokens(None, dp=64, micro_batch=1, seq_tokens=2048, default_tokens=default_batch_tokens("lora", 2048))
    131072
    """
    if stated_tokens is not None:
        return stated_tokens
    return max(default_tokens, dp * micro_batch * seq_tokens)


def step_microbatches(stated_tokens: int | None, *, dp: int, micro_batch: int, seq_tokens: int,
                      default_tokens: int = DEFAULT_GLOBAL_BATCH_TOKENS) -> int:
    """The micro-batches each data-parallel rank runs in one training step: :func:`microbatches_for` of
    :func:`timed_batch_tokens`. A plan reads this one count everywhere: the speed estimate times it and its batch line
    states it (:func:`~anchorgpu.planner.global_batch.batch_timed_line`), the interleaving check refuses with it and
    the memory's interleaved activation factor divides by it. A default batch that is not whole micro-batches for the
    layout is rounded up (4,194,304 tokens over DP 3 of 4,096-token sequences: 342, not 341).

    >>> step_microbatches(None, dp=3, micro_batch=1, seq_tokens=4096), step_microbatches(131_072, dp=8, micro_batch=1, seq_tokens=4096)
    (342, 4)
    """
    batch = timed_batch_tokens(stated_tokens, dp=dp, micro_batch=micro_batch, seq_tokens=seq_tokens,
                               default_tokens=default_tokens)
    return microbatches_for(batch, dp=dp, micro_batch=micro_batch, seq_tokens=seq_tokens)


def slowest_stage_layers(layers: int, pp: int, virtual_stages: int = 1, stated: int | None = None) -> int:
    """Layers on the busiest pipeline rank when ``layers`` are split into ``pp * v`` chunks as evenly as whole
    layers allow and each rank holds ``v`` of them: ``ceil(layers / pp)``; ``stated``, the busiest rank's layers of
    an explicit layout (:attr:`~anchorgpu.planner.pipeline_layout.PipelineLayout.busiest_rank_layers`), when given.

    The planner's own layouts divide evenly (``plan()`` refuses ``v`` that divides neither the layers nor the layers
    with the embedding and the loss counted as one each, as Megatron-LM does: :func:`counts_embedding_and_loss`);
    published runs do not always: torchtitan splits Llama 3.1 405B's 126 layers into 16
    chunks of 7 or 8 (``generate_split_points``), and the Llama 3 paper takes one layer off the first and last
    of its 16 stages. A step runs at the pace of the busiest rank.

    >>> slowest_stage_layers(126, 8, 2), slowest_stage_layers(126, 16), slowest_stage_layers(80, 4, 5)
    (16, 8, 20)
    >>> slowest_stage_layers(61, 2, 4, stated=32)
    32
    """
    return stage_layers(layers, pp, stated)  # the memory's rule: one busiest rank for both


def counts_embedding_and_loss(layers: int, pp: int, virtual_stages: int) -> bool:
    """Whether ``pp * v`` chunks split the layers evenly only with the embedding and the loss counted as a layer
    each, as Megatron-Core does with ``--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split``
    (the Megatron-MoE model zoo runs Qwen3-235B-A22B's 94 layers as PP 8 x VP 4 that way: 96 / 32 = 3 a chunk, the
    first chunk the embedding and two layers, the last two layers and the loss). The busiest rank holds
    ``ceil(layers / pp)`` layers either way (:func:`slowest_stage_layers`).

    >>> counts_embedding_and_loss(94, 8, 4), counts_embedding_and_loss(96, 8, 4), counts_embedding_and_loss(126, 5, 2)
    (True, False, False)
    """
    chunks = pp * virtual_stages
    return bool(layers % chunks) and (layers + 2) % chunks == 0


def chunks_refusal(pp: int, virtual_stages: int, layers: int, model_name: str) -> str | None:
    """Why ``pp x virtual_stages`` chunks cannot hold ``layers`` layers (more chunks than layers), or ``None``: one
    line for ``plan()``'s layout check, before the memory, and the speed model's own.

    >>> chunks_refusal(8, 8, 126, "m") is None, chunks_refusal(16, 8, 126, "m")
    (True, '--virtual-stages 8: pp 16 x v 8 chunks is more than the 126 layers of m')
    """
    if pp * virtual_stages <= layers:
        return None
    return said("--virtual-stages {virtual_stages}: pp {pp} x v {virtual_stages} chunks is more than the {layers} "
                "layers of {model_name}", virtual_stages=virtual_stages, pp=pp, layers=layers, model_name=model_name)


def interleaving_refusal_line(pp: int, virtual_stages: int, *, dp: int, micro_batch: int, seq_tokens: int,
                              global_batch_tokens: int, batch_given: bool, train_stack: str) -> str | None:
    """:func:`interleaving_refusal` as the one line a plan refuses with, naming the layout and the batch (``batch_given``:
    the user's ``--global-batch``, else the default one the plan times); ``None`` where the stack runs it.

    >>> interleaving_refusal_line(8, 4, dp=1, micro_batch=1, seq_tokens=4096, global_batch_tokens=4096,
    ...                           batch_given=True, train_stack="megatron")  # doctest: +ELLIPSIS
    '--virtual-stages 4 with --pp 8: Megatron-Core interleaves only when ... makes 1; use --virtual-stages 1 or a global batch of a multiple of 32,768 tokens'
    """
    if virtual_stages <= 1 or pp <= 1:
        return None
    m = microbatches_for(global_batch_tokens, dp=dp, micro_batch=micro_batch, seq_tokens=seq_tokens)
    refusal = interleaving_refusal(pp, virtual_stages, m, train_stack)
    if refusal is None:
        return None
    return (f"--virtual-stages {virtual_stages} with --pp {pp}: {refusal}, and "
            + ("--global-batch" if batch_given else "the default global batch of")
            + f" {global_batch_tokens:,} tokens over DP {dp} x micro-batch {micro_batch} x {seq_tokens:,} tokens makes "
            f"{m}; use --virtual-stages 1 or a global batch of a multiple of {pp * dp * micro_batch * seq_tokens:,} tokens")


@lru_cache(maxsize=256)
def _plain_bubble_line(p1: int, v: int, share_percent: str) -> str:
    return said("pipeline bubble (p-1)/v = {p1}/{v} micro-batch times per step ({share}% of it)", p1=p1, v=v,
                share=share_percent)


def bubble_line(pp: int, virtual_stages: int, microbatches: int, fraction_of_step: float,
                schedule: PipelineSchedule = "1f1b") -> str:
    """The assumption line of a step's pipeline bubble (:func:`pipeline_bubble_stage_times`); ``fraction_of_step``:
    the bubble's share of the whole step as timed; ``schedule``: :func:`pipeline_schedule`.

    >>> bubble_line(8, 4, 64, 0.02)
    'pipeline bubble (p-1)/v = 7/4 micro-batch times per step (2.0% of it)'
    >>> bubble_line(8, 2, 2, 0.7)
    'pipeline bubble (p-1)/v + (p-m)(v-1)/v = 7/2 + 6/2 = 6.5 micro-batch times per step: 2 micro-batches, fewer than the 8 stages, leave each GPU waiting for them to come round its 2 chunks (70.0% of it)'
    >>> print(bubble_line(4, 1, 16, 0.74, "sequential"))  # doctest: +ELLIPSIS
    pipeline bubble m(p-1) = 16 x 3 = 48 micro-batch times per step: the layers run one after another (device_map)...NeMo's 1F1B
    """
    p, v, m = pp, virtual_stages, microbatches
    if schedule == "sequential":
        return said("pipeline bubble m(p-1) = {m} x {p1} = {idle} micro-batch times per step: the layers run one after "
                    "another (device_map), each micro-batch through the {p} GPUs in turn forward and backward while the "
                    "other {p1} {wait}, so each GPU idles (p-1)/p of the step whatever the batch ({share:.1%} of it as "
                    "timed): bitsandbytes' 4-bit base splits over GPUs by accelerate's device_map on the PyTorch stack, "
                    "naive model parallelism with no micro-batch overlap (huggingface/transformers "
                    "docs/source/en/perf_train_gpu_many.md); --train-stack megatron times NeMo's 1F1B",
                    m=m, p1=p - 1, idle=m * (p - 1), p=p, wait="waits" if p == 2 else "wait", share=fraction_of_step)
    if v == 1 or m >= p:  # the share as '{:.1%}' writes it (x 100, fixed): the said line memoised on what it shows
        return _plain_bubble_line(p - 1, v, f"{fraction_of_step * 100:.1f}")
    values = {"p1": p - 1, "v": v, "rest": (p - m) * (v - 1), "times": pipeline_bubble_stage_times(p, m, v), "m": m,
              "p": p, "share": fraction_of_step}
    if m == 1:
        return said("pipeline bubble (p-1)/v + (p-m)(v-1)/v = {p1}/{v} + {rest}/{v} = {times:g} micro-batch times per "
                    "step: {m} micro-batch, fewer than the {p} stages, leave each GPU waiting for it to come round "
                    "its {v} chunks ({share:.1%} of it)", **values)
    return said("pipeline bubble (p-1)/v + (p-m)(v-1)/v = {p1}/{v} + {rest}/{v} = {times:g} micro-batch times per step: "
                "{m} micro-batches, fewer than the {p} stages, leave each GPU waiting for them to come round its {v} "
                "chunks ({share:.1%} of it)", **values)
