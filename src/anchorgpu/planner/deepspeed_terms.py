"""DeepSpeed's own buffers in a training plan, for the layouts DeepSpeed runs: ZeRO-1/2's reduce buckets, offload
staging, edge-parameter overhang and step copies (:mod:`~anchorgpu.planner.deepspeed_zero`,
:mod:`~anchorgpu.planner.deepspeed_partition`), and, for a deepspeed launch at ZeRO-3, its reduce bucket. Pure."""

from __future__ import annotations

from typing import NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner.deepspeed_partition import boundary_overhang_numel
from anchorgpu.planner.deepspeed_zero import (
    COMM_BYTES,
    largest_param_numel,
    reduce_bucket_numel,
    runs_zero_optimizer,
    zero_buffer_terms,
    zero_buffers_line,
    zero_settings,
)
from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.result import ResolvedLayout
from anchorgpu.planner.training_pipeline import fsdp2_unresharded

__all__ = ["DeepSpeedTerms", "deepspeed_terms", "zero3_bucket_bytes", "zero3_bucket_line"]


class DeepSpeedTerms(NamedTuple):
    """The breakdown's DeepSpeed terms, the bytes they add to the gradients and to the optimizer (the step's excess over
    the backward pass's peak), and the plan's line (empty: none)."""

    breakdown: dict[str, int]
    gradients_bytes: int
    step_excess_bytes: int
    line: str


def zero3_bucket_bytes(hidden_size: int) -> int:
    """DeepSpeed ZeRO-3's reduce bucket: ``stage3.py`` ``__init__`` ("# IPG") allocates ``torch.empty(
    self.reduce_bucket_size, dtype=dtype)`` for each communication dtype (one: bf16 under ``bf16.enabled``) when
    ``contiguous_gradients`` is on, after the optimizer's state and before training, and keeps it for the whole run
    (``__add_grad_to_ipg_bucket`` copies each gradient in, ``__reduce_and_partition_ipg_grads`` reduce-scatters it); the
    recipe writes ``reduce_bucket_size`` hidden² (:func:`~anchorgpu.planner.deepspeed_zero.reduce_bucket_numel`).

    >>> zero3_bucket_bytes(4096)
    33554432
    """
    return reduce_bucket_numel(hidden_size) * COMM_BYTES if zero_settings().contiguous_gradients else 0


def zero3_bucket_line(bucket_bytes: int, hidden_size: int) -> str:
    """The plan's line for :func:`zero3_bucket_bytes`."""
    from anchorgpu.units import fmt_bytes

    return (f"DeepSpeed ZeRO-3 (the recipe's ds_config.json): one reduce bucket of hidden² = "
            f"{reduce_bucket_numel(hidden_size):,} bf16 values (stage3.py __init__ \"# IPG\"), "
            f"{fmt_bytes(bucket_bytes)} held for the whole run, counted with the gradients; the gathered units and "
            "their gradients are counted as FSDP2's.")


def deepspeed_terms(model: ModelSpec, w: Workload, lay: ResolvedLayout, *, mixed: bool, rest_gpu: float,
                    expert_gpu: float, shards: int, expert_dp: int, grad_value: int, update_value: int,
                    grads_bytes: int, activations_bytes: int) -> DeepSpeedTerms:
    """DeepSpeed's buffers for a plan's layout: ZeRO-1/2's where DeepSpeed builds that optimizer
    (:func:`~anchorgpu.planner.deepspeed_zero.runs_zero_optimizer`; ``rest_gpu``/``expert_gpu`` the parameters on the
    GPU, sharded over ``shards``/``expert_dp``), and ZeRO-3's reduce bucket where the launch is the deepspeed recipe's
    (``Workload.launch_deepspeed``); else none, and none where the launch runs FSDP2 in place of ZeRO-1/2
    (:func:`~anchorgpu.planner.training_pipeline.fsdp2_unresharded`: torchrun-fsdp's)."""
    if w.launch_deepspeed and (lay.zero == 3 or lay.fsdp):
        bucket = zero3_bucket_bytes(model.hidden_size)
        return DeepSpeedTerms({"zero3_reduce_bucket_bytes": bucket}, bucket, 0,
                              zero3_bucket_line(bucket, model.hidden_size))
    if fsdp2_unresharded(w, lay) or not runs_zero_optimizer(w.train_stack, lay.zero, lay.fsdp, lay.offload,
                               not mixed or (w.task == "train" and w.optimizer_state == "bf16"), lay.tp, lay.cp):
        return DeepSpeedTerms({}, 0, 0, "")
    # accelerate launches FP8 with its DeepSpeed plugin's keys: DeepSpeed's default bucket (recipes/training.py)
    plugin_defaults = w.launch_accelerate and w.train_precision == "fp8"
    # the edge parameters' parts outside the partition in grads_in_partition (deepspeed_partition), full training
    overhang = (boundary_overhang_numel(model, shards, expert_dp if lay.ep > 1 else 0)
                if w.task == "train" and lay.zero and lay.offload == "none" else 0)
    ds = zero_buffer_terms(rest_gpu / (shards if lay.zero else 1), expert_gpu / (expert_dp if lay.zero else 1),
                           grad_value, update_value, largest_param_numel(model, 1, 0 if w.task == "train" else w.lora_rank),
                           offload=lay.offload != "none", grads_bytes=grads_bytes,
                           expert_grads_bytes=mm.gradient_bytes(expert_gpu, bytes_per_value=grad_value, zero=lay.zero,
                                                                dp=expert_dp),
                           activations_bytes=activations_bytes, hidden_size=model.hidden_size, pp=lay.pp,
                           plugin_defaults=plugin_defaults, overhang_numel=overhang, partition_gradients=lay.zero == 2)
    added = (ds["zero_reduce_buckets_bytes"] + ds["zero_offload_staging_bytes"]
             + (ds["zero_boundary_overhang_bytes"] if lay.zero == 2 else 0))
    return DeepSpeedTerms(ds, added, ds["zero_step_excess_bytes"],
                          zero_buffers_line(ds, model.hidden_size, plugin_defaults, lay.zero))
