"""A pipeline's share of a training step: the micro-batches a step accumulates, the bubble of a 1F1B or interleaved
schedule and the layers of its busiest rank. Pure; stdlib only."""

from __future__ import annotations

import math

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.memory.model_states import stage_layers

__all__ = ["counts_embedding_and_loss", "microbatches_for", "pipeline_bubble_fraction", "slowest_stage_layers"]


def pipeline_bubble_fraction(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Idle fraction of a pipeline step: ``(p-1) / (v*m + p - 1)``.

    Source: Narayanan et al. 2021 (arXiv 2104.04473), section 2.2: the 1F1B bubble is ``(p-1)/m`` of the
    ideal time, i.e. ``(p-1)/(m+p-1)`` of the whole step; interleaving ``v`` stages per GPU divides it by v.

    >>> pipeline_bubble_fraction(1, 1), pipeline_bubble_fraction(4, 13)
    (0.0, 0.1875)
    """
    if pp < 1 or microbatches < 1 or virtual_stages < 1:
        raise InvalidWorkload("pipeline stages, micro-batches and virtual stages must be at least 1")
    return (pp - 1) / (virtual_stages * microbatches + pp - 1)


def microbatches_for(global_batch_tokens: int, *, dp: int, micro_batch: int, seq_tokens: int) -> int:
    """Micro-batches per data-parallel rank in one step (gradient accumulation), rounded up.

    >>> microbatches_for(4 * 2**20, dp=4, micro_batch=1, seq_tokens=4096)
    256
    """
    per_micro = dp * micro_batch * seq_tokens
    if global_batch_tokens < per_micro:
        raise InvalidWorkload(
            f"--global-batch {global_batch_tokens:,}: smaller than one micro-batch per data-parallel rank "
            f"({dp} x {micro_batch} x {seq_tokens:,} = {per_micro:,} tokens)")
    return math.ceil(global_batch_tokens / per_micro)


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
