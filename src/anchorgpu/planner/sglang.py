"""SGLang's own start-up sizing, as its server derives it when a launch leaves it unset (``data/sglang.json``, read
from sgl-project/sglang's code, with its source): the prefill chunk and the decode CUDA graphs' largest batch by the
GPU's memory and tensor-parallel size, ``mem_fraction_static`` from the reserve it keeps for activations and CUDA
graphs, and the most requests it runs from the KV pool it sizes. Pure; stdlib only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchorgpu.hardware.spec import GpuSpec

__all__ = ["CLIP_MAX_NEW_TOKENS", "RATIO_DECAY_STEPS", "SGLANG_MAX_PREFILL_TOKENS", "SGLANG_MAX_REQUESTS", "SglangSettings", "admission_tokens", "admitted_requests", "cuda_graph_max_bs",
           "decode_graph_batch_sizes", "dequantises_absorbed_weights", "initial_new_token_ratio", "max_running_requests",
           "new_token_ratio_floor",
           "page_size_tokens", "prefill_graph_sizes", "sglang_gpu_memory_bytes", "sglang_settings"]

MIB = 1 << 20


@cache
def _data() -> dict[str, Any]:
    return dict(json.loads(resources.files("anchorgpu.planner").joinpath("data/sglang.json").read_text("utf-8")))


SGLANG_MAX_REQUESTS: int = int(_data()["request_pool"]["max"])
"""The most requests SGLang's request pool holds (4,096), whatever the KV pool."""

CLIP_MAX_NEW_TOKENS: int = int(_data()["admission"]["clip_max_new_tokens"])
"""The most output tokens SGLang's admission counts for a request (``SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION``, 4,096);
a request may still write more."""

RATIO_DECAY_STEPS: int = int(_data()["admission"]["new_token_ratio_decay_steps"])
"""Decode steps over which SGLang's ``new_token_ratio`` falls from its initial value to its floor (600)."""

SGLANG_MAX_PREFILL_TOKENS: int = int(_data()["prefill_batch"]["max_prefill_tokens"])
"""SGLang's ``max_prefill_tokens`` unless the launch gives it (16,384): past it no further prompt joins a prefill
batch, so a step budget (``chunked_prefill_size``) above it needs ``--max-prefill-tokens`` raised too."""


def sglang_gpu_memory_bytes(gpu: GpuSpec | None) -> int | None:
    """The GPU memory SGLang sizes its tiers and ``mem_fraction_static`` by, in bytes: what ``get_device_memory_capacity``
    reads, ``nvidia-smi --query-gpu=memory.total`` on NVIDIA (torch's total only where nvidia-smi answers nothing, as
    under MIG) and rocminfo's GPU pool on AMD, in MiB (sgl-project/sglang@004f0c7a8d398a9c4b6844c1d8071502fa88e78c
    python/sglang/srt/utils/common.py ``get_nvgpu_memory_capacity``, ``get_amdgpu_memory_capacity``): the catalog's
    ``memory_smi_mib`` where sourced, else the runtime total the planner budgets against. Its KV pool is a share of the
    memory free at start (torch's), not of this figure.

    >>> from anchorgpu.hardware import get_gpu
    >>> sglang_gpu_memory_bytes(get_gpu("h100")) // MIB, get_gpu("h100").memory_bytes // MIB  # nvidia-smi 81,559
    (81559, 81079)
    >>> sglang_gpu_memory_bytes(get_gpu("b300")) == get_gpu("b300").memory_bytes  # no nvidia-smi figure sourced
    True
    >>> sglang_gpu_memory_bytes(get_gpu("h100-pcie")) == get_gpu("h100-pcie").memory_bytes, sglang_gpu_memory_bytes(None)
    (True, None)
    """
    if gpu is None:
        return None
    return gpu.memory_smi_mib * MIB if gpu.memory_smi_mib is not None else gpu.memory_bytes


def page_size_tokens() -> int:
    """SGLang's KV page: one token slot (``--page-size`` 1 by default).

    >>> page_size_tokens()
    1
    """
    return int(_data()["page_size_tokens"])


def decode_graph_batch_sizes(max_bs: int) -> tuple[int, ...]:
    """The decode batch sizes SGLang captures a CUDA graph for (``_generate_decode_cuda_graph_batch_sizes``, no
    speculative decoding): 1, 2, 4, 8, 12, then every 8 to 256, every 16 to 512, every 32 beyond, up to ``max_bs``
    (always included); a decode batch runs the smallest that holds it, one above ``max_bs`` runs eagerly.

    >>> decode_graph_batch_sizes(32), len(decode_graph_batch_sizes(512)), decode_graph_batch_sizes(512)[-3:]
    ((1, 2, 4, 8, 12, 16, 24, 32), 52, (480, 496, 512))
    """
    sizes = [1, 2, 4, 8, 12, *range(16, 257, 8), *range(272, 512, 16), *range(512, max_bs + 1, 32)]
    out = [bs for bs in sizes if bs <= max_bs]
    return tuple(out if max_bs in out else [*out, max_bs])


def dequantises_absorbed_weights(vendor: str | None, mla: bool, weights: str | None) -> bool:
    """Whether SGLang dequantises an MLA model's absorbed latent weights from FP8 every decode step: on AMD GPUs
    (ROCm has no ``bmm_fp8``; ``speed.launches.absorbed_dequant_bytes`` cites the code), for an MLA model planned in
    an FP8 format (``weights``: its name; None is 16 bit).

    >>> dequantises_absorbed_weights("AMD", True, "fp8-block128x128"), dequantises_absorbed_weights("NVIDIA", True, "fp8")
    (True, False)
    >>> dequantises_absorbed_weights("AMD", False, "fp8"), dequantises_absorbed_weights("AMD", True, "bf16")
    (False, False)
    """
    return vendor == "AMD" and mla and (weights or "").startswith("fp8")


@cache
def prefill_graph_sizes(max_tokens: int) -> tuple[int, ...]:
    """The prefill token counts SGLang captures a graph for (``_generate_prefill_cuda_graph_batch_sizes``).

    >>> len(prefill_graph_sizes(8192)), prefill_graph_sizes(8192)[-1], len(prefill_graph_sizes(2048))
    (58, 8192, 42)
    """
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32), *range(576, 1025, 64),
             *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return tuple(s for s in sizes if s <= max_tokens)


@dataclass(frozen=True, slots=True)
class SglangSettings:
    """What SGLang sets at start-up on one GPU of a launch: the prefill chunk (tokens a step), the largest decode
    CUDA graph (sequences), the reserve it leaves for activations and graphs (MiB, its estimate) and
    ``mem_fraction_static`` (the given one, else derived from that reserve)."""

    chunked_prefill_size: int
    cuda_graph_max_bs: int
    reserve_mib: float
    mem_fraction_static: float
    derived: bool  # True where mem_fraction_static is SGLang's default, False where the launch gave it


def cuda_graph_max_bs(gpu_memory_bytes: int | None, tp: int) -> int:
    """The largest decode batch SGLang captures a CUDA graph for when the launch leaves ``--cuda-graph-max-bs``
    unset, by the GPU's memory and SGLang's tp_size (:func:`sglang_settings`'s, alone).

    >>> cuda_graph_max_bs(80 * 1024**3, 1), cuda_graph_max_bs(80 * 1024**3, 4), cuda_graph_max_bs(None, 1)
    (256, 512, 160)
    """
    return _tier(None if gpu_memory_bytes is None else gpu_memory_bytes / MIB, tp)[1]


def _tier(gpu_mib: float | None, tp: int) -> tuple[int, int]:
    if gpu_mib is None:
        return 4096, 160  # SGLang's fallback where it cannot read the device's memory
    for tier in _data()["gpu_tiers"]:
        if tier["below_mib"] is None or gpu_mib < tier["below_mib"]:
            return int(tier["chunked_prefill_size"]), int(tier["cuda_graph_max_bs" if tp < 4 else "cuda_graph_max_bs_tp4"])
    raise AssertionError("the last tier has no bound")


def sglang_settings(gpu_memory_bytes: int | None, *, tp: int, pp: int, chunked_prefill_size: int | None = None,
                    mla: bool = False, dp_attention: int = 0, mem_fraction_static: float | None = None) -> SglangSettings:
    """SGLang's ``_handle_gpu_memory_settings`` for a GPU of ``gpu_memory_bytes`` (its memory in MiB as the device
    reports it), ``tp`` and ``pp`` (SGLang's tp_size: every GPU of a replica, the attention-DP ranks included),
    ``mla`` (an MLA model: prefill graphs capped at 2,048 tokens, 1.5 GiB reserved for them) and ``dp_attention``
    (its dp_size where attention data parallelism is on, else 0). The reserve is 512 MiB + 1.5 MiB per token of the
    prefill chunk (at least 2,048) + 1 GiB per 8 GPUs of tp x pp + 2 MiB per decode graph sequence (+ attention DP's
    padding) + the prefill graphs (8 MiB a captured size), at least 10 GiB on a GPU above 60 GiB; the fraction is
    ``round((memory - reserve) / memory, 3)``.

    >>> s = sglang_settings(80 * 1024**3, tp=8, pp=1)  # an H100: 8k chunk, 512 graphs, 58 prefill graph sizes
    >>> s.chunked_prefill_size, s.cuda_graph_max_bs, s.reserve_mib, s.mem_fraction_static
    (8192, 512, 15312.0, 0.813)
    >>> sglang_settings(80 * 1024**3, tp=1, pp=1).mem_fraction_static
    0.83
    >>> sglang_settings(80 * 1024**3, tp=1, pp=1, chunked_prefill_size=2048).reserve_mib  # 4,560 MiB, floored
    10240.0
    >>> sglang_settings(24 * 1024**3, tp=1, pp=1).mem_fraction_static  # an L4: no floor below 60 GiB
    0.833
    >>> sglang_settings(None, tp=1, pp=1).mem_fraction_static, sglang_settings(80 * 1024**3, tp=1, pp=1, mem_fraction_static=0.7).derived
    (0.88, False)
    """
    gpu_mib = None if gpu_memory_bytes is None else gpu_memory_bytes / MIB
    default_chunk, max_bs = _tier(gpu_mib, tp)
    chunk = chunked_prefill_size or default_chunk
    r = _data()["reserve_mib"]
    reserve = float(r["base"]) + max(chunk, r["min_activation_tokens"]) * r["per_activation_token"]
    reserve += tp * pp / 8 * r["per_8_gpus_of_tp_x_pp"]
    reserve += max_bs * r["per_decode_graph_bs"]
    if dp_attention:
        reserve += max_bs * dp_attention * r["dp_attention_per_graph_bs_per_dp"]
        if max_bs > r["dp_attention_large_bs_above"]:
            reserve += max_bs * dp_attention * r["dp_attention_large_per_graph_bs_per_dp"]
    if mla:
        reserve += r["mla_prefill_graphs"]
    else:
        reserve += len(prefill_graph_sizes(chunk)) * r["per_prefill_graph_size"]
    if gpu_mib is not None and gpu_mib > r["floor_above_gpu_mib"]:
        reserve = max(reserve, float(r["floor"]))
    if mem_fraction_static is not None:
        return SglangSettings(chunk, max_bs, reserve, mem_fraction_static, derived=False)
    fraction = round((gpu_mib - reserve) / gpu_mib, int(_data()["fraction_digits"])) if gpu_mib else 0.88
    return SglangSettings(chunk, max_bs, reserve, fraction, derived=True)


def max_running_requests(kv_tokens: int, context_len: int) -> int:
    """SGLang's default ``max_running_requests`` for a KV pool of ``kv_tokens`` token slots: half the pool's tokens,
    at most the request pool, ``min(max(kv_tokens / context_len x 512, 2,048), 4,096)`` slots for a model of
    ``context_len`` tokens (``ModelRunner.init_memory`` and the worker's ``max_running_requests``).

    >>> max_running_requests(1_000_000, 131072), max_running_requests(3000, 131072), max_running_requests(10**8, 4096)
    (3906, 1500, 4096)
    """
    pool = _data()["request_pool"]
    slots = min(max(int(kv_tokens / context_len * pool["per_context"]), pool["min"]), pool["max"])
    return max(0, min(int(kv_tokens * _data()["running_requests_per_token"]), int(slots)))


def initial_new_token_ratio() -> float:
    """SGLang's ``new_token_ratio`` at start and after an idle spell, at its default ``schedule_conservativeness``
    of 1: 0.7.

    >>> initial_new_token_ratio()
    0.7
    """
    return min(float(_data()["admission"]["init_new_token_ratio"]), 1.0)


def new_token_ratio_floor() -> float:
    """The lowest ``new_token_ratio`` SGLang's scheduler decays to, at its default ``schedule_conservativeness`` of 1:
    ``init x min_new_token_ratio_factor`` = 0.7 x 0.14 (``data/sglang.json`` ``admission``, with its source).

    >>> round(new_token_ratio_floor(), 9)
    0.098
    """
    return min(initial_new_token_ratio() * float(_data()["admission"]["min_new_token_ratio_factor"]), 1.0)


def admission_tokens(prompt_tokens: int, output_tokens: int) -> tuple[float, int]:
    """What SGLang's admission holds back, in tokens, in the steady state of a throughput benchmark of requests of
    ``prompt_tokens`` + ``output_tokens``: (what it charges a running request beyond the tokens it holds, on average
    over the running requests; the room the next request must find).

    Its scheduler (``PrefillAdder.add_one_req``, the default path with the radix cache on) starts a waiting request
    only if the pool's free and evictable slots, less ``new_token_ratio x min(max_new_tokens - generated, 4,096)``
    for every running request, exceed the newcomer's prompt + ``min(max_new_tokens, 4,096)``. In the steady state
    the running requests' progress ``g`` is spread evenly over the output (the spread vLLM's rule assumes too): one
    holds ``prompt + output / 2`` slots on average and is charged ``r x m`` more, ``m`` the mean of
    ``min(output - g, 4,096)``: ``output / 2``, or ``4,096 - 4,096^2 / (2 x output)`` above 4,096 tokens.

    The ratio ``r`` starts at 0.7 and falls by (0.7 - 0.098) / 600 after every decode step that finds a slot for
    each running request, to 0.098 after 600 such steps; only a step that finds fewer slots than requests
    (retraction) raises it again. With the progress spread, admission stops with about ``n x r x m`` slots free
    (what the charge keeps back beyond the slots held), and a decode step needs ``n``, so it runs short only where
    ``r x m < 1``: at 0.098, an output below 21 tokens. A steady benchmark therefore runs at the floor,
    :func:`new_token_ratio_floor`, and admits ``n`` requests while
    ``n x (prompt + output / 2 + 0.098 x m) + prompt + min(output, 4,096)`` stays below the pool
    (:func:`admitted_requests`): vLLM's rule less about 0.049 x output a request (capped near 400 tokens) and one
    request's prompt + output.

    Not modelled: requests that start together and share one length stay in step; admitted at ratio ``r``, they run
    out of slots once they have written about ``r`` of their output, are retracted and put the ratio back near their
    progress, so such a benchmark runs fewer requests than this.

    >>> admission_tokens(1024, 1024)[1], round(admission_tokens(1024, 1024)[0], 3)  # 0.098 x 512
    (2048, 50.176)
    >>> admission_tokens(1024, 8192)[1], round(admission_tokens(1024, 8192)[0], 3)  # 0.098 x (4,096 - 1,024)
    (5120, 301.056)
    """
    clip = CLIP_MAX_NEW_TOKENS
    mean_left = output_tokens / 2 if output_tokens <= clip else clip - clip * clip / (2 * output_tokens)
    return new_token_ratio_floor() * mean_left, prompt_tokens + min(output_tokens, clip)


def admitted_requests(capacity: float, per_running: float, next_request: float) -> int:
    """The requests running once SGLang's admission stops: it starts one more while ``per_running`` for each running
    one and ``next_request`` for the newcomer stay below ``capacity`` (``add_one_req`` refuses at
    ``total_tokens >= rem_total_tokens``), so as many as there are ``n >= 0`` with
    ``n x per_running + next_request < capacity``: ``ceil((capacity - next_request) / per_running)``, none where the
    newcomer alone does not fit. The three in one unit (tokens, or bytes a GPU).

    >>> admitted_requests(100, 10, 31), admitted_requests(100, 10, 30), admitted_requests(30, 10, 31)
    (7, 7, 0)
    """
    room = capacity - next_request
    return math.ceil(room / per_running) if room > 0 else 0
