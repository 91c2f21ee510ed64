"""The serving-engine assumption of a catalog sweep for vLLM, whose scheduler defaults follow each GPU's size (the
probe plan's line names one GPU's); SGLang's is :func:`anchorgpu.planner.sweep_sglang.sglang_sweep_line`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from anchorgpu.errors import said
from anchorgpu.planner.engine_limits import block_size_of, engine_limits, large_engine_defaults
from anchorgpu.planner.inputs import DEFAULT_GPU_MEMORY_UTILIZATION, Workload
from anchorgpu.planner.serving_engine import engine_line

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import HardwareShape

__all__ = ["vllm_sweep_line"]


def vllm_sweep_line(shapes: Sequence[HardwareShape], workload: Workload) -> str | None:
    """The serving-engine assumption of a sweep for vLLM where its scheduler defaults differ across the GPUs swept
    (:func:`~anchorgpu.planner.engine_limits.large_engine_defaults`: 8,192 tokens and 1,024 sequences on GPUs of at least
    70 GiB but the A100, 2,048 and 256 elsewhere): the rule and the values the swept GPUs got; where one set of
    values holds them all, plan's line with those values (the sweep's probe plan names no GPU, so its own line would
    give a large GPU's defaults on an L40S).

    >>> from anchorgpu.planner.sweep import HardwareShape
    >>> from anchorgpu.hardware import get_gpu
    >>> shapes = [HardwareShape(id=g, gpu=get_gpu(g), gpus_per_server=1, max_servers=1) for g in ("h100", "l40s")]
    >>> vllm_sweep_line(shapes, Workload()).split("swept ")[1]
    '8,192 and 1,024 on h100-sxm; 2,048 and 256 on l40s; gpu_memory_utilization 0.9, KV block 16 tokens.'
    >>> print(vllm_sweep_line(shapes[1:], Workload()))
    Serving engine sized like vLLM: max_num_batched_tokens 2048, max_num_seqs 256, gpu_memory_utilization 0.9, KV block 16 tokens.
    >>> vllm_sweep_line(shapes, Workload(max_num_batched_tokens=4096, max_num_seqs=128)).split(": ")[1]
    'max_num_batched_tokens 4096, max_num_seqs 128, gpu_memory_utilization 0.9, KV block 16 tokens.'
    """
    limits: dict[tuple[int, int], list[str]] = {}
    for sh in shapes:
        names = limits.setdefault(engine_limits(workload, large_gpu=large_engine_defaults(sh.gpu)), [])
        if sh.gpu.name not in names:
            names.append(sh.gpu.name)
    utilization = workload.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    if len(limits) == 1:
        (tokens, seqs), = limits
        return engine_line("vllm", tokens, seqs, utilization, block_size_of(workload))
    groups = [said("{tokens:,} and {seqs:,} on {gpus}", tokens=tokens, seqs=seqs, gpus=", ".join(names))
              for (tokens, seqs), names in sorted(limits.items(), reverse=True)]
    got = groups[-1]
    for head in reversed(groups[:-1]):
        got = said("{head}; {tail}", head=head, tail=got)
    return said("Serving engine sized like vLLM on each GPU, as plan sizes it: max_num_batched_tokens and max_num_seqs "
                "vLLM's defaults by the GPU (8,192 and 1,024 on GPUs of at least 70 GiB but the A100, 2,048 and 256 "
                "elsewhere; arg_utils _set_default_args), among the GPUs swept {got}; gpu_memory_utilization "
                "{utilization}, KV block {block} tokens.", got=got, utilization=utilization,
                block=block_size_of(workload))
