"""The serving engines' own limits a plan starts from: vLLM's scheduler defaults by GPU, TensorRT-LLM's
``trtllm-serve`` defaults, SGLang's chunk and request pool, and the KV-cache page each engine uses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchorgpu.planner.inputs import Workload
from anchorgpu.planner.sglang import SGLANG_MAX_REQUESTS, page_size_tokens, sglang_settings
from anchorgpu.units import GIB

if TYPE_CHECKING:
    from anchorgpu.hardware.spec import GpuSpec

__all__ = ["DEFAULT_BLOCK_SIZE_TOKENS", "TRTLLM_MAX_BATCH_SIZE", "TRTLLM_MAX_NUM_TOKENS", "block_size_of",
           "engine_limits", "engine_limits_on", "large_engine_defaults"]

DEFAULT_BLOCK_SIZE_TOKENS = 16
"""The KV-cache page of vLLM (its default on CUDA) and TensorRT-LLM as planned; SGLang's is one token."""
TRTLLM_MAX_NUM_TOKENS = 8192
TRTLLM_MAX_BATCH_SIZE = 2048
"""``trtllm-serve``'s defaults when neither is given (``tensorrt_llm/commands/serve.py`` ``get_llm_args``, from
``BuildConfig``): 8,192 tokens a step and 2,048 sequences, on every GPU."""


def large_engine_defaults(gpu: GpuSpec | None) -> bool:
    """Whether vLLM gives a GPU its large scheduler defaults: at least 70 GiB of memory and not an A100, whose name
    vLLM checks apart (``"a100" not in device_name``: an A100 80GB keeps the small ones; vllm-project/vllm
    ``EngineArgs`` batch defaults, pinned by ``tests/engine/test_arg_utils.py::test_defaults_with_usage_context``);
    an unknown GPU (``None``) takes the large ones.

    >>> from anchorgpu.hardware import get_gpu
    >>> [large_engine_defaults(get_gpu(name)) for name in ("h100", "a100-80gb-sxm", "l40s")], large_engine_defaults(None)
    ([True, False, False], True)
    """
    return gpu is None or (gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower())


def block_size_of(workload: Workload) -> int:
    """The KV-cache page the workload is planned with: its own, else the engine's (vLLM's 16 tokens on CUDA, as
    TensorRT-LLM is planned; SGLang's one-token slots, ``--page-size`` 1).

    >>> block_size_of(Workload()), block_size_of(Workload(engine="sglang")), block_size_of(Workload(block_size_tokens=32))
    (16, 1, 32)
    """
    if workload.block_size_tokens is not None:
        return workload.block_size_tokens
    return page_size_tokens() if workload.engine == "sglang" else DEFAULT_BLOCK_SIZE_TOKENS


def engine_limits(workload: Workload, *, large_gpu: bool, gpu_memory_bytes: int | None = None) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs): the workload's, else vLLM V1's defaults for the OpenAI server,
    8,192 tokens and 1,024 sequences where :func:`large_engine_defaults` (GPUs of at least 70 GiB but the A100),
    2,048 and 256 elsewhere (vLLM ``arg_utils._set_default_args``); with TensorRT-LLM, ``trtllm-serve``'s 8,192 and
    2,048 on every GPU. vLLM's default sequence cap is at most the token budget: its scheduler refuses to start with ``max_num_batched_tokens < max_num_seqs`` (``SchedulerConfig._verify_args``), so a
    budget of 512 tokens runs at most 512 sequences, and a cap given above the default budget raises the budget to it.

    >>> engine_limits(Workload(), large_gpu=True), engine_limits(Workload(max_num_seqs=64), large_gpu=False)
    ((8192, 1024), (2048, 64))
    >>> engine_limits(Workload(max_num_batched_tokens=512), large_gpu=True)
    (512, 512)
    >>> engine_limits(Workload(max_num_seqs=4096), large_gpu=False)  # the budget follows a larger cap
    (4096, 4096)
    >>> engine_limits(Workload(engine="trtllm"), large_gpu=False)  # trtllm-serve's, whatever the GPU
    (8192, 2048)

    With SGLang, its ``chunked_prefill_size`` by the GPU's memory (``gpu_memory_bytes``) and, before its KV pool is
    sized, its request pool's most, 4,096 sequences (a plan resolves ``max_running_requests`` from the pool):

    >>> engine_limits(Workload(engine="sglang"), large_gpu=True, gpu_memory_bytes=192 * 1024**3)
    (16384, 4096)
    """
    if workload.engine == "sglang":
        settings = sglang_settings(gpu_memory_bytes, tp=1, pp=1, chunked_prefill_size=workload.max_num_batched_tokens)
        return settings.chunked_prefill_size, workload.max_num_seqs or SGLANG_MAX_REQUESTS
    if workload.engine == "trtllm":
        return (workload.max_num_batched_tokens or TRTLLM_MAX_NUM_TOKENS,
                workload.max_num_seqs or TRTLLM_MAX_BATCH_SIZE)
    tokens = workload.max_num_batched_tokens or max(8192 if large_gpu else 2048, workload.max_num_seqs or 0)
    seqs = workload.max_num_seqs or min(1024 if large_gpu else 256, tokens)
    return tokens, seqs


def engine_limits_on(workload: Workload, gpu: GpuSpec | None) -> tuple[int, int]:
    """:func:`engine_limits` on ``gpu``: its large defaults or not, and its memory for SGLang's chunk.

    >>> from anchorgpu.hardware import get_gpu
    >>> engine_limits_on(Workload(), get_gpu("h100")), engine_limits_on(Workload(), None)
    ((8192, 1024), (8192, 1024))
    """
    return engine_limits(workload, large_gpu=large_engine_defaults(gpu),
                         gpu_memory_bytes=gpu.memory_bytes if gpu is not None else None)
