"""DeepSpeed ZeRO-1/2's own temporary buffers in a plan's memory: the reduce ("ipg") buckets held through the backward
pass, ZeRO-Offload's gradient staging buffers, and the step's flat gradient partition and its copy in the master's
dtype. The settings come from ``planner/data/deepspeed_zero.json``, the same file the deepspeed recipe writes into
``ds_config.json``, so a launch holds what its plan counts. Sources: DeepSpeed 0.19.8
``deepspeed/runtime/zero/stage_1_and_2.py`` (named at each function). Pure."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.training_states import zero_runs_deepspeed

__all__ = ["DATA_FILE", "ZeroSettings", "largest_param_numel", "offload_staging_bytes", "plugin_reduce_buckets_bytes", "reduce_bucket_numel",
           "reduce_buckets_bytes",
           "runs_zero_optimizer", "step_gradient_bytes", "step_held_bytes", "zero_buffer_terms", "zero_buffers_line",
           "zero_settings"]

DATA_FILE = "planner/data/deepspeed_zero.json"
COMM_BYTES = 2
"""Bytes a value of the reduce buckets and staging buffers: the communication dtype, bf16 under ``bf16.enabled`` (the
recipe's; ``stage_1_and_2.py`` ``communication_data_type``, the model's dtype, and ``self.dtype``)."""


@dataclass(frozen=True, slots=True)
class ZeroSettings:
    """The ``zero_optimization`` values the recipe writes and the plan counts (element counts)."""

    overlap_comm: bool
    contiguous_gradients: bool
    reduce_bucket_size: int
    allgather_bucket_size: int
    stage3_prefetch_bucket_size: int
    stage3_max_live_parameters: int
    stage3_max_reuse_distance: int
    sub_group_size: int


@lru_cache(maxsize=1)
def zero_settings() -> ZeroSettings:
    """:class:`ZeroSettings` from :data:`DATA_FILE`, read once."""
    doc = json.loads(resources.files("anchorgpu").joinpath(DATA_FILE).read_text("utf-8"))["zero_optimization"]
    return ZeroSettings(**{name: entry["value"] for name, entry in doc.items()})


def reduce_bucket_numel(hidden_size: int) -> int:
    """The ``reduce_bucket_size`` the recipe writes: hidden², what transformers' Trainer fills for ``"auto"``
    (``integrations/deepspeed.py`` ``HfTrainerDeepSpeedConfig.trainer_config_finalize``), in place of DeepSpeed's
    5e8 (:data:`DATA_FILE`).

    >>> reduce_bucket_numel(4096)
    16777216
    """
    return hidden_size * hidden_size


def runs_zero_optimizer(train_stack: str, zero: int, fsdp: bool, offload: str, bf16_state: bool, tp: int = 1,
                        cp: int = 1) -> bool:
    """Whether DeepSpeed builds its ZeRO-1/2 optimizer (``DeepSpeedZeroOptimizer``) for a layout: the layouts of
    :func:`~anchorgpu.planner.training_states.zero_runs_deepspeed` at stage 1-2, or at stage 0 where the recipe moves
    them under ZeRO (offload: ZeRO-Offload at stage 2; a bf16 optimizer state: stage 1, ``recipes/training.py``
    ``_zero_stage``). Plain stage 0 runs the engine's own all-reduce and keeps none of these buffers. Only without
    tensor or context parallelism: ds_config.json has neither (the deepspeed recipe refuses them) and accelerate runs
    such a plan with FSDP2.

    >>> runs_zero_optimizer("pytorch", 1, False, "none", False), runs_zero_optimizer("pytorch", 0, False, "none", False)
    (True, False)
    >>> runs_zero_optimizer("pytorch", 0, False, "optimizer", False), runs_zero_optimizer("megatron", 2, False, "none", True)
    (True, False)
    >>> runs_zero_optimizer("pytorch", 1, False, "none", False, tp=2)
    False
    """
    return (tp == 1 and cp == 1 and zero_runs_deepspeed(train_stack, zero, fsdp)
            and (zero >= 1 or offload != "none" or bf16_state))


def reduce_buckets_bytes(s: ZeroSettings, bucket_numel: int, pp: int = 1) -> int:
    """The reduce buckets a GPU holds through the backward pass, ``bucket_numel`` the ``reduce_bucket_size`` written
    (:func:`reduce_bucket_numel`): ``stage_1_and_2.py`` ``setup_buckets`` (called by ``process_gradients`` at the first
    gradient hook) allocates ``torch.empty(int(self.reduce_bucket_size))`` in the communication dtype when ``contiguous_gradients`` is on, and a second one with ``overlap_comm``; whatever the
    model's size. ``_release_ipg_buffers`` frees them at the end of the backward pass. With pipeline stages
    (``pp`` > 1) the engine turns ``overlap_comm`` off for a ``PipelineModule`` (``runtime/engine.py``
    ``_configure_zero_optimizer``: "Pipeline parallelism does not support overlapped communication, will be
    disabled") and ``reduce_gradients(pipeline_parallel=True)`` makes one bucket.

    >>> reduce_buckets_bytes(zero_settings(), 4096**2), reduce_buckets_bytes(zero_settings(), 4096**2, pp=2)
    (67108864, 33554432)
    """
    if not s.contiguous_gradients:
        return 0
    return (2 if s.overlap_comm and pp == 1 else 1) * bucket_numel * COMM_BYTES


def plugin_reduce_buckets_bytes() -> int:
    """The reduce bucket accelerate's DeepSpeed plugin launches with when no config file is given: its keys (accelerate
    ``utils/dataclasses.py`` ``DeepSpeedPlugin.__post_init__``: stage, offload devices, clipping, accumulation) set
    neither ``reduce_bucket_size`` nor ``overlap_comm``, and ``Accelerator._prepare_deepspeed`` fills only keys set to
    ``"auto"``, so DeepSpeed's defaults hold (:data:`DATA_FILE`): one bucket (``overlap_comm`` resolves to True at
    stage 3 only) of 5e8 values in bf16.

    >>> plugin_reduce_buckets_bytes()
    1000000000
    """
    return zero_settings().reduce_bucket_size * COMM_BYTES


@memo_on_frozen
def largest_param_numel(model: ModelSpec, tp: int = 1, lora_rank: int = 0) -> int:
    """The largest trainable parameter tensor (elements, split by TP): full training's embedding or output matrix
    (vocab x hidden) or largest linear matrix; with ``lora_rank`` the largest adapter matrix, bounded by the rank x
    the widest side of any linear layer. Memoised on the (frozen) model.

    >>> from anchorgpu.planner._examples import tiny_model
    >>> largest_param_numel(tiny_model()), largest_param_numel(tiny_model(), 1, 4)
    (64000, 1024)
    """
    if lora_rank:
        return -(-lora_rank * max((max(g.d_in, g.d_out) for g in model.linear_groups), default=0) // tp)
    linear = max((g.d_in * g.d_out for g in model.linear_groups), default=0)
    return -(-max(linear, model.vocab_size * model.hidden_size) // tp)


def offload_staging_bytes(largest_numel: int) -> int:
    """ZeRO-Offload's gradient staging buffers, each ``largest_param_numel`` values of the model dtype:
    ``stage_1_and_2.py`` ``__init__`` under ``cpu_offload`` allocates ``temp_grad_buffer_for_gpu_offload`` on the GPU
    and ``temp_grad_buffer_for_cpu_offload`` on the host (pinned with ``pin_memory``); the count of each.

    >>> offload_staging_bytes(1_000)
    2000
    """
    return largest_numel * COMM_BYTES


def step_gradient_bytes(partition_numel: float, grad_bytes: int, master_bytes: int) -> int:
    """What ``stage_1_and_2.py`` ``step`` allocates for the rank's gradient partition without offload: the flat copy of
    the averaged gradients (``self.flatten(self.averaged_gradients[i])``, the gradients' dtype) and its cast to the
    master's dtype (``flat_grad_partition.to(self.single_partition_of_fp32_groups[i].dtype)``: a new tensor unless
    the dtypes match, as under bf16-true or a bf16 master). Both exist at once, before ``del flat_grad_partition``.

    >>> step_gradient_bytes(1_000, 2, 4), step_gradient_bytes(1_000, 2, 2)
    (6000, 2000)
    """
    return round(partition_numel * grad_bytes + (partition_numel * master_bytes if master_bytes != grad_bytes else 0))


def step_held_bytes(rest_numel: float, expert_numel: float, grad_bytes: int, master_bytes: int,
                    expert_grads_bytes: int, overhang_numel: int = 0) -> int:
    """The gradient bytes a GPU holds at the step's peak without offload. ``stage_1_and_2.py`` ``step`` takes the
    optimizer's parameter groups one at a time (the routed experts' are groups of their own, after the rest:
    ``deepspeed/moe/utils.py`` ``split_params_into_different_moe_groups_for_optimizer``), and for each frees the
    gradients outside the rank's partition (``free_grad_in_param_list(params_not_in_partition[i])``), makes
    :func:`step_gradient_bytes`, steps, then drops that group's gradients and its copy (``.grad = None``). The
    partition gradients are views of one ``grads_in_partition`` buffer for all groups, which also holds the parts of
    the edge parameters outside the partition (``overhang_numel`` values,
    :mod:`~anchorgpu.planner.deepspeed_partition`): its storage outlives every group's step. So the peak is the
    larger of: the buffer (the rest's partition, ``rest_numel`` values, and the overhang) and the rest's step copies
    beside the experts' gradients as the backward pass left them (``expert_grads_bytes``); the buffer with the
    experts' partition in it and the experts' step copies. The activations and reduce buckets are gone by then.

    >>> step_held_bytes(1_000, 0, 2, 4, 0), step_held_bytes(1_000, 500, 2, 4, 8_000), step_held_bytes(1_000, 0, 2, 4, 0, 100)
    (8000, 16000, 8200)
    """
    buffer = (rest_numel + overhang_numel) * grad_bytes
    rest = buffer + step_gradient_bytes(rest_numel, grad_bytes, master_bytes) + expert_grads_bytes
    expert = buffer + expert_numel * grad_bytes + step_gradient_bytes(expert_numel, grad_bytes, master_bytes)
    return round(max(rest, expert))


def zero_buffer_terms(rest_numel: float, expert_numel: float, grad_bytes: int, master_bytes: int, largest_numel: int,
                      *, offload: bool, grads_bytes: int, expert_grads_bytes: int, activations_bytes: int,
                      hidden_size: int, pp: int = 1, plugin_defaults: bool = False, overhang_numel: int = 0,
                      partition_gradients: bool = False) -> dict[str, int]:
    """The breakdown's terms for a :func:`runs_zero_optimizer` layout: ``zero_reduce_buckets_bytes``
    (:func:`reduce_buckets_bytes`), under offload ``zero_offload_staging_bytes`` (the GPU's staging buffer,
    :func:`offload_staging_bytes`; the host's is the plan's ``offloaded_gradient_staging_bytes``), without offload
    ``zero_step_gradient_bytes`` (the step's largest group's :func:`step_gradient_bytes`) and
    ``zero_step_excess_bytes``: what :func:`step_held_bytes` holds beyond the backward pass's peak (the plan's
    gradients ``grads_bytes``, of which the experts' ``expert_grads_bytes``, its activations and the buckets), which
    the plan adds: its peak is the larger of the two. ``rest_numel``/``expert_numel``: the rank's partition.
    ``plugin_defaults``: accelerate's DeepSpeed plugin keys with no config file (an FP8 plan's launch), which leave
    ``reduce_bucket_size`` and ``overlap_comm`` at DeepSpeed's defaults (:func:`plugin_reduce_buckets_bytes`).
    Without offload, ``zero_boundary_overhang_bytes``: the edge parameters' parts outside the rank's partition in
    ``grads_in_partition`` (``overhang_numel`` values, :mod:`~anchorgpu.planner.deepspeed_partition`), held through the
    backward pass at stage 2 (``partition_gradients``: the plan's gradients are the partition) and through the step at
    stages 1-2.

    >>> t = zero_buffer_terms(10**9, 0, 2, 4, 5 * 10**8, offload=False, grads_bytes=2 * 10**9, expert_grads_bytes=0,
    ...                       activations_bytes=10**9, hidden_size=4096)
    >>> t["zero_reduce_buckets_bytes"], t["zero_step_gradient_bytes"], t["zero_step_excess_bytes"]
    (67108864, 6000000000, 4932891136)
    """
    buckets = (plugin_reduce_buckets_bytes() if plugin_defaults
               else reduce_buckets_bytes(zero_settings(), reduce_bucket_numel(hidden_size), pp))
    terms = {"zero_reduce_buckets_bytes": buckets,
             "zero_offload_staging_bytes": offload_staging_bytes(largest_numel) if offload else 0,
             "zero_step_gradient_bytes": 0, "zero_step_excess_bytes": 0, "zero_boundary_overhang_bytes": 0}
    if not offload:
        overhang = overhang_numel * grad_bytes
        terms["zero_boundary_overhang_bytes"] = overhang
        terms["zero_step_gradient_bytes"] = max(step_gradient_bytes(rest_numel, grad_bytes, master_bytes),
                                                step_gradient_bytes(expert_numel, grad_bytes, master_bytes))
        held = step_held_bytes(rest_numel, expert_numel, grad_bytes, master_bytes, expert_grads_bytes, overhang_numel)
        backward = grads_bytes + (overhang if partition_gradients else 0) + activations_bytes + buckets
        terms["zero_step_excess_bytes"] = max(0, held - backward)
    return terms


def zero_buffers_line(terms: dict[str, int], hidden_size: int, plugin_defaults: bool = False, zero: int = 1) -> str:
    """The plan's assumption line for :func:`runs_zero_optimizer` layouts, from :func:`zero_buffer_terms`' ``terms``."""
    from anchorgpu.units import fmt_bytes

    buckets_bytes, staging_bytes = terms["zero_reduce_buckets_bytes"], terms["zero_offload_staging_bytes"]
    excess_bytes, overhang_bytes = terms["zero_step_excess_bytes"], terms.get("zero_boundary_overhang_bytes", 0)

    numel = reduce_bucket_numel(hidden_size)
    if plugin_defaults:
        words = (f"DeepSpeed ZeRO-1/2 buffers (stage_1_and_2.py) as accelerate's DeepSpeed plugin launches FP8 (its "
                 f"keys set no reduce_bucket_size; mixed_precision fp8 is refused beside a ds_config.json): "
                 f"DeepSpeed's default reduce bucket of 5e8 bf16 values, one (overlap_comm off), "
                 f"{fmt_bytes(buckets_bytes)} through the backward pass, counted with the gradients; the allgather "
                 "after the step writes in place (allgather_bucket_size holds nothing)")
    else:
        words = (f"DeepSpeed ZeRO-1/2 buffers (stage_1_and_2.py, the recipe's ds_config.json): "
                 f"{buckets_bytes // (numel * COMM_BYTES)} reduce bucket(s) of hidden² = {numel:,} bf16 values "
                 f"(reduce_bucket_size, overlap_comm, contiguous_gradients), {fmt_bytes(buckets_bytes)} through the "
                 "backward pass, counted with the gradients; the allgather after the step writes in place "
                 "(allgather_bucket_size holds nothing)")
    if staging_bytes:
        words += (f"; ZeRO-Offload's gradient staging buffer of the largest parameter, {fmt_bytes(staging_bytes)} on the "
                  "GPU and as much pinned on the host")
    if overhang_bytes:
        words += (f"; grads_in_partition holds the parameters straddling the partition's edges whole, "
                  f"{fmt_bytes(overhang_bytes)} beyond the partition on the busiest rank ("
                  + ("through the backward pass and the step, counted with the gradients" if zero == 2 else
                     "through the step; the backward pass's gradients are whole at ZeRO-1") + ")")
    if excess_bytes:
        words += (f"; the step's flat gradient partition and its copy in the master's dtype outlast the backward "
                  f"pass's activations by {fmt_bytes(excess_bytes)}, counted with the optimizer")
    return words + "."
