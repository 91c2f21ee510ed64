"""How the engine of a measured serving row was sized where the row does not state it: the batch and tokens a step
``trtllm-bench`` gave TensorRT-LLM's engine, the weights a GPU held beyond TP's share under TensorRT-LLM's attention
data parallelism, and which engine a row ran on. Pure functions of a model and a row; :mod:`.runs` plans the rows
with them."""

from __future__ import annotations

import math
from typing import Any

from anchorgpu.architectures.spec import ModelSpec

__all__ = ["TRTLLM_BENCH_BYTES_PER_VALUE", "attention_dp_extra_weights_bytes", "row_engine", "trtllm_bench_engine",
           "trtllm_bench_limits"]


TRTLLM_BENCH_BYTES_PER_VALUE = {"fp8": 1.0, "nvfp4": 0.5, "bf16": 2.0, "fp16": 2.0}


def trtllm_bench_limits(model: ModelSpec, gpu_memory_bytes: float, *, tp: int, pp: int, weights: str, kv_cache: str,
                        prompt_tokens: int, output_tokens: int, kv_fraction: float = 0.95,
                        chunked_prefill: bool = False) -> tuple[int, int]:
    """(max batch size, max tokens per step) that ``trtllm-bench throughput`` gives the engine when the run
    leaves them unset, as TensorRT-LLM's ``tensorrt_llm/bench/build/tuning.py`` (``calc_engine_setting`` and
    ``finetune_setting``) computes them: the requests whose prompt plus output fit the KV cache it estimates
    (every GPU's memory less the parameters at the checkpoint's bytes per value, times the KV fraction), capped
    at 4,096 and rounded up ("slightly optimistic": at run time its scheduler admits what the cache really
    holds); tokens per step that batch times ``1 + I/O``, capped at 32,768 and rounded up. With chunked prefill off
    (trtllm-bench's default, and the perf-overview page's commands leave it off) ``get_settings``
    (``tensorrt_llm/bench/benchmark/utils/general.py``, NVIDIA/TensorRT-LLM@0171265e) then raises the tokens a step
    to at least the dataset's longest prompt plus that batch, so a whole prompt runs in one step (the page's
    datasets have a prompt stdev of 0: the longest prompt is ``prompt_tokens``).

    >>> from anchorgpu.architectures import load_model
    >>> trtllm_bench_limits(load_model("llama-3.1-8b"), 80 * 2**30, tp=1, pp=1, weights="fp8", kv_cache="fp8",
    ...                     prompt_tokens=128, output_tokens=128)
    (4096, 8192)
    >>> [trtllm_bench_limits(load_model("llama-3.1-8b"), 80 * 2**30, tp=1, pp=1, weights="fp8", kv_cache="fp8",
    ...                      prompt_tokens=20000, output_tokens=2000, chunked_prefill=chunked) for chunked in (True, False)]
    [(64, 2048), (64, 20064)]
    """
    per_value = TRTLLM_BENCH_BYTES_PER_VALUE
    kv_heads = max(tp, model.num_kv_heads)
    bytes_per_token = 2 * model.num_layers * kv_heads * model.head_dim * per_value.get(kv_cache, 2.0)
    free = gpu_memory_bytes * tp * pp - model.params_total * per_value.get(weights, 2.0)
    requests = free * kv_fraction / (bytes_per_token * (prompt_tokens + output_tokens))
    raw_bs = min(requests, 4096) / pp
    raw_tokens = min(raw_bs * (1 + prompt_tokens / output_tokens), 32768)
    batch = _round_up(raw_bs, floor=64, steps=((256, 32), (1024, 128), (math.inf, 256)))
    tokens = _round_up(raw_tokens, floor=2048, steps=((4096, 256), (8192, 512), (math.inf, 1024)))
    return batch, tokens if chunked_prefill else max(tokens, prompt_tokens + batch)


def _round_up(value: float, *, floor: int, steps: tuple[tuple[float, int], ...]) -> int:
    """``value`` rounded up to the step of the first tier it is below, at least ``floor`` (finetune_setting's
    rule for both settings)."""
    step = next(size for below, size in steps if value < below)
    return max(floor, step * math.ceil(value / step))



def row_engine(r: dict[str, Any]) -> str | None:
    """The serving engine a serving row ran on: its ``engine``, else TensorRT-LLM's where its benchmark sized the
    engine (``engine_limits: trtllm-bench``), the row sizes the KV cache as TensorRT-LLM does (``kv_free_fraction``)
    or its set is a TensorRT-LLM one, else vLLM's for a vLLM set; None where no source says."""
    if "engine" in r:
        return str(r["engine"])
    name = str(r.get("set", "core"))
    if r.get("engine_limits") == "trtllm-bench" or "kv_free_fraction" in r or name.startswith("trtllm"):
        return "trtllm"
    return "vllm" if name.startswith("vllm") else None


def trtllm_bench_engine(model: ModelSpec, gpu_memory_bytes: float, r: dict[str, Any]) -> tuple[int, int]:
    """(sequences a rank runs, tokens a step) of a row whose engine ``trtllm-bench`` sized from its ``--tp`` and
    ``--pp`` (:func:`trtllm_bench_limits`: a batch per micro-batch, so ``pp`` of them in flight)."""
    pp = int(r.get("pp", 1))
    per_micro, max_tokens = trtllm_bench_limits(
        model, gpu_memory_bytes, tp=r["tp"], pp=pp, weights=r["weights"], kv_cache=r["kv_cache"],
        prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"])
    return per_micro * pp, max_tokens


def trtllm_bench_graph_sizes(model: ModelSpec, gpu_memory_bytes: float, r: dict[str, Any],
                             sizes: tuple[int, ...]) -> tuple[int, ...]:
    """The decode CUDA graphs an engine ``trtllm-bench`` sized captures of the listed ``sizes`` (padding on, as the
    page's ``cuda_graph_config`` sets it): those up to ``min(max_batch_size, max_num_tokens)`` and that cap itself
    where a listed size is above it (NVIDIA/TensorRT-LLM ``tensorrt_llm/_torch/pyexecutor/model_engine.py``,
    ``_filter_cuda_graph_batch_sizes``, called with the engine's ``batch_size`` and ``max_num_tokens``; a batch over
    the last runs eagerly, ``_get_padded_batch``). ``max_batch_size`` is a micro-batch's (:func:`trtllm_bench_limits`).
    On a row that ran attention DP (``attention_dp_weights``, timed as TP) each rank pads its own batch
    (``_get_padded_batch``: every rank to the largest rank's), so the group's padded batch is ``tp`` times a rank's.

    >>> from anchorgpu.architectures import load_model
    >>> ladder = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192)
    >>> row = {"tp": 8, "pp": 1, "weights": "fp8", "kv_cache": "fp8", "prompt_tokens": 128, "output_tokens": 2048}
    >>> trtllm_bench_graph_sizes(load_model("llama-3.1-405b"), 141 * 2**30, row, ladder)[-3:]  # H200: cap 1,536
    (512, 1024, 1536)
    """
    per_micro, max_tokens = trtllm_bench_engine(model, gpu_memory_bytes, r)
    cap = min(per_micro // int(r.get("pp", 1)), max_tokens)
    kept = tuple(x for x in sorted(sizes) if x <= cap)
    if max(sizes) > cap and (not kept or kept[-1] != cap):
        kept += (cap,)
    ranks = int(r["tp"]) if r.get("attention_dp_weights") else 1
    return tuple(ranks * x for x in kept)


def attention_dp_extra_weights_bytes(model: ModelSpec, weights: str, *, tp: int, pp: int, ep: int) -> int:
    """Weight bytes one GPU holds beyond its share under TP of every layer when TensorRT-LLM ran attention data
    parallelism over the ``tp`` GPUs instead (``enable_attention_dp``): the routed experts are still split over them,
    but the rest is whole on each: attention (``tensorrt_llm/_torch/modules/attention.py``: ``tp_size = 1`` under
    attention DP), the LM head (``models/modeling_utils.py``: an unsplit ``LMHead``), and in Llama 4 the dense MLP
    layers and the shared expert (``models/modeling_llama.py``: ``overridden_tp_size=1``). That is the layout
    ``--tp 1 --ep tp*ep`` holds (:func:`~anchorgpu.planner.terms.split_weights_bytes`), less the TP layout's share.

    >>> from anchorgpu.architectures import load_model
    >>> round(attention_dp_extra_weights_bytes(load_model("llama-4-maverick-17b-128e-fp8"), "fp8", tp=8, pp=1,
    ...                                        ep=1) / 2**30, 1)
    13.2
    """
    from anchorgpu.planner.formats import format_for_model
    from anchorgpu.planner.terms import split_weights_bytes

    fmt = format_for_model(model, weights)
    held, _ = split_weights_bytes(model, fmt, 1, pp, tp * ep)
    share, _ = split_weights_bytes(model, fmt, tp, pp, ep)
    return held - share


