"""Data parallelism in a training step: the parameters a GPU holds and reduces, the link its group's collectives
cross, and what FSDP's parameter gathers and the gradient sync leave exposed. Pure; stdlib only.

FSDP (ZeRO-3) reduce-scatters every micro-batch's gradients inside that micro-batch's backward on both stacks
(:func:`scatters_each_micro_batch`): Megatron-Core runs it as Megatron-FSDP, PyTorch's own FSDP as torchtitan,
OLMo-core and Composer (llm-foundry) run it; only PyTorch's pipelining schedule holds the scatter to once a step.
The parameter gathers and the scatter share one link: a micro-batch's forward gather runs beside its forward pass (a
third of its computation), its backward gather and its scatter beside its backward pass (the other two thirds), and
what a pass cannot hide is exposed; a window one collective leaves idle is not lent to the other pass.

Across servers a data-parallel (or FSDP) group leaves each server through every member GPU's own NIC
(:func:`~anchorgpu.planner.speed.links.data_parallel_link`), and each ring collective also pays NCCL's latency for
each of its steps (:func:`~anchorgpu.planner.speed.links.ring_latency_s`): FSDP gathers and scatters a layer at a
time, DDP and ZeRO-1/2 reduce a bucket at a time.

ZeRO-2 keeps only its 1/DP shard of the gradients, so it reduces every micro-batch's gradients in that micro-batch's
backward, on either stack (:func:`~anchorgpu.planner.speed.zero2.zero2_sync_terms`); with pipeline stages only on the
PyTorch stack, as Llama 3's FSDP (row L3-405B; Megatron-FSDP runs no stages,
:func:`~anchorgpu.planner.layout_checks.sharded_pipeline_refusal`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.memory import expert_data_parallel
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.links import (
    ACTIVATION_BYTES,
    Link,
    all_gather_s,
    allreduce_s,
    data_parallel_link,
    group_link,
    reduce_scatter_s,
    ring_latency_s,
    server_gpus,
)
from anchorgpu.planner.speed.offload import parameter_fetch_s
from anchorgpu.planner.speed.zero2 import BACKWARD_SHARE, BUCKET_MIN_PARAMS, zero2_sync_terms

if TYPE_CHECKING:
    from anchorgpu.planner.speed.train_layout import TrainSplit

__all__ = ["BUCKET_MIN_PARAMS", "DataParallelTerms", "collective_sm_share", "data_parallel_terms", "fsdp2_copies_s", "group_link_of",
           "held_params", "scatters_each_micro_batch", "zero1_sync_bytes_per_value"]

@dataclass(frozen=True, slots=True)
class DataParallelTerms:
    fsdp_s: float  # a micro-batch's parameter gathers its forward and backward passes did not hide, their per-layer
    # latency, host fetches, and on the PyTorch-native stack FSDP2's copies around them
    sync_s: float  # a step's gradient sync the last backward pass did not hide
    local_params: float  # the parameters this GPU's optimizer updates
    micro_sync_s: float = 0.0  # ZeRO-2 and FSDP: each micro-batch's own gradient reduce its backward did not hide


def held_params(model: ModelSpec, lay: TrainSplit) -> tuple[float, float, int]:
    """(the parameters one GPU holds outside expert parallelism, the routed experts' parameters it holds under it,
    the size of the group that holds the same experts): without EP every parameter is in the first, split over TP
    and PP and reduced over DP x CP; with EP the routed experts are split over EP within a stage instead, and the
    GPUs holding the same ones are tp x dp x cp / ep.

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.planner.speed.training import TrainLayout
    >>> dense, experts, group = held_params(load_model("gpt-oss-120b"), TrainLayout(gpus=64, dp=64, ep=8))
    >>> round(dense / 1e9, 1), round(experts / 1e9, 1), group
    (2.1, 14.3, 8)
    """
    split = lay.tp * lay.pp
    if model.moe is None or lay.ep <= 1:
        return model.params_total / split, 0.0, 1
    experts = model.params.experts
    return ((model.params_total - experts) / split, experts / (lay.pp * lay.ep),
            expert_data_parallel(tp=lay.tp, dp=lay.dp, cp=lay.cp, ep=lay.ep))


def group_link_of(gpu: GpuSpec, lay: TrainSplit, *, gpus_per_server: int | None,
                  network_bytes_per_s: float | None = None, stride: int | None = None) -> Link:
    """The link the data-parallel (DP x CP) group of a stage's GPUs crosses: a member every ``stride`` ranks (TP
    by default; an expert data-parallel group has one every EP ranks, EP groups being consecutive ranks), so that
    many of each server's (or NVL72 domain's) NICs carry the group's traffic across servers.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.training import TrainLayout
    >>> group_link_of(get_gpu("h100"), TrainLayout(gpus=64, tp=2, dp=32), gpus_per_server=8).description
    'network between servers, 400 Gb/s per GPU, through 4 NICs a server'
    """
    stage_gpus = lay.gpus // lay.pp
    in_server = min(stage_gpus, server_gpus(gpu, gpus_per_server))
    return data_parallel_link(gpu, stage_gpus, max(1, in_server // (stride or lay.tp)), gpus_per_server=gpus_per_server,
                              network_bytes_per_s=network_bytes_per_s)


def scatters_each_micro_batch(train_stack: str, lay: TrainSplit) -> bool:
    """Whether FSDP reduce-scatters every micro-batch's gradients in that micro-batch's backward rather than once a
    step: under FSDP (ZeRO 3) on either stack, except the PyTorch-native stack with pipeline stages.

    PyTorch's FSDP2 reduces a parameter group's gradients in its post-backward hook unless told not to
    (``FSDPParamGroup.reduce_grads`` defaults to True; ``set_requires_gradient_sync(False)`` is what turns it off),
    and neither OLMo-core's train module (``_train_microbatch_context`` sets only ``set_is_last_backward`` and, for
    HSDP, ``set_requires_all_reduce``) nor torchtitan's ``train_step`` (a ``loss.backward()`` a micro-batch) turns it
    off; Composer leaves FSDP1 to sync every backward too (its ``ddp_sync_context`` acts on DDP only); DeepSpeed's
    ZeRO-3 reduces in every backward and synchronizes its reduce stream at the end of each (microsoft/DeepSpeed
    ``deepspeed/runtime/zero/stage3.py`` at 0003660: ``independent_gradient_partition_epilogue``, "called after
    every backward"). Megatron-Core's FSDP is Megatron-FSDP with ``data_parallel_sharding_strategy=
    "optim_grads_params"``, whose post-backward hook reduces whenever the gradients are sharded
    (``grad_reduce_every_bprop`` for ``optim_grads`` and ``optim_grads_params``; only ``no_shard`` and ``optim``
    wait for ``is_last_microbatch``), in NVIDIA/Megatron-LM
    ``megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py`` at 00caa53 and the earlier
    ``custom_fsdp`` alike. With pipeline stages PyTorch's pipelining schedule turns the sync off
    (``PipelineStage`` sets ``set_requires_gradient_sync(False)`` and reduces once after the last backward), so a
    pipelined layout there keeps the once-a-step scatter.

    >>> from anchorgpu.planner.speed.training import TrainLayout
    >>> lay = TrainLayout(gpus=16, dp=16, zero=3)
    >>> scatters_each_micro_batch("pytorch", lay), scatters_each_micro_batch("megatron", lay)
    (True, True)
    >>> scatters_each_micro_batch("pytorch", TrainLayout(gpus=16, pp=2, dp=8, zero=3))
    False
    >>> scatters_each_micro_batch("megatron", TrainLayout(gpus=16, dp=16, zero=1))
    False
    """
    return lay.zero >= 3 and (train_stack != "pytorch" or lay.pp == 1)


def fsdp2_copies_s(gpu: GpuSpec, cal: Calibration, gathered_params: float, grad_bytes_per_value: int,
                   param_bytes: float = ACTIVATION_BYTES) -> float:
    """The HBM copies PyTorch's FSDP2 runs on the compute stream in a micro-batch (seconds), for ``gathered_params``
    parameters all-gathered forward and again backward at ``param_bytes`` each (16 bit; QLoRA's packed base less,
    :func:`~anchorgpu.planner.speed.dequant.gathered_bytes_per_param`), and, where ``grad_bytes_per_value`` is not 0,
    their gradients reduce-scattered at that width in the same backward.

    Read from pytorch/pytorch ``torch/distributed/fsdp/_fully_shard/`` (``_fsdp_collectives.py`` at 010ae4a,
    ``_fsdp_param_group.py`` at 002a76f): the gather lands in one flat buffer, and ``wait_for_unshard`` calls
    ``foreach_all_gather_copy_out`` on the current (compute) stream, whose ``split_with_sizes_copy`` reads the buffer
    and writes each unsharded parameter: 2 + 2 bytes a 16-bit parameter, forward and again for the backward's
    re-gather. Before the scatter, ``foreach_reduce``'s ``foreach_reduce_scatter_copy_in`` (``_chunk_cat``, which
    widens BF16 to the FP32 ``reduce_dtype`` as it copies) reads each 16-bit gradient and writes it at the reduce
    width: on the compute stream at that commit, and in earlier releases on the reduce-scatter stream with the compute
    stream made to wait for it at once (``current_stream.wait_stream(reduce_scatter_stream)``), so serial either way.
    The copy-in before the gather, the scatter's output and its accumulation into the sharded gradient touch a
    1/N shard and run on the side streams: not counted. Memory-bound, at the share of the bandwidth the optimizer's
    update is timed at (``decode_mbu``); nothing here hides behind the products. PyTorch's FSDP1 (Composer) gathers
    into a flat parameter whose views are the parameters and casts the gradient on its post-backward stream, so it
    has no such copies; the planner's PyTorch-native stack is timed as FSDP2 (torchtitan, OLMo-core).

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> cal, gpu = calibration(), toy_gpu()
    >>> round(fsdp2_copies_s(gpu, cal, 1e9, 4) / fsdp2_copies_s(gpu, cal, 1e9, 0), 3)  # (8 + 2 + 4) / 8 bytes
    1.75
    """
    per_param = 2 * (param_bytes + param_bytes)  # two copy-outs: read the flat buffer, write the parameter
    if grad_bytes_per_value:
        per_param += ACTIVATION_BYTES + grad_bytes_per_value  # the scatter's copy-in: read 16 bits, write reduce width
    return gathered_params * per_param / (gpu.memory_bandwidth_bytes_per_s * cal.stack(gpu).decode_mbu)


def collective_sm_share(gpu: GpuSpec, cal: Calibration) -> float:
    """The share of ``gpu``'s SMs one NCCL collective holds while it runs: ``stated.collective_ctas`` (one CTA a
    channel; 16 on a Hopper NVSwitch server) over the GPU's SMs. A product beside the collective runs on the rest, so
    it is that share slower for as long as the two overlap (:func:`data_parallel_terms`). 0.0 where the catalog has
    no SM count, on AMD GPUs (RCCL's channel counts are not read here), and with no stated CTAs.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> round(collective_sm_share(get_gpu("h100-sxm"), calibration()), 3)  # 16 CTAs of 132 SMs
    0.121
    >>> collective_sm_share(get_gpu("mi300x"), calibration())
    0.0
    """
    sms = gpu.sm_count
    if not cal.collective_ctas or gpu.vendor != "NVIDIA" or not isinstance(sms, int) or sms <= 0:
        return 0.0
    return min(1.0, cal.collective_ctas / sms)


def zero1_sync_bytes_per_value(zero: int, grad_bytes_per_value: int) -> float:
    """The bytes a parameter an all-reduce's volume moves in DDP's (``zero`` 0) or ZeRO-1's once-a-step gradient sync:
    DDP all-reduces the gradients at their reduce width; ZeRO-1 reduce-scatters them at that width and then
    all-gathers the updated parameters, which are 16-bit whatever the gradients' width, so its two halves are one
    scatter at ``grad_bytes_per_value`` and one gather at 2 bytes.

    Megatron-Core's distributed optimizer reduce-scatters the gradient buffer, FP32 under ``grad_reduce_in_fp32``
    (NVIDIA/Megatron-LM ``megatron/core/distributed/distributed_data_parallel.py``: ``grad_dtype = torch.float if
    self.ddp_config.grad_reduce_in_fp32 else param.dtype``; Megatron-LM's ``--bf16`` turns it on unless
    ``--grad-reduce-in-bf16``: ``megatron/training/arguments.py``, the bf16 branch of ``validate_args``), and
    all-gathers the parameter buffer, kept in the parameters' own 16-bit dtype (``param_dtype``: the same grouping;
    ``start_param_sync`` gathers each bucket's ``param_data``).

    >>> zero1_sync_bytes_per_value(1, 4), zero1_sync_bytes_per_value(0, 4), zero1_sync_bytes_per_value(1, 2)
    (3.0, 4, 2.0)
    """
    if zero == 0:
        return grad_bytes_per_value
    return (grad_bytes_per_value + ACTIVATION_BYTES) / 2


def data_parallel_terms(model: ModelSpec, gpu: GpuSpec, cal: Calibration, lay: TrainSplit, *, stage_layers: float,
                        compute_s: float, trains_base: bool, gpus_per_server: int | None,
                        network_bytes_per_s: float | None, grad_bytes_per_value: int,
                        train_stack: str = "megatron", fsdp1: bool = False,
                        network_window_s: float | None = None,
                        param_bytes: tuple[float, float] = (ACTIVATION_BYTES, ACTIVATION_BYTES)) -> DataParallelTerms:
    """FSDP's gathers (every micro-batch, each beside its own pass of ``compute_s``) and the gradient sync.

    Where the data-parallel group crosses servers its traffic rides the NICs, which are free beside more than the
    products: ``network_window_s`` (the products, the host's launches and the collectives that stay inside a server
    over NVLink) then takes the place of ``compute_s`` as the time it hides behind. Inside one server the group shares
    NVLink with the tensor- and expert-parallel collectives, so only ``compute_s`` hides it.

    DDP and ZeRO-1 (Megatron-Core's distributed optimizer, DeepSpeed's stage 1) sync once a step, behind the last
    backward pass (:data:`~anchorgpu.planner.speed.zero2.BACKWARD_SHARE` of ``compute_s``): an all-reduce for DDP,
    ZeRO-1's scatter and gather of the updated parameters an all-reduce's volume; nothing else uses the group's link
    in that window. ZeRO-2 reduces every micro-batch's gradients in its backward instead (``micro_sync_s``,
    :func:`~anchorgpu.planner.speed.zero2.zero2_sync_terms`).

    FSDP (ZeRO-3) gathers a micro-batch's parameters twice, each time a layer ahead: the forward gather runs beside
    the forward pass (the third of ``compute_s`` the backward share leaves) and the backward gather beside the backward
    pass, and what either cannot hide is exposed (``fsdp_s``). The gradient reduce-scatter (at
    ``grad_bytes_per_value``: the reduce precision) shares the backward's window with that backward's gather, on the
    same link, so it adds what the two together leave exposed beyond the gather alone: in every micro-batch where
    :func:`scatters_each_micro_batch` (``micro_sync_s``; at the step's end only the scatter of the layer whose backward
    runs last is left to wait for, ``sync_s``), else once a step in the last micro-batch's backward (``sync_s``). The
    gathers move 16-bit values whatever the products' precision: torchao's FP8 all-gather
    (``enable_fsdp_float8_all_gather``) is on in OLMo-core's Float8Config but off in torchtitan's shipped configs, so
    it is not assumed. ``param_bytes`` (bytes a gathered parameter outside the routed experts, a routed expert's):
    16 bits, or QLoRA's base as it is stored, packed (:func:`~anchorgpu.planner.speed.dequant.gathered_bytes_per_param`);
    they also set FSDP2's copies and a ``--offload params`` fetch. A frozen base (LoRA, QLoRA: ``trains_base``
    False) has no gradient sync here: only the adapters have gradients, not timed. HSDP's cross-replica all-reduce is not modelled: the plan shards over the whole data-parallel
    group (across servers each GPU's NIC carries about 1/8 of a server's share either way).

    Under expert parallelism a GPU holds 1/ep of its stage's routed experts, and their gradients are reduced over the
    GPUs holding the same experts (the expert data-parallel group, tp x dp x cp / ep).

    On the PyTorch-native stack FSDP2 also copies every gathered parameter out of the gather's flat buffer, forward
    and backward, and every gradient into the scatter's, on the compute stream (:func:`fsdp2_copies_s`); ``fsdp1``
    (a measured run on PyTorch's first FSDP, whose parameters are views of the gathered flat parameter) leaves them
    out."""
    params_stage, expert_stage, expert_group = held_params(model, lay)
    shard_group = lay.dp * lay.cp
    dp_link = group_link_of(gpu, lay, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    expert_link = dp_link
    if expert_stage and expert_group > 1:
        expert_link = group_link_of(gpu, lay, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s,
                                    stride=max(lay.tp, lay.ep))
    shard_ring = expert_ring = 0.0
    if dp_link.kind == "network":
        stage_gpus, server = lay.gpus // lay.pp, server_gpus(gpu, gpus_per_server)
        servers = -(-stage_gpus // server)
        inside = group_link(gpu, min(stage_gpus, server), gpus_per_server=gpus_per_server).kind
        shard_ring = ring_latency_s(shard_group, servers, inside)
        expert_ring = ring_latency_s(expert_group, servers, inside)
        if network_window_s is not None:
            compute_s = network_window_s
    moe_layers = stage_layers * model.moe.num_moe_layers / model.num_layers if model.moe is not None else 0.0
    eff = cal.link_efficiency
    each_micro = trains_base and scatters_each_micro_batch(train_stack, lay)
    groups = ((params_stage, shard_group, dp_link, shard_ring, stage_layers),
              (expert_stage, expert_group, expert_link, expert_ring, moe_layers))

    def scatter_s(held: float, group: int, link: Link, ring: float, per_layer: float) -> float:
        """One reduce-scatter of ``held`` parameters' gradients over ``group``, a layer at a time."""
        return reduce_scatter_s(held * grad_bytes_per_value, group, link, efficiency=eff) + per_layer * ring

    backward_s = compute_s * BACKWARD_SHARE
    forward_s = compute_s - backward_s
    # the collectives' SMs, where the group stays on the scale-up link (the channel count read is an NVLink server's)
    sm_share = collective_sm_share(gpu, cal) if dp_link.kind == "scale-up" else 0.0
    dense_bytes, expert_bytes = param_bytes
    fsdp_s = gather = 0.0
    if lay.zero >= 3 and (shard_group > 1 or (each_micro and expert_stage and expert_group > 1)):
        gather = (all_gather_s(params_stage * dense_bytes, shard_group, dp_link, efficiency=eff)
                  + stage_layers * shard_ring)
        if expert_stage and expert_group > 1:
            gather += (all_gather_s(expert_stage * expert_bytes, expert_group, expert_link, efficiency=eff)
                       + moe_layers * expert_ring)
        # one gather a pass: the forward's beside the forward, the backward's beside the backward; what hides still
        # holds its SMs, and the products beside it run that much slower (collective_sm_share)
        fsdp_s = (max(0.0, gather - forward_s) + max(0.0, gather - backward_s)
                  + 2.0 * stage_layers * dp_link.latency_s
                  + sm_share * (min(gather, forward_s) + min(gather, backward_s)))
        if train_stack == "pytorch" and not fsdp1:  # FSDP2's copies in and out, serial on the compute stream
            grad = grad_bytes_per_value if each_micro else 0
            fsdp_s += (fsdp2_copies_s(gpu, cal, params_stage * (shard_group > 1), grad, dense_bytes)
                       + fsdp2_copies_s(gpu, cal, expert_stage * (expert_group > 1), grad, expert_bytes))
    if lay.offload == "params":  # the parameter shard fetched from host memory forward and backward (ZeRO-Infinity)
        fsdp_s += (parameter_fetch_s(gpu, cal, params_stage / max(1, shard_group), dense_bytes)
                   + parameter_fetch_s(gpu, cal, expert_stage / max(1, expert_group), expert_bytes))

    sync_s = micro_sync_s = 0.0
    if lay.zero == 2 and trains_base and (shard_group > 1 or expert_group > 1):  # every backward reduces its own
        micro_sync_s, sync_s = zero2_sync_terms(groups, train_stack=train_stack, compute_s=compute_s,
                                                grad_bytes_per_value=grad_bytes_per_value, efficiency=eff,
                                                pipelined=lay.pp > 1, sm_share=sm_share)
    elif lay.zero >= 3 and trains_base and (shard_group > 1 or expert_group > 1):
        # the scatter shares the backward's link with that backward's gather: it adds what the two leave exposed
        # beyond the gather alone (fsdp_s counted that)
        scatter = sum(scatter_s(*g) for g in groups if g[0] and g[1] > 1)
        added = max(0.0, gather + scatter - backward_s) - max(0.0, gather - backward_s)
        # the part of the scatter that hides beside the backward slows its products (collective_sm_share)
        added += sm_share * (min(gather + scatter, backward_s) - min(gather, backward_s))
        if each_micro:  # every backward; only the last layer's scatter of the last one waits at the step's end
            micro_sync_s = added + stage_layers * dp_link.latency_s
            sync_s = sum(scatter_s(*g) / max(1.0, g[4]) for g in groups if g[0] and g[1] > 1)
        else:  # once a step, in the last micro-batch's backward
            sync_s = added
    elif trains_base and (shard_group > 1 or expert_group > 1):  # DDP's all-reduce, ZeRO-1's scatter and gather
        full = 0.0
        width = zero1_sync_bytes_per_value(lay.zero, grad_bytes_per_value)
        for held, group, link, ring, _per_layer in groups:
            if held and group > 1:
                full += allreduce_s(held * width, group, link, efficiency=eff)
                full += 2.0 * ring * math.ceil(held / max(BUCKET_MIN_PARAMS, 1_000_000 * group))
        sync_s = max(0.0, full - backward_s) + sm_share * min(full, backward_s)

    local = 0.0
    if trains_base:  # the optimizer updates the (sharded) parameters a GPU holds
        local = (params_stage / (shard_group if lay.zero >= 1 else 1)
                 + expert_stage / (expert_group if lay.zero >= 1 else 1))
    return DataParallelTerms(fsdp_s=fsdp_s, sync_s=sync_s, local_params=local, micro_sync_s=micro_sync_s)
