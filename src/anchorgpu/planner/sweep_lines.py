"""The sentences a sweep states about itself: what it swept (layouts, formats, the concurrency ladder and each
layout's own saturation and floor rungs), what a training sweep chooses per layout, and how a mixture of experts'
experts were split. Split from :mod:`~anchorgpu.planner.sweep`. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import Said, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Workload, recompute_ladder

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_floor import UserLimits
    from anchorgpu.planner.sweep_grid import Layouts

__all__ = ["FP4_PROBE_PREFIX", "FP8_PROBE_PREFIX", "chosen_per_layout_line", "expert_parallel_line", "fp4_stacks_line",
           "fp8_stacks_line", "swept_line", "training_stacks_line"]


def swept_line(shapes: int, lay: Layouts, weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...],
               contexts: tuple[int, ...], *, training: bool, doubled: bool, ladder_swept: bool,
               floor: UserLimits | None) -> str:
    """``Swept ...``: the hardware shapes, layouts, formats and concurrencies evaluated; over a concurrency ladder
    (``ladder_swept``), how far it doubled (``doubled``: past its last power of two) and each layout's own rungs: its
    saturation, and under per-user limits (``floor``: a speed floor, a TTFT limit) the most users that still meet
    them."""
    doubling: Said | str = ""
    if doubled:
        from anchorgpu.planner.sweep_ladder import BATCH_LADDER

        doubling = said(" (doubling past {top} while a layout swept could run that many users at once: its engine's "
                        "sequence cap a replica, vLLM's max_num_seqs, SGLang's max_running_requests or TensorRT-LLM's "
                        "max_batch_size, x its data-parallel replicas, within what its GPUs' memory holds)",
                        top=BATCH_LADDER[-1])
    return said(
        "Swept {shapes} hardware shape(s) x whole servers x TP/PP/DP{training} layouts x weights {weights}{serving}"
        "{doubling}{saturation}{floor}.", shapes=shapes,
        training=("/CP" if (lay.cp > 1).any() else "") + "/ZeRO" if training else "", weights=",".join(weights),
        serving="" if training else said(" x KV cache {kvs} x concurrency {concs}", kvs=",".join(kvs),
                                         concs=",".join(map(str, concs))),
        doubling=doubling,
        saturation=said(", and each layout at its own saturation at each precision (the most sequences of {tokens:,} "
                        "tokens each, the ladder's top's length, that plan --concurrency N lets it hold, at most its "
                        "engine's sequence cap x its replicas)", tokens=contexts[-1]) if ladder_swept else "",
        floor=said(", and each layout at its own floor at each precision (the most users, the same number on each "
                   "replica, within that saturation, that each still {limits})", limits=floor.words())
        if ladder_swept and floor is not None else "")


def chosen_per_layout_line(w: Workload, moe: bool) -> str:
    """What a training sweep chooses per layout, as ``plan``'s chooser does, and what the workload fixed."""
    mbs = said("micro-batch {mb} as given", mb=w.micro_batch) if w.micro_batch else said("micro-batch 1, 2 or 4")
    rcs = (said("recompute {rc} as given", rc=w.recompute) if w.recompute else
           said("recompute {levels}", levels=", ".join(recompute_ladder(moe))))
    return said("Each layout runs the fastest configuration that fits, as plan chooses it for that layout: {mbs}, "
                "{rcs}, pipeline stages interleaved where the training stack runs it.", mbs=mbs, rcs=rcs)


def expert_parallel_line(model: ModelSpec, lay: Layouts, w: Workload, *, training: bool, scaled: bool) -> str:
    """How a mixture of experts' experts were split in the sweep: the EP sizes a training sweep tried; for serving,
    attention data parallelism on one server (and that engine on each of several servers; ``scaled``: over a
    concurrency ladder, at the server count times each concurrency) where swept, else TP alone."""
    assert model.moe is not None
    if training:
        return (f"Expert parallelism swept too: EP {', '.join(map(str, sorted(set(lay.ep.tolist()))))} (sizes that "
                f"divide the {model.moe.num_experts} experts and the GPUs of a pipeline stage).")
    if not (lay.ep > 1).any():
        return "Expert parallelism is not swept: experts are split with TP (EP 1)."
    inside = sorted(set(lay.tp[(lay.ep > 1) & (lay.ep == lay.tp)].tolist()))  # serving_layouts.ep_inside_tp_sizes'
    within = ("" if not inside else "; replicas of TP " + _either(inside) + " also with the routed experts split whole "
              "over each replica's TP group (EP inside TP, the attention split by TP)")
    if not (lay.ep > lay.tp).any():
        return "Expert parallelism swept inside TP" + within[1:] + "; the other layouts split the experts with TP."
    tps = _either(sorted(set(lay.tp[lay.ep > lay.tp].tolist())))  # serving_layouts.attention_dp_tp_sizes'
    return (
        "Expert parallelism swept as attention data parallelism on one server (at most 8 GPUs): replicas of the "
        f"attention and dense layers of TP {tps}"
        + (" (TensorRT-LLM's enable_attention_dp)" if w.engine == "trtllm" else "")
        + ", each with its own sequences' KV cache, "
        "the routed experts split over all the server's GPUs"
        + ("; on 2 or more servers, that engine on each server (independent engines, the users split evenly "
           "between them" + (", at the server count times each concurrency swept, each engine as the one-server one"
                              if scaled else "")
           + ")" if ((lay.ep > lay.tp) & (lay.servers > 1)).any() else "")
        + "; each such configuration planned whole (the replicas step together, every MoE layer "
        "gathers their tokens)" + within + "; the other layouts split the experts with TP.")


def _either(sizes: list[int]) -> str:
    """``2, 4 or 8``."""
    words = [str(size) for size in sizes]
    return " or ".join((", ".join(words[:-1]), words[-1])) if len(words) > 1 else words[0]


# the FP4 training line of a probe planned without a GPU (planner.training), which names no GPU's framework
FP4_PROBE_PREFIX = "FP4 training as Transformer Engine runs it:"


# the FP8 training line of a probe planned without a GPU (planner.training): Megatron-Core on NVIDIA's Transformer
# Engine, where each swept GPU has its own (gpus.toml training_stacks: ROCm Transformer Engine on the MI300X and after)
FP8_STACK_HEAD = "FP8 training as Megatron-Core runs it on "
FP8_STACK_TAIL = " with FP8 parameters"
FP8_PROBE_PREFIX = FP8_STACK_HEAD + "Transformer Engine" + FP8_STACK_TAIL


def training_stacks_line(probe_line: str, gpus: Iterable[GpuSpec]) -> str:
    """The probe's FP8 or FP4 training line with the swept GPUs' own frameworks (any other line as it is)."""
    if probe_line.startswith(FP4_PROBE_PREFIX):
        return fp4_stacks_line(probe_line, gpus)
    if probe_line.startswith(FP8_PROBE_PREFIX):
        return fp8_stacks_line(probe_line, gpus)
    return probe_line


def _by_stack(gpus: Iterable[GpuSpec], precision: str) -> dict[str, list[str]]:
    """The swept GPUs' names under the framework each trains ``precision`` with (GPUs without one left out)."""
    by_stack: dict[str, list[str]] = {}
    for gpu in gpus:
        stack = gpu.training_stack(precision)
        if stack is not None and gpu.name not in by_stack.setdefault(stack, []):
            by_stack[stack].append(gpu.name)
    return by_stack


def _named(by_stack: dict[str, list[str]]) -> str:
    return "; ".join(f"{', '.join(names)}: {stack}" for stack, names in by_stack.items())


def _stacks_line(probe_line: str, gpus: Iterable[GpuSpec], unit: str, prefix: str, one: Callable[[str], str],
                 many: Callable[[str], str]) -> str:
    """``probe_line`` with its ``prefix`` replaced by ``one(stack)`` where every swept GPU trains ``unit`` with the
    same framework, by ``many(each GPU's named)`` where they differ; unchanged where none trains it."""
    by_stack = _by_stack(gpus, unit)
    if not by_stack:
        return probe_line
    head = one(next(iter(by_stack))) if len(by_stack) == 1 else many(_named(by_stack))
    return head + probe_line.removeprefix(prefix)


def fp8_stacks_line(probe_line: str, gpus: Iterable[GpuSpec]) -> str:
    """The probe's FP8 training line with the framework each swept GPU trains FP8 with (``GpuSpec.training_stack``).

    >>> from anchorgpu.hardware import get_gpu
    >>> line = FP8_PROBE_PREFIX + " (--fp8-param-gather ..."
    >>> fp8_stacks_line(line, [get_gpu("mi300x"), get_gpu("mi325x")])
    'FP8 training as Megatron-Core runs it on ROCm Transformer Engine with FP8 parameters (--fp8-param-gather ...'
    >>> fp8_stacks_line(line, [get_gpu("h100"), get_gpu("mi300x")])
    "FP8 training as Megatron-Core runs it on each GPU's framework (h100-sxm: Transformer Engine; mi300x: ROCm Transformer Engine) with FP8 parameters (--fp8-param-gather ..."
    """
    return _stacks_line(probe_line, gpus, "fp8", FP8_PROBE_PREFIX,
                        lambda stack: f"{FP8_STACK_HEAD}{stack}{FP8_STACK_TAIL}",
                        lambda named: f"{FP8_STACK_HEAD}each GPU's framework ({named}){FP8_STACK_TAIL}")


def fp4_stacks_line(probe_line: str, gpus: Iterable[GpuSpec]) -> str:
    """The probe's FP4 training line with the framework each swept GPU trains FP4 with (``GpuSpec.training_stack``;
    GPUs without one are left out of the sweep and of the line).

    >>> from anchorgpu.hardware import get_gpu
    >>> line = FP4_PROBE_PREFIX + " 16-bit weights ..."
    >>> fp4_stacks_line(line, [get_gpu("mi355x")])
    'FP4 training as ROCm Transformer Engine (MXFP4BlockScaling) runs it: 16-bit weights ...'
    >>> fp4_stacks_line(line, [get_gpu("b200"), get_gpu("gb200"), get_gpu("mi355x")])
    "FP4 training as each GPU's framework runs it (b200, gb200: Transformer Engine; mi355x: ROCm Transformer Engine (MXFP4BlockScaling)): 16-bit weights ..."
    """
    return _stacks_line(probe_line, gpus, "fp4", FP4_PROBE_PREFIX, lambda stack: f"FP4 training as {stack} runs it:",
                        lambda named: f"FP4 training as each GPU's framework runs it ({named}):")
