"""ZeRO-2 in a training step: the gradient reduce every micro-batch's backward carries. Pure; stdlib only.

A GPU under ZeRO-2 keeps only its 1/DP shard of the gradients, so it cannot add a micro-batch's gradients to the
last one's before they are reduced: every backward pass reduces its own gradients, bucket by bucket as the buckets
fill, and the step ends with the gather of the updated parameters, as ZeRO-1's. What the planner's ``--zero 2``
runs, by training stack:

* ``pytorch`` without pipeline stages (the ``deepspeed`` recipe, and ``accelerate`` without TP or CP): DeepSpeed's
  ZeRO stage 2. Read from microsoft/DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py`` at 022f223: the gradient
  hook ``reduce_ready_partitions_and_remove_grads`` reduces on every backward when gradients are partitioned
  (``partition_gradients or is_gradient_accumulation_boundary``), and the engine's ``allreduce_gradients`` calls
  ``overlapping_partition_gradients_reduce_epilogue`` after every backward for stage 2 ("communicates during non
  gradient accumulation boundaries as well"); that epilogue reduces the bucket still open and, with ``overlap_comm``
  (the recipe sets it), synchronizes the device, so each backward waits for its last bucket. A bucket holds
  ``reduce_bucket_size`` (5e8) elements, and ``average_tensor`` with the default ``use_multi_rank_bucket_allreduce``
  runs one all-reduce over the bucket and keeps this rank's slice (``allreduce_and_scatter``): an all-reduce's volume
  a micro-batch, not a reduce-scatter's.
* ``pytorch`` with pipeline stages: Llama 3's FSDP (arXiv:2407.21783 section 3.3.2: FSDP shards the optimizer states
  and gradients and, under pipeline stages, does not reshard the parameters after the forward pass, avoiding the
  backward's all-gather), the published run L3-405B: a reduce-scatter a layer (a ``fully_shard`` unit) in every
  backward, the last layer's left beside the next micro-batch. No public launcher runs this: DeepSpeed's pipeline
  engine refuses stage 2 (``deepspeed/runtime/pipe/engine.py`` at 0050fda: ``zero_optimization_stage() <
  ZeroStageEnum.gradients``), and torchtitan, which keeps the parameters gathered under pipeline stages
  (``apply_fsdp``'s "default" policy, ``reshard_after_forward = not pp_enabled``: pytorch/torchtitan
  ``torchtitan/models/llama3/infra/parallelize.py`` at 018740b), runs them in ``torch.distributed.pipelining``, whose
  stage turns FSDP2's gradient sync off for every backward and reduces once after the last
  (``backward_maybe_with_nosync``: ``set_requires_gradient_sync(False)``, pytorch/pytorch
  ``torch/distributed/pipelining/stage.py`` at 0138610): whole gradients held across the step, ZeRO-1's memory
  (``--zero 1``). So the layout chooser and ``recommend``'s sweep never try it
  (:func:`~anchorgpu.planner.speed.layouts.sharded_with_stages`); ``plan --zero 2 --pp N --train-stack pytorch``
  plans it and says so (:data:`LLAMA3_FSDP_LINE`).
* ``megatron``: Megatron-Core's ZeRO-1 (the distributed optimizer) accumulates whole gradients and reduce-scatters
  once a step; its ZeRO-2 is Megatron-FSDP's ``data_parallel_sharding_strategy="optim_grads"``
  (``DistributedDataParallelConfig``, NVIDIA/Megatron-LM at 0011998), whose gradient buffer is distributed
  (``is_grad_buffer_distributed`` in ``megatron_fsdp/param_and_grad_buffer.py``) and so is reduce-scattered every
  micro-batch, with ``overlap_grad_reduce`` forced on. The buckets are timed at Megatron-Core's DDP size
  (:data:`BUCKET_MIN_PARAMS`), and a bucket's scatter left at the end of a
  backward runs beside the next micro-batch; the step waits for the last one. Megatron-FSDP runs no pipeline
  stages, so ``plan`` refuses ``--zero 2`` with ``--pp`` on this stack
  (:func:`~anchorgpu.planner.layout_checks.sharded_pipeline_refusal`; what runs with stages is the distributed
  optimizer, ZeRO-1, whose gradient buffer is full-size on every rank).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from anchorgpu.planner.speed.links import Link, all_gather_s, allreduce_s, reduce_scatter_s

__all__ = ["BUCKET_MIN_PARAMS", "DEEPSPEED_REDUCE_BUCKET_PARAMS", "LLAMA3_FSDP_LINE", "zero2_bucket_params", "zero2_sync_terms"]

BUCKET_MIN_PARAMS = 40_000_000
"""Megatron-Core's default gradient bucket: ``max(40M, 1M x DP)`` parameters (DistributedDataParallelConfig's
``bucket_size``: larger DP sizes take larger buckets so that the collectives are not latency-bound)."""

DEEPSPEED_REDUCE_BUCKET_PARAMS = 500_000_000
"""DeepSpeed ZeRO's default gradient bucket in parameters (``DeepSpeedZeroConfig.reduce_bucket_size``: 5e8 elements;
the ``deepspeed`` recipe leaves it at that)."""

BACKWARD_SHARE = 2.0 / 3.0
"""The backward pass's share of a micro-batch's computation (twice the forward's products), the window a gradient
reduce runs beside; the once-a-step sync is hidden behind the same share of the last backward."""


LLAMA3_FSDP_LINE = (
    "ZeRO-2 with pipeline stages on the PyTorch stack: Llama 3's FSDP (arXiv:2407.21783 section 3.3.2), the "
    "parameters kept gathered from forward to backward, the gradients and optimizer state sharded, each "
    "micro-batch's gradients reduce-scattered in its backward. No public launcher runs it: torchtitan under "
    "pipeline stages reduces the gradients once a step and holds them whole (plan --zero 1 for its memory); "
    "DeepSpeed's pipeline engine refuses ZeRO-2.")
"""The assumption line of ``--zero 2`` with ``--pp`` on the PyTorch stack (``plan`` states it)."""


def zero2_bucket_params(train_stack: str, group: int) -> int:
    """The parameters one gradient bucket holds: DeepSpeed's default on the PyTorch-native stack, Megatron-Core's
    ``max(40M, 1M x DP)`` on Megatron's.

    >>> zero2_bucket_params("pytorch", 8), zero2_bucket_params("megatron", 8), zero2_bucket_params("megatron", 64)
    (500000000, 40000000, 64000000)
    """
    return DEEPSPEED_REDUCE_BUCKET_PARAMS if train_stack == "pytorch" else max(BUCKET_MIN_PARAMS, 1_000_000 * group)


def zero2_sync_terms(groups: Iterable[tuple[float, int, Link, float, float]], *, train_stack: str, compute_s: float,
                     grad_bytes_per_value: int, efficiency: float, pipelined: bool = False,
                     sm_share: float = 0.0) -> tuple[float, float]:
    """(each micro-batch's gradient reduce its backward did not hide, what the step adds at its end), in seconds,
    for ZeRO-2 over ``groups``: (parameters held, the group reducing them, its link, its ring latency, layers).

    Each backward (``BACKWARD_SHARE`` of ``compute_s``) reduces its gradients at ``grad_bytes_per_value``: DeepSpeed
    all-reduces each bucket and waits for the last one before the backward returns, so that bucket is exposed every
    micro-batch; Megatron-FSDP reduce-scatters and leaves its last bucket to run beside the next micro-batch, the
    step waiting only for the last micro-batch's. Every bucket pays the ring's latency (twice for an all-reduce),
    beside the backward as ZeRO-1's sync pays it. The step's end adds the gather of the updated parameters, counted
    as ZeRO-1's sync counts it (at the gradients' width, with a ring latency a bucket, behind the last backward,
    which that micro-batch's own reduce shares).

    With one micro-batch on Megatron's stack this is ZeRO-1's sync plus the last bucket: never faster. On the PyTorch
    stack with pipeline stages (``pipelined``: Llama 3's FSDP) each layer is a bucket, reduce-scattered as
    Megatron-FSDP's are (the last one beside the next micro-batch).

    ``sm_share``: the share of the SMs a collective holds while it runs (``data_parallel.collective_sm_share``), which
    the products beside it lose, as ZeRO-1's and ZeRO-3's syncs charge it: the reduce hidden beside each backward, and
    the gather hidden beside the last one.

    >>> from anchorgpu.planner.speed.links import Link
    >>> nic = Link(kind="network", bytes_per_s=50e9, latency_s=0.0, description="")
    >>> g = [(8e9, 8, nic, 0.0, 32.0)]
    >>> ds = zero2_sync_terms(g, train_stack="pytorch", compute_s=1.0, grad_bytes_per_value=2, efficiency=1.0)
    >>> mc = zero2_sync_terms(g, train_stack="megatron", compute_s=1.0, grad_bytes_per_value=2, efficiency=1.0)
    >>> l3 = zero2_sync_terms(g, train_stack="pytorch", compute_s=1.0, grad_bytes_per_value=2, efficiency=1.0,
    ...                       pipelined=True)
    >>> [round(x, 3) for x in ds], [round(x, 3) for x in mc], [round(x, 3) for x in l3]
    ([0.035, 0.138], [0.0, 0.001], [0.0, 0.009])
    """
    each_waits = train_stack == "pytorch" and not pipelined  # DeepSpeed's epilogue synchronizes after every backward
    per_layer = train_stack == "pytorch" and pipelined  # Llama 3's FSDP: a reduce-scatter a layer
    reduce = allreduce_s if each_waits else reduce_scatter_s
    reduce_s = gather_s = last_s = reduce_latency_s = gather_latency_s = 0.0
    for held, group, link, ring, layers in groups:
        if not held or group <= 1:
            continue
        bucket = held / max(1.0, layers) if per_layer else zero2_bucket_params(train_stack, group)
        buckets = math.ceil(held / bucket)
        one = reduce(held * grad_bytes_per_value, group, link, efficiency=efficiency)
        reduce_s += one
        last_s += one * min(1.0, bucket / held)
        gather_s += all_gather_s(held * grad_bytes_per_value, group, link, efficiency=efficiency)
        reduce_latency_s += (2.0 if each_waits else 1.0) * ring * buckets
        gather_latency_s += ring * buckets
    backward_s = compute_s * BACKWARD_SHARE
    beside = (reduce_s - last_s if each_waits else reduce_s) + reduce_latency_s  # beside the backward
    alone = max(0.0, beside - backward_s)
    micro_s = alone + (last_s if each_waits else 0.0) + sm_share * min(beside, backward_s)
    ending = beside + gather_s + gather_latency_s
    step_s = (max(0.0, ending - backward_s) - alone + (0.0 if each_waits else last_s)
              + sm_share * (min(ending, backward_s) - min(beside, backward_s)))
    return micro_s, step_s
