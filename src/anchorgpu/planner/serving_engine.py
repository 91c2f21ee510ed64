"""A serving engine's settings and what it holds on one GPU before any request: its batch limits and the assumption
that states them (vLLM V1, TensorRT-LLM with ``engine="trtllm"``, SGLang with ``engine="sglang"``), the weights,
activation peak and non-torch memory, and the budget and KV-cache capacity left under ``gpu_memory_utilization``
(TensorRT-LLM: that fraction of the memory free after its profiling pass; SGLang: ``mem_fraction_static`` of the
memory free at start holds the weights and the KV pool). Depends on the layout and the engine's settings, never on the
request's sizes; :mod:`~anchorgpu.planner.inference` plans the requests on it. Pure; split from
:mod:`anchorgpu.planner.inference`."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache, lru_cache, partial
from importlib import resources

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.engine_limits import block_size_of, engine_limits, engine_limits_on
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.inputs import DEFAULT_GPU_MEMORY_UTILIZATION, Engine, Overheads, Workload
from anchorgpu.planner.sglang import SglangSettings, sglang_gpu_memory_bytes, sglang_settings
from anchorgpu.planner.terms import context_bytes, split_weights_bytes

__all__ = ["EngineMemory", "engine_defaults", "engine_line", "engine_memory", "engine_rope_table_bytes",
           "sglang_start_free"]


@cache
def _rope_bytes_per_value() -> dict[str, int]:
    data = json.loads(resources.files("anchorgpu.planner").joinpath("data/rope_tables.json").read_text("utf-8"))
    return {engine: int(e["bytes_per_value"]) for engine, e in data["engines"].items()}


def engine_rope_table_bytes(model: ModelSpec, engine: str) -> int:
    """The RoPE cos/sin table ``engine`` holds on every GPU before it sizes the KV cache
    (:func:`~anchorgpu.planner.memory.rope_table_bytes` at the engine's dtype, ``data/rope_tables.json``: TensorRT-LLM
    float32, vLLM 16-bit); 0 for an engine whose table was not read (SGLang).

    >>> from anchorgpu.architectures import load_model
    >>> scout = load_model("llama-4-scout-17b-16e")
    >>> [engine_rope_table_bytes(scout, e) / 2**30 for e in ("trtllm", "vllm", "sglang")]
    [5.0, 2.5, 0.0]
    """
    per_value = _rope_bytes_per_value().get(engine)
    return 0 if per_value is None else mm.rope_table_bytes(model, bytes_per_value=per_value)


def engine_defaults(gpu: GpuSpec | None, workload: Workload, assumptions: list[str]) -> tuple[int, int]:
    """vLLM V1 defaults for the OpenAI server: 8,192 batched tokens and 1,024 sequences on GPUs with at
    least 70 GiB but the A100 (:func:`~anchorgpu.planner.engine_limits.large_engine_defaults`), else 2,048 and 256 (vLLM
    ``arg_utils._set_default_args``)."""
    tokens, seqs = engine_limits_on(workload, gpu)
    assumptions.append(engine_line(workload.engine, tokens, seqs,
                                    workload.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
                                    block_size_of(workload)))
    return tokens, seqs


@lru_cache(maxsize=256, typed=True)  # typed: 1 and 1.0 print differently
def engine_line(engine: str, tokens: int, seqs: int, utilization: float, block: int) -> str:
    """The serving-engine assumption: the engine's settings, nearly always its defaults, so a few lines recur
    across every model, GPU and request size (memoised, like the runtime-overhead line of training)."""
    if engine == "trtllm":
        return said("Serving engine sized like TensorRT-LLM (trtllm-serve, PyTorch backend): max_num_tokens {tokens}, "
                    "max_batch_size {seqs}, free_gpu_memory_fraction {utilization}: the KV cache takes that share of "
                    "the memory left free once the weights and its profiling pass's peak (a step of max_num_tokens "
                    "prompt tokens) are in place; GUARANTEED_NO_EVICT admits a request only when its prompt and "
                    "output fit.", tokens=tokens, seqs=seqs, utilization=utilization)
    return said("Serving engine sized like vLLM: max_num_batched_tokens {tokens}, max_num_seqs {seqs}, "
                "gpu_memory_utilization {utilization}, KV block {block} tokens.", tokens=tokens, seqs=seqs,
                utilization=utilization, block=block)


@lru_cache(maxsize=256)
def _sglang_line(s: SglangSettings, given_seqs: bool, reads: str = "the GPU's memory") -> str:
    """The serving-engine assumption under SGLang: its settings, derived or given (``reads``: the GPU memory its
    tiers and fraction divide by, :func:`_sglang_reads`)."""
    fraction = (f"mem_fraction_static {s.mem_fraction_static:g} (SGLang's default for this GPU and layout: 1 - a "
                f"{s.reserve_mib:,.0f} MiB reserve for activations and CUDA graphs over {reads})" if s.derived
                else f"mem_fraction_static {s.mem_fraction_static:g} (given)")
    seqs = "max_running_requests as given" if given_seqs else ("max_running_requests its default: half the KV pool's "
                                                                "tokens, at most its request pool")
    return (f"Serving engine sized like SGLang: {fraction} of the memory free at start holds the weights and the KV "
            f"pool; chunked_prefill_size {s.chunked_prefill_size}, cuda_graph_max_bs {s.cuda_graph_max_bs}, "
            f"{seqs}; KV pool in one-token slots (page_size 1).")


def _sglang_reads(gpu: GpuSpec | None) -> str:
    """The GPU memory SGLang's tiers and ``mem_fraction_static`` divide by, in words: nvidia-smi's total where the
    catalog sources it (rocminfo's on AMD), else the runtime total the plan budgets against, said so."""
    if gpu is None:
        return "the GPU's memory"
    if gpu.memory_smi_mib is not None:
        tool = "rocminfo" if gpu.vendor == "AMD" else "nvidia-smi"
        return f"the {gpu.memory_smi_mib:,} MiB {tool} reports"
    mib = f"{gpu.memory_bytes / 2**20:,.0f} MiB"
    total = (f"the {mib} the {gpu.runtime_name} runtime reports" if gpu.memory_is_runtime
             else f"the vendor's {mib}")
    return f"{total} (no {'rocminfo' if gpu.vendor == 'AMD' else 'nvidia-smi'} total sourced for {gpu.name})"


def _engine_footprint(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int,
                      ep: int, tokens: int, seqs: int, engine: str = "vllm") -> tuple[int, int, int, int, dict[str, int]]:
    """What the engine holds on one GPU before any request: (weights, the prefill activation peak, the sampler's
    logits, non-torch memory, and their terms of the breakdown in order, the CUDA context's last). It depends on
    the (frozen) model, weight format, GPU and overheads, the split and the engine's batch limits only: memoised
    on them (through :func:`engine_memory`), so every request shape served by that engine shares it. The terms are
    shared: copy them.
    TensorRT-LLM's profiling pass runs context requests only (no sampler warm-up over a full batch), so its
    sampler term is 0; SGLang profiles no step at all (its reserve is a rule), so its is 0 too. The engine's RoPE
    table (:func:`engine_rope_table_bytes`) is built at load, before the KV cache is sized: it is counted with the
    non-torch memory (one term of the breakdown of its own)."""
    weights, weight_terms = split_weights_bytes(model, fmt, tp, pp, ep)
    prefill = mm.prefill_activation_bytes(model, tokens=tokens, tp=tp)
    sampler = (0 if engine != "vllm" else  # SGLang profiles no sampler: its reserve covers the step's logits
               mm.sampler_activation_bytes(sequences=min(tokens, seqs), vocab=model.vocab_size))
    rope = engine_rope_table_bytes(model, engine)
    non_torch = (ov.serving_non_torch_tp1_bytes if tp * pp == 1 else ov.serving_non_torch_multi_bytes) + rope
    terms = {**weight_terms, "prefill_activation_bytes": prefill, "sampler_logits_bytes": sampler,
             "non_torch_bytes": non_torch - rope, "rope_table_bytes": rope,
             "cuda_context_outside_budget_bytes": context_bytes(gpu, ov)}
    return weights, prefill, sampler, non_torch, terms


@dataclass(frozen=True, slots=True)
class EngineMemory:
    """What a serving engine holds on one GPU before any request, and what it leaves for the KV cache: the part of a
    serving plan's memory that depends on the (frozen) model, weight format, GPU and overheads, the split and the
    engine's settings only (:func:`engine_memory`), never on the request's sizes."""

    tokens: int  # max_num_batched_tokens (TensorRT-LLM: max_num_tokens; SGLang: chunked_prefill_size) as planned
    seqs: int  # max_num_seqs (max_batch_size; SGLang: max_running_requests given, else its request pool's most)
    line: str  # the serving-engine assumption
    weights: int
    prefill: int  # the profiled prefill activation peak
    sampler: int  # the sampler's logits (0 under TensorRT-LLM)
    non_torch: int
    terms: dict[str, int]  # their terms of the breakdown in order, the CUDA context's last (shared: copy them)
    budget: int | None  # the engine's budget and the KV cache's capacity in it; None without a GPU
    capacity: int | None
    utilization: float  # gpu_memory_utilization as planned (SGLang: mem_fraction_static, given or derived)
    sglang: SglangSettings | None  # SGLang's start-up settings; None for the other engines


@partial(memo_on_frozen, frozen=4)
def engine_memory(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int, ep: int,
                  engine: Engine, max_tokens: int | None, max_seqs: int | None, utilization: float | None,
                  utilization_type: type, block: int, dp_attention: int = 0) -> EngineMemory:
    """The :class:`EngineMemory` of a layout: the engine's limits (:func:`engine_defaults`) and footprint
    (:func:`_engine_footprint`), its budget under ``gpu_memory_utilization`` and the capacity left for the KV cache.
    Memoised on the frozen four by identity and the plain values after them (``utilization_type``: 1 and 1.0 print
    differently in the assumption), so every request served by that engine on that layout shares it.
    ``utilization`` None takes the engine's default: 0.9, or SGLang's derived ``mem_fraction_static``
    (:func:`~anchorgpu.planner.sglang.sglang_settings`, ``dp_attention`` its dp_size under attention data parallelism).
    Under SGLang the budget is the weights, activations and non-torch memory plus the KV pool: ``mem_fraction_static``
    of the memory free at start (the CUDA context and non-torch memory taken) less the weights
    (``profile_max_num_token``); the activations and CUDA graphs live in the rest."""
    if engine == "sglang":
        return _sglang_memory(model, fmt, gpu, ov, tp, pp, ep, max_tokens, max_seqs, utilization, block, dp_attention)
    utilization = utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    probe = Workload(engine=engine, max_num_batched_tokens=max_tokens, max_num_seqs=max_seqs,
                     gpu_memory_utilization=utilization, block_size_tokens=block)
    line: list[str] = []
    tokens, seqs = engine_defaults(gpu, probe, line)
    weights, prefill, sampler, non_torch, terms = _engine_footprint(model, fmt, gpu, ov, tp, pp, ep, tokens, seqs,
                                                                    engine)
    budget = capacity = None
    if gpu is not None:
        used = weights + prefill + sampler + non_torch
        if engine == "trtllm":  # a share of what its profiling pass leaves free, the CUDA context counted
            free = gpu.memory_bytes - terms["cuda_context_outside_budget_bytes"]
            capacity = int(utilization * (free - used))
            budget = min(used + capacity, free)  # never past the memory free at start (a peak past it: short by that)
        else:
            budget = math.ceil(gpu.memory_bytes * utilization)
            capacity = budget - used
    return EngineMemory(tokens, seqs, line[0], weights, prefill, sampler, non_torch, terms, budget, capacity,
                        utilization, None)


def _sglang_memory(model: ModelSpec, fmt: WeightFormat, gpu: GpuSpec | None, ov: Overheads, tp: int, pp: int, ep: int,
                   max_tokens: int | None, max_seqs: int | None, utilization: float | None, block: int,
                   dp_attention: int) -> EngineMemory:
    """:func:`engine_memory` under SGLang (its sequence cap before the KV pool is sized: the request pool's most)."""
    s = sglang_settings(sglang_gpu_memory_bytes(gpu), tp=tp * dp_attention if dp_attention else tp,
                        pp=pp, chunked_prefill_size=max_tokens, mla=model.mla is not None, dp_attention=dp_attention,
                        mem_fraction_static=utilization)
    _, seqs = engine_limits(Workload(engine="sglang", max_num_seqs=max_seqs), large_gpu=True)
    weights, prefill, sampler, non_torch, terms = _engine_footprint(model, fmt, gpu, ov, tp, pp, ep,
                                                                    s.chunked_prefill_size, seqs, "sglang")
    budget = capacity = None
    if gpu is not None:
        used = weights + prefill + sampler + non_torch
        start_free = _start_free(gpu, terms["cuda_context_outside_budget_bytes"], non_torch)
        capacity = int(s.mem_fraction_static * start_free) - weights
        budget = used + capacity  # weights above the fraction's share leave a budget below them: short by the excess
    return EngineMemory(s.chunked_prefill_size, seqs, _sglang_line(s, max_seqs is not None, _sglang_reads(gpu)),
                        weights, prefill, sampler, non_torch, terms, budget, capacity, s.mem_fraction_static, s)


def _start_free(gpu: GpuSpec, context_bytes: int, non_torch_bytes: int) -> int:
    """The memory free at SGLang's start on ``gpu``: its total less the CUDA context and non-torch memory (NCCL), of
    which ``mem_fraction_static`` holds the weights and the KV pool."""
    return gpu.memory_bytes - context_bytes - non_torch_bytes


def sglang_start_free(em: EngineMemory, gpu: GpuSpec) -> int:
    """:func:`_start_free` of a plan's engine memory."""
    return _start_free(gpu, em.terms["cuda_context_outside_budget_bytes"], em.non_torch)
