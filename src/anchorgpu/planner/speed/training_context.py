"""What a training plan's ``performance`` section takes from its (frozen) GPU, calibration and model and its layout
alone, whatever its batch: the band, the stack's constants, the links' sentences and warnings, the caveats and the
GPU's evidence, formed once per layout (:func:`training_context`) for every plan of it. Pure."""

from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.eager_stack import speed_line
from anchorgpu.planner.pipeline_layout import PipelineLayout
from anchorgpu.planner.speed.caveats import training_caveats
from anchorgpu.planner.speed.constants import Band, Calibration, StackConstants, band_kind_of
from anchorgpu.planner.speed.data_parallel import group_link_of
from anchorgpu.planner.speed.dequant import gathered_bytes_per_param
from anchorgpu.planner.speed.evidence import evidence_kind
from anchorgpu.planner.speed.figures import Evidence, evidence_items, evidence_of, plan_band
from anchorgpu.planner.speed.links import group_link
from anchorgpu.planner.speed.pipeline import counts_embedding_and_loss
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training_lines import (
    megatron_fsdp_line,
    pytorch_fsdp_line,
    pytorch_stack_line,
    qlora_gather_line,
    training_expert_parallel_line,
)

__all__ = ["TrainingContext", "training_context"]


_SYNC, _SYNC_GATHERS, _GATHERS = said("gradient sync"), said("gradient sync, parameter gathers"), said("parameter gathers")
"""What a data-parallel group's traffic carries (the data-parallel line's clause)."""


class TrainingContext(NamedTuple):
    """A training layout's share of its plans' performance sections (:func:`training_context`), each sentence in the
    order :func:`~anchorgpu.planner.speed.estimate.plan_performance` states it (None or empty where it has none)."""

    band: Band
    stack: StackConstants  # the calibrated constants of the GPU's stack
    stack_line: str | None  # the PyTorch-native stack's speed, or the Megatron-Core-class one of full training
    tp_line: str | None  # tensor-parallel traffic, with its warning (code, message) where the link is slow
    tp_warning: tuple[str, str] | None
    dp_line: str | None  # data-parallel traffic across servers
    fsdp_line: str | None  # when FSDP reduces the gradients, and where its exposed traffic is counted
    ep_line: str | None  # expert parallelism
    layers_line: str | None  # the embedding and the loss counted as layers of the pipeline split
    caveats: tuple[str, ...]
    evidence: Evidence | None  # evidence_of the GPU's runs; None with the user's efficiencies


@partial(memo_on_frozen, frozen=3)
def training_context(gpu: GpuSpec, cal: Calibration, model: ModelSpec, gpus: int, tp: int, pp: int, cp: int, dp: int,
                     ep: int, zero: int, virtual_stages: int, tp_overlap: bool, ep_overlap: bool, task: str,
                     train_stack: str, server_gpus: int, pipeline_layout: PipelineLayout | None = None,
                     network_bytes_per_s: float | None = None) -> TrainingContext:
    """The :class:`TrainingContext` of a training (``task``) layout of ``model`` on ``gpu`` under ``cal``, with
    ``server_gpus`` GPUs a server and ``network_bytes_per_s`` a GPU between servers (``None``: the calibration's),
    memoised on the frozen three by identity and the plain values after them; an explicit ``pipeline_layout`` is said
    in place of the even split's line."""
    lay = TrainLayout(gpus=gpus, tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, zero=zero, virtual_stages=virtual_stages,
                      tp_overlap=tp_overlap, ep_overlap=ep_overlap)
    run_kind = band_kind_of(moe=model.moe is not None, phase="train", pp=pp, cp=cp)
    k = cal.stack(gpu)
    stack_line = None
    if train_stack == "pytorch":
        stack_line = pytorch_stack_line(k.pytorch_elementwise_bytes_per_hidden, k.elementwise_bytes_per_hidden,
                                        cal.fa2_hopper_attention_efficiency)
    elif task == "train":
        stack_line = speed_line()
    tp_line = tp_warning = None
    if tp > 1:
        link = group_link(gpu, tp, gpus_per_server=server_gpus, network_bytes_per_s=network_bytes_per_s)
        tp_line = (said("tensor-parallel traffic over {link}, overlapped with the products", link=link.description)
                   if tp_overlap else said("tensor-parallel traffic over {link}, not overlapped", link=link.description))
        if link.kind == "pcie":
            tp_warning = ("tp_over_pcie", said("TP={tp} over PCIe on {gpu}: collectives are slow", tp=tp, gpu=gpu.name))
        elif link.kind == "network":
            tp_warning = ("tp_across_nodes", said("TP={tp} spans servers: collectives cross the network", tp=tp))
    dp_line = None
    if dp * cp > 1 and (task == "train" or zero >= 3):  # a frozen base (LoRA, QLoRA) syncs no gradients
        link = group_link_of(gpu, lay, gpus_per_server=server_gpus, network_bytes_per_s=network_bytes_per_s)
        if link.kind == "network":  # the data-parallel group crosses servers
            what = (_SYNC_GATHERS if zero >= 3 else _SYNC) if task == "train" else _GATHERS
            dp_line = said("data-parallel traffic ({what}) over the {link} (NCCL's rings leave a server through each "
                           "member's own NIC), each ring collective with NCCL's latency for each of its steps",
                           what=what, link=link.description)
    fsdp_line = None
    if task == "train" and zero >= 3 and dp * cp > 1:
        fsdp_line = pytorch_fsdp_line(pp > 1) if train_stack == "pytorch" else megatron_fsdp_line()
    elif task == "qlora" and zero >= 3 and dp * cp > 1:
        fsdp_line = qlora_gather_line(gathered_bytes_per_param(model, "qlora")[0])
    ep_line = None
    if model.moe is not None and ep > 1:
        ep_line = training_expert_parallel_line(ep, tp, dp, cp, model.moe.experts_per_token, server_gpus,
                                                cal.overlap_exposed_fraction if ep_overlap else None)
    layers_line = None
    if pipeline_layout is not None:
        ranks = pipeline_layout.rank_layers
        layers_line = (f"pipeline layout {pipeline_layout.text} (Megatron-Core's --pipeline-model-parallel-layout): "
                       f"{len(pipeline_layout.chunk_layers)} chunks dealt over {pp} ranks, {min(ranks)} to "
                       f"{max(ranks)} layers a rank; the busiest rank's {max(ranks)} set the pace")
    elif pp > 1 and counts_embedding_and_loss(model.num_layers, pp, virtual_stages):
        chunks = pp * virtual_stages
        layers_line = (
            f"{model.num_layers} layers in {chunks} chunks with the embedding and the loss counted as a layer each, "
            f"{model.num_layers + 2} / {chunks} = {(model.num_layers + 2) // chunks} a chunk (Megatron-Core's "
            "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split); the busiest rank's "
            f"{math.ceil(model.num_layers / pp)} layers set the pace, and its memory is planned for them")
    elif pp > 1 and model.num_layers % pp:
        layers_line = (
            f"{model.num_layers} layers over {pp} stages do not split evenly: the busiest stage's "
            f"{math.ceil(model.num_layers / pp)} layers set the pace, and its memory is planned for them (Megatron-Core "
            "runs an uneven split with --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers)")
    evidence = None if cal.origin == "user" else evidence_of(evidence_items(gpu, cal, evidence_kind("train", run_kind)))
    return TrainingContext(
        band=plan_band(gpu, cal, "train", run_kind, None), stack=k, stack_line=stack_line, tp_line=tp_line,
        tp_warning=tp_warning, dp_line=dp_line, fsdp_line=fsdp_line, ep_line=ep_line, layers_line=layers_line,
        caveats=tuple(training_caveats(cal.caveats, moe=model.moe is not None, cp=cp > 1)), evidence=evidence)
