"""What a serving engine checks before it loads anything: vLLM asks for ``gpu_memory_utilization`` of the GPU's total
memory to be free at start-up and refuses to start otherwise, so a memory fraction that leaves no room for the
runtime's own context can never run, whatever the model. SGLang starts, but allocates its whole KV pool first, so a
``mem_fraction_static`` that leaves less outside it than one prefill chunk's activations runs out of memory on the
first full chunk. And an engine left at its default maximum length (the model's window) needs one sequence of it
to fit its KV cache: vLLM refuses to start otherwise ("To serve at least one request with the models's max seq len
(N), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB). Based on the available
memory, the estimated maximum model length is M ...", ``check_enough_kv_cache_memory``), so a plan sized at the
default request gives the launch the longest sequence its cache holds (:func:`short_launch_length`). Pure; the
planner's inputs and units only.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from anchorgpu.errors import said
from anchorgpu.planner.inputs import DEFAULT_GPU_MEMORY_UTILIZATION, Overheads
from anchorgpu.planner.terms import context_bytes
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.plan import Plan

__all__ = ["longest_one_sequence", "sglang_derived_fraction_refusal", "short_launch_length", "sglang_most_fraction",
           "sglang_reserve_bytes", "sglang_reserve_refusal", "startup_refusal"]


def startup_refusal(engine: str, gpu: GpuSpec | None, utilization: float | None, ov: Overheads) -> str | None:
    """The one-line refusal of a vLLM memory fraction the engine would refuse at start-up on ``gpu``, else None.

    vLLM V1's worker takes a snapshot of the free memory once the CUDA (or ROCm) context exists and raises "Free
    memory on device (free/total GiB) on startup is less than desired GPU memory utilization (u, u x total GiB)"
    when ``free < u x total`` (``vllm/v1/worker/gpu_worker.py`` ``init_device``; the message as users met it on an
    H100: "Free memory on device (5.31/79.18 GiB) on startup is less than desired GPU memory utilization (0.9,
    71.26 GiB)", vllm-project/vllm issue "[Usage]: How to run model - RedHatAI/Mixtral-8x7B-Instruct-v0.1-FP8",
    vLLM 0.9.1). On an otherwise empty GPU the free memory is the total less the runtime context, so a fraction above
    ``1 - context / total`` never starts. SGLang and TensorRT-LLM take their fractions of what is free after the
    weights and so have no such check (their plans say what the fraction leaves for activations instead).

    >>> from anchorgpu.hardware import get_gpu
    >>> startup_refusal("vllm", get_gpu("h100"), 0.9, Overheads()) is None, startup_refusal("sglang", get_gpu("h100"), 1.0, Overheads())
    (True, None)
    >>> print(startup_refusal("vllm", get_gpu("h100"), 1.0, Overheads()))
    --gpu-memory-utilization 1: vLLM asks for 79.18 GiB free at start-up on h100-sxm, where its CUDA context leaves 78.68 GiB, and refuses to start ("Free memory on device ... is less than desired GPU memory utilization"); at most 0.993 here
    """
    if engine != "vllm" or gpu is None:
        return None
    util = utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    free = gpu.memory_bytes - context_bytes(gpu, ov)
    if util * gpu.memory_bytes <= free:
        return None
    runtime = gpu.runtime_name
    most = math.floor(free / gpu.memory_bytes * 1000) / 1000
    given = f"--gpu-memory-utilization {util:g}" + (" (vLLM's default)" if utilization is None else "")
    own = context_bytes(gpu, ov)
    context = (f"its {runtime} context" if own == context_bytes(gpu, Overheads())
               else f"the {runtime} context of --cuda-context-mib {own // 2**20:,}")
    return (said("{given}: vLLM asks for {fmt_bytes} free at start-up on {gpu_name}, where {context} leaves "
                 '{free}, and refuses to start ("Free memory on device ... is less than desired GPU memory '
                 'utilization"); at most {most:g} here', given=given, fmt_bytes=fmt_bytes(util * gpu.memory_bytes),
                 gpu_name=gpu.name, context=context, free=fmt_bytes(free), most=most))


def sglang_derived_fraction_refusal(fraction: float, derived: bool, reserve_mib: float, gpu_mib: float,
                                    chunk_tokens: int) -> str | None:
    """The one-line refusal of a SGLang launch whose own ``mem_fraction_static`` (derived, none given) is not above 0,
    else None: its reserve, which grows by 1.5 MiB a token of the prefill chunk, then takes the GPU's whole memory
    (``--max-num-batched-tokens 100000`` on an L4: 147 GiB of 22.5), and no weight or KV pool fits in what is left.
    A plan of it showed a negative fraction and a negative budget.

    >>> print(sglang_derived_fraction_refusal(-5.624, True, 150_700.0, 23_034.0, 100_000))
    --max-num-batched-tokens 100,000: SGLang reserves 147.17 GiB for a prefill chunk of 100,000 tokens and its CUDA graphs, more than the GPU's 22.49 GiB, so its mem_fraction_static would be -5.624 and nothing else fits; lower --max-num-batched-tokens
    >>> sglang_derived_fraction_refusal(0.83, True, 13_800.0, 81_559.0, 16_384) is None
    True
    """
    if not derived or fraction > 0:
        return None
    return (said("--max-num-batched-tokens {chunk_tokens:,}: SGLang reserves {fmt_bytes} for a prefill chunk of "
                 "{chunk_tokens:,} tokens and its CUDA graphs, more than the GPU's {fmt_bytes2}, so its "
                 "mem_fraction_static would be {fraction:g} and nothing else fits; lower --max-num-batched-tokens",
                 chunk_tokens=chunk_tokens, fmt_bytes=fmt_bytes(reserve_mib * 2**20),
                 fmt_bytes2=fmt_bytes(gpu_mib * 2**20), fraction=fraction))


def sglang_reserve_bytes(fraction: float, start_free_bytes: int) -> int:
    """What SGLang leaves outside ``mem_fraction_static`` for activations and CUDA graphs: the memory free at start
    less ``int(fraction x free)``, the share its weights and KV pool take (``profile_max_num_token``); the sweep's
    numpy form is in :func:`~anchorgpu.planner.sweep_serving_memory.memory_terms`.

    >>> sglang_reserve_bytes(0.9, 1000), sglang_reserve_bytes(1.0, 1000)
    (100, 0)
    """
    return start_free_bytes - int(fraction * start_free_bytes)


def sglang_most_fraction(start_free_bytes: int, prefill_bytes: int) -> float:
    """The largest ``mem_fraction_static`` (3 decimals, rounded down) whose reserve, the memory free at start less
    ``int(fraction x free)`` (``profile_max_num_token``), holds a prefill peak of ``prefill_bytes``.

    >>> sglang_most_fraction(100 * 2**30, 2**30), sglang_most_fraction(10**9, 0)
    (0.99, 1.0)
    """
    return max(0.0, math.floor((1 - prefill_bytes / start_free_bytes) * 1000) / 1000)


def sglang_reserve_refusal(fraction: float, derived: bool, start_free_bytes: int, prefill_bytes: int,
                           chunk_tokens: int) -> str | None:
    """The one-line refusal of a SGLang ``mem_fraction_static`` whose reserve is smaller than the prefill activation
    peak of one ``chunk_tokens`` chunk, else None. SGLang sizes its KV pool as ``fraction`` of the memory free at start
    less the weights and allocates it at start-up (``ModelRunner.init_memory``, sgl-project/sglang@001ccef0
    model_runner_kv_cache_mixin.py ``profile_max_num_token``); the activations and CUDA graphs live in what is left,
    so a full prefill chunk runs out of memory where that is less than its peak. SGLang's own default leaves at
    least 10 GiB on GPUs above 60 GiB (its reserve rule), so in practice only a given fraction is refused.

    >>> print(sglang_reserve_refusal(1.0, False, 78 * 2**30, 928 * 2**20, 8192))
    --gpu-memory-utilization 1: SGLang's KV pool would leave 0 B outside mem_fraction_static for the 928.00 MiB prefill peak of a chunk of 8,192 tokens, and the first full chunk would run out of memory; at most 0.988 here (or lower --max-num-batched-tokens)
    >>> sglang_reserve_refusal(0.98, False, 78 * 2**30, 928 * 2**20, 8192) is None
    True
    """
    reserve = sglang_reserve_bytes(fraction, start_free_bytes)
    if prefill_bytes <= reserve:
        return None
    given = (f"mem_fraction_static {fraction:g} (SGLang's default here)" if derived
             else f"--gpu-memory-utilization {fraction:g}")
    return (said("{given}: SGLang's KV pool would leave {reserve} outside mem_fraction_static for the "
                 "{prefill_bytes} prefill peak of a chunk of {chunk_tokens:,} tokens, and the first full chunk "
                 "would run out of memory; at most {start_free_bytes:g} here (or lower --max-num-batched-tokens)",
                 given=given, reserve=fmt_bytes(reserve), prefill_bytes=fmt_bytes(prefill_bytes),
                 chunk_tokens=chunk_tokens, start_free_bytes=sglang_most_fraction(start_free_bytes, prefill_bytes)))


def longest_one_sequence(plan: Plan, planned_ctx: int) -> int:
    """The longest context one sequence can have in the KV cache the engine reserves (at the planned tokens' bytes per
    token, so a sliding-window model's is an underestimate), at most the model's window; 0 when the plan does not say.
    The launch recipes give it as the maximum length where no length was asked for (recipes.serving)."""
    from anchorgpu.architectures.spec import ModelSpec

    capacity, per_sequence = plan.breakdown.get("kv_cache_capacity_bytes"), plan.breakdown.get("kv_per_sequence_bytes")
    if not capacity or not per_sequence or not isinstance(plan.model, ModelSpec):
        return 0
    tokens = int(capacity * planned_ctx // per_sequence)
    return min(plan.model.max_context_tokens, tokens - tokens % 16)


def short_launch_length(plan: Plan) -> int | None:
    """Where ``plan`` sized its sequences at the default request (no length given, more than one sequence) and its
    engine's KV cache holds no whole-window sequence: the maximum length its launch sets
    (:func:`longest_one_sequence`, as the recipes write it), which the engine needs to start; else None."""
    from anchorgpu.architectures.spec import ModelSpec
    from anchorgpu.planner.serving_request import DEFAULT_REQUEST_NOTE

    if not isinstance(plan.model, ModelSpec) or not plan.workload.context_tokens:
        return None
    if not any(a.startswith(DEFAULT_REQUEST_NOTE) for a in plan.assumptions):
        return None
    length = max(longest_one_sequence(plan, plan.workload.context_tokens), plan.workload.context_tokens)
    return length if length < plan.model.max_context_tokens else None
