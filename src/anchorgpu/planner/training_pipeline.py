"""What a pipeline schedule adds to a training plan's memory: the refusal of interleaved chunks the training stack
would not run with the step's micro-batches, the first stage's extra activations under interleaving (Korthikanti et
al. 2022), the assumption naming an explicit pipeline layout, and what FSDP holds beyond its shards under a PyTorch
pipeline schedule. Pure."""

from __future__ import annotations

import math
from functools import lru_cache

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.pipeline_layout import PipelineLayout
from anchorgpu.planner.result import ResolvedLayout
from anchorgpu.planner.speed.pipeline import (
    default_batch_tokens,
    interleaving_refusal,
    interleaving_refusal_line,
    timed_batch_tokens,
)

__all__ = ["FSDP_PIPELINE_LINE", "check_interleaving", "fsdp2_unresharded", "fsdp2_unresharded_line",
           "fsdp_pipeline_held_bytes", "fsdp_units_line", "interleaved_activation_bytes",
           "interleaved_activation_line", "pipeline_layout_line"]


def check_interleaving(w: Workload, lay: ResolvedLayout, micro_batch: int, seq: int, microbatches: int) -> None:
    """Refuse interleaved chunks the training stack would not run with the step's ``microbatches``
    (:func:`~anchorgpu.planner.speed.pipeline.step_microbatches`, which the plan has counted), in one line naming the
    batch (the default one, as the speed estimate times it, when none is given): formed only for a refusal."""
    if interleaving_refusal(lay.pp, lay.virtual_stages, microbatches, w.train_stack) is None:
        return
    stated = w.global_batch_tokens
    batch = timed_batch_tokens(stated, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq,
                               default_tokens=default_batch_tokens(w.task, seq))
    line = interleaving_refusal_line(lay.pp, lay.virtual_stages, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq,
                                     global_batch_tokens=batch, batch_given=stated is not None,
                                     train_stack=w.train_stack)
    if line is not None:
        raise InvalidWorkload(line)


def pipeline_layout_line(layout: PipelineLayout) -> str:
    """What a plan with an explicit pipeline layout assumes of it: one line."""
    ranks = layout.rank_layers
    return (f"Pipeline layout {layout.text} as given (Megatron-Core's --pipeline-model-parallel-layout): "
            f"{len(layout.chunk_layers)} chunks, chunk i on rank i mod {layout.pp}, {min(ranks)} to {max(ranks)} "
            f"layers a rank; memory planned for the busiest rank's {max(ranks)}, the embedding on the first rank "
            "and the output layer on the last.")


FSDP_PIPELINE_LINE = said(
    "FSDP with pipeline stages as PyTorch runs them (torchtitan, torch.distributed.pipelining): the stage's 16-bit "
    "weights stay gathered between micro-batches (no reshard after forward) and its gradients accumulate unsharded "
    "in fp32 until the last micro-batch's backward pass reduce-scatters them, 6 bytes a parameter of the stage.")


def fsdp_pipeline_held_bytes(stage_params: int, gather_buffer_bytes: int) -> dict[str, int]:
    """What FSDP2 under a PyTorch pipeline schedule holds beyond its shards, per GPU: the stage's weights gathered in
    16 bit (torchtitan's ``reshard_after_forward = not pp_enabled``; the one-layer gather buffer is part of them) and
    the gradients accumulated unsharded in the fp32 reduce type until the last micro-batch (the pipeline stage turns
    gradient sync off for the others, ``PipelineStage.backward_maybe_with_nosync``; FSDP2 upcasts an accumulated
    gradient to its reduce type). With them torchtitan's Llama 3.1 405B on 512 H100 (TP 8 x PP 8 x FSDP 8,
    interleaved) plans at 72 GiB against 72.7 measured (tests/planner/test_op_sac_memory.py).

    >>> fsdp_pipeline_held_bytes(1000, 100)
    {'gathered_stage_weights_bytes': 1900, 'accumulated_gradients_bytes': 4000}
    """
    return {"gathered_stage_weights_bytes": max(0, 2 * stage_params - gather_buffer_bytes),
            "accumulated_gradients_bytes": 4 * stage_params}


@lru_cache(maxsize=64)  # said by every FSDP2 plan, the same for a model on a layout
def fsdp_units_line(unit_gradients_bytes: int, gather_buffer_bytes: int, mixed: bool) -> str:
    """The plan's line on what FSDP2 holds unsharded without pipeline stages
    (:mod:`~anchorgpu.planner.memory.fsdp_units`): torchtitan's units, which accelerate 1.15.0's wrap makes too.

    >>> fsdp_units_line(2**30, 2**31, True)[:60]
    'FSDP2 units as torchtitan and accelerate wrap them (apply_fs'
    """
    from anchorgpu.units import fmt_bytes

    return said("FSDP2 units as torchtitan and accelerate wrap them (apply_fsdp; accelerate 1.15.0 fsdp2_prepare_model "
                "alike: the embedding, each block, the final norm with the output layer kept gathered from forward "
                "into backward): the largest two gathered together, {gathered}, and in backward a unit's unsharded "
                "16-bit gradients with its reduce-scatter input in {precision} (FSDP2 foreach_reduce), the previous "
                "unit's input still held while the next unit computes (post_backward keeps it in reduce_scatter_state "
                "until the next unit's reduce-scatter), {held} more at the fullest moment.",
                gathered=fmt_bytes(gather_buffer_bytes), precision="fp32" if mixed else "bf16",
                held=fmt_bytes(unit_gradients_bytes))


def fsdp2_unresharded(w: Workload, lay: ResolvedLayout) -> bool:
    """Whether the launch is FSDP2 without resharding after forward below ZeRO-3, for full training on the PyTorch
    stack, sharding over DP x CP, without offload: ``--recipe accelerate`` (``Workload.launch_accelerate``) with TP or
    CP > 1, which its DeepSpeed plugin cannot run (no TP/CP size) and the recipe writes as
    ``fsdp_reshard_after_forward: false`` with a ``parallelism_config`` (accelerate 1.15.0 ``parallelism_config.py``
    ``fsdp_dim_names``: ``dp_shard_cp``); and ``--recipe torchrun-fsdp`` (``Workload.launch_torchrun_fsdp``) at ZeRO-1/2,
    whose ``anchorgpu_train.json`` sets ``fsdp.reshard_after_forward`` false (:mod:`anchorgpu.recipes.training`). Not
    where DP x CP is 1 under accelerate: it refuses FSDP2 with nothing to shard across (``_validate_accelerator``) and
    runs TP alone; torchrun-fsdp's settings ask for FSDP2 there too (``fully_shard`` over one rank: FSDP2's
    ``world_size == 1`` paths), its gradients then whole in fp32.

    >>> lay = ResolvedLayout(gpus=4, tp=2, pp=1, dp=2, ep=1, zero=1, fsdp=False, offload="none", sequence_parallel=True)
    >>> fsdp2_unresharded(Workload(task="train", train_stack="pytorch", launch_accelerate=True), lay)
    True
    >>> one = ResolvedLayout(gpus=8, tp=1, pp=1, dp=8, ep=1, zero=2, fsdp=False, offload="none", sequence_parallel=False)
    >>> fsdp2_unresharded(Workload(task="train", train_stack="pytorch", launch_torchrun_fsdp=True), one)
    True
    >>> fsdp2_unresharded(Workload(task="train", train_stack="pytorch", launch_accelerate=True), one)
    False
    """
    launched = ((w.launch_accelerate and (lay.tp > 1 or lay.cp > 1) and lay.dp * lay.cp > 1)
                or (w.launch_torchrun_fsdp and lay.zero >= 1))
    return (launched and w.task == "train" and w.train_stack == "pytorch" and lay.zero < 3 and not lay.fsdp
            and lay.offload == "none")


def fsdp2_unresharded_line(extra_bytes: int, zero: int, mixed: bool, accelerate: bool) -> str:
    """The plan's line for :func:`fsdp2_unresharded` layouts."""
    from anchorgpu.units import fmt_bytes

    launch = (f"ZeRO-{zero} with TP/CP as accelerate launches it: FSDP2 without resharding after forward (its DeepSpeed "
              "plugin has no TP/CP size)" if accelerate else
              f"ZeRO-{zero} as torchrun-fsdp launches it: FSDP2 without resharding after forward (anchorgpu_train.json "
              "fsdp.reshard_after_forward false), not DeepSpeed's ZeRO and its buffers")
    masters = "accelerate keeps fp32 masters" if accelerate else "the script keeps the parameters in fp32"
    return (f"{launch}, so the optimizer state and the gradients are sharded over DP x CP as at ZeRO-2, the gradients "
            f"in the sharded parameters' {'fp32' if mixed else 'bf16'} ({masters} under mixed precision), and every "
            "unit's 16-bit weights stay gathered from forward into backward (FSDPParamGroup.reshard returns in the "
            "forward state); each unit's backward adds its 16-bit gradients and reduce-scatter input beside them, less "
            f"the units already resharded (FSDP2 post_backward, foreach_reduce): {fmt_bytes(extra_bytes)} at the "
            "fullest moment, counted with the gradients.")


def interleaved_activation_bytes(one_f_one_b_bytes: int, pp: int, microbatches: int) -> int:
    """The activations the first pipeline rank holds under an interleaved schedule: ``(1 + (p-1)/(p·m))`` times those
    of 1F1B with ``m`` micro-batches a step (Korthikanti et al. 2022, section 4.2.3).

    >>> interleaved_activation_bytes(1000, 8, 16)
    1055
    """
    return math.ceil(one_f_one_b_bytes * (1 + (pp - 1) / (pp * microbatches)))


@lru_cache(maxsize=64, typed=True)  # said by every interleaved plan, the same for a count of chunks
def interleaved_activation_line(virtual_stages: int) -> str:
    """The assumption of :func:`interleaved_activation_bytes`: one line."""
    return said("Interleaved pipeline ({v} chunks per GPU): the first stage holds (1 + (p-1)/(p·m)) times the "
                "activations of 1F1B.", v=virtual_stages)
