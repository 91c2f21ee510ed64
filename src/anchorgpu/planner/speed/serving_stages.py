"""Where the serving layouts chosen for the user run pipeline stages. On servers whose GPUs share a scale-up link
(NVLink, xGMI, NVSwitch), only where no layout of TP alone (TP inside a server, replicas of it) holds the users on
the same GPUs; on PCIe-only servers, wherever they are fastest, as before.

The engines' own guidance: vLLM's distributed-serving guide ("How to decide the distributed inference strategy?",
https://docs.vllm.ai/en/v0.8.4/serving/distributed_serving.html, the same in
https://docs.vllm.ai/en/latest/serving/parallelism_scaling/) uses tensor parallelism while the model fits one node's
GPUs and adds pipeline parallelism across nodes only for a model too large for one node (the tensor-parallel size the
GPUs in each node, the pipeline-parallel size the nodes); TensorRT-LLM's "Deciding Model Sharding Strategy"
(https://nvidia.github.io/TensorRT-LLM/performance/performance-tuning-guide/deciding-model-sharding-strategy.html)
weighs TP against PP by the link between the GPUs, and its own perf table runs TP 1 x PP 8 and TP 4 x PP 2 on PCIe
RTX PRO 6000 and L40S servers (calibration rows P70-RTXTP1PP8-* and PL4S-RTXTP4PP2-*). On NVLink, stages buy a few %
of total tokens/s at many users for a time to first token up to several times longer (every prompt chunk crosses
every stage in turn): Llama 3.1 70B, 32,000-token prompts for 16 users on 8 H100s, TP 2 x PP 2 x DP 2 predicted 3.5%
faster than TP 4 x DP 2 at 1.7x its TTFT (``benchmarks/hardening/stop56_qa16.md`` L3). So there they stay a
fallback: the chooser (:mod:`~anchorgpu.planner.speed.serving_layouts`) and recommend's sweep
(:func:`~anchorgpu.recommend.selection.best_serving_per_group`) rank them only where TP alone holds nothing: TP
cannot split the model's heads that wide, the weights need more than one server, or the KV cache each TP rank keeps
whole (MLA's latent, fewer KV heads than GPUs) does not hold the users. A ``--pp`` given is always planned as given.
Pure.
"""

from __future__ import annotations

from typing import TypeVar

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Layout
from anchorgpu.planner.speed.layouts import SERVER_GPUS
from anchorgpu.planner.speed.topology import group_link

__all__ = ["STAGES_RULE", "stages_on_scale_up", "without_stages_on_scale_up"]

STAGES_RULE = ("on NVLink/xGMI servers pipeline stages are planned only where no layout of TP alone (TP inside a "
               "server, replicas of it) holds the users (vLLM's distributed-serving guide: TP over a node's GPUs, PP "
               "across nodes for a model one node cannot hold)")
"""The rule as the chooser's line states it."""

_T = TypeVar("_T")


def stages_on_scale_up(gpu: GpuSpec, tp: int, pp: int, gpus_per_server: int = SERVER_GPUS) -> bool:
    """Whether a replica of ``tp`` x ``pp`` GPUs runs pipeline stages on servers whose GPUs all share the scale-up
    link (NVLink, xGMI, NVSwitch), inside one or across several: on PCIe-only servers (L40S, RTX PRO 6000) it is
    not, as TensorRT-LLM's own runs stage them there.

    >>> from anchorgpu.hardware import get_gpu
    >>> h100, rtx = get_gpu("h100"), get_gpu("rtx-pro-6000")
    >>> [stages_on_scale_up(h100, tp, pp) for tp, pp in ((2, 2), (8, 1), (8, 2))], stages_on_scale_up(rtx, 1, 8)
    ([True, False, True], False)
    """
    return pp > 1 and group_link(gpu, min(tp * pp, gpus_per_server), gpus_per_server=gpus_per_server).kind == "scale-up"


def without_stages_on_scale_up(held: list[tuple[Layout, _T]], gpu: GpuSpec
                                   ) -> tuple[list[tuple[Layout, _T]], list[tuple[Layout, _T]]]:
    """``held`` (layouts that hold the users, each with its plan) less those with stages on scale-up servers
    (:func:`stages_on_scale_up`) where a layout of TP alone holds them (TP splits and their replicas, the experts
    sliced or whole over the TP group), in order; and those left out. Where only attention data parallelism holds
    them besides the stages, both stay ranked by speed: Qwen3-235B-A22B, 32,000-token prompts for 8 users on 8
    H100s (4 KV heads: TP 8 keeps each twice), TP 4 x PP 2 is predicted 32% faster than attention DP (TP 4, DP 2,
    EP 8) at a time to first token within 12% of it.

    >>> from anchorgpu.hardware import get_gpu
    >>> tp4, staged = Layout(gpus=8, tp=4, dp=2), Layout(gpus=8, tp=2, pp=2, dp=2)
    >>> kept, left_out = without_stages_on_scale_up([(tp4, "a"), (staged, "b")], get_gpu("h100"))
    >>> [p for _, p in kept], [p for _, p in left_out]
    (['a'], ['b'])
    >>> len(without_stages_on_scale_up([(staged, "b")], get_gpu("h100"))[0])  # nothing else holds them: kept
    1
    >>> adp = Layout(gpus=8, tp=4, dp=2, ep=8)  # attention DP alone besides the stages: both ranked
    >>> len(without_stages_on_scale_up([(adp, "c"), (staged, "b")], get_gpu("h100"))[0])
    2
    >>> without_stages_on_scale_up([(tp4, "a"), (staged, "b")], get_gpu("rtx-pro-6000"))[1]  # PCIe: both ranked
    []
    """
    inside = [stages_on_scale_up(gpu, lay.tp or 1, lay.pp or 1) for lay, _ in held]
    if not any(not staged and (lay.ep or 1) <= (lay.tp or 1) for (lay, _), staged in zip(held, inside, strict=True)):
        return held, []  # nothing TP alone (or with the experts whole over it) holds them: stages stay ranked
    return ([h for h, staged in zip(held, inside, strict=True) if not staged],
            [h for h, staged in zip(held, inside, strict=True) if staged])
