"""How fast a fused attention kernel runs beyond the one ``attention_efficiency``: by head size, and what a
sliding-window layer costs beyond its window. Both are measured, not fitted (``stated`` in calibration.json):

* **Head size.** ``attention_efficiency`` is a kernel's rate at head dimension 128. At 64 the same kernels run at
  about three quarters of it on Hopper and three fifths on Blackwell (one exponential per score bounds them, not
  the products, which halve); at 256 a little faster. ``stated.attention_head_dim_rate`` holds those ratios by CUDA
  compute capability major version, read from AIConfigurator's measured context-attention tables; a head size
  between two measured ones takes the straight line between them, one outside the range the nearest end, a GPU
  family absent 1.0. Multi-head latent attention takes the mean of its query-key and value dimensions. Applied
  since stop 52 modelled TensorRT-LLM's attention-DP balance; before that it lost two held-out TensorRT-LLM rows
  (benchmarks/moe_training_findings.md, benchmarks/trtllm_gptoss_findings.md).
* **The GPU, in training.** The family curve gives B200, GB200, B300 and GB300 one rate at a head size (one
  compute-capability major, 10), yet the measured kernels differ by GPU: at training's shapes GB200 reaches 0.87 of
  Hopper's share of the BF16 peak at head size 128 and 0.66 at 64, GB300 1.08 and 0.85 (Blackwell Ultra doubles the
  softmax's exponential throughput). Training's fused attention on a GPU with its own figures
  (``stated.train_attention_hopper_ratio``) takes Hopper's head-size curve times that GPU's measured ratio to Hopper at
  the head size (:func:`train_attention_rate_ratio`); serving keeps the family curve.
* **Windows.** A sliding-window layer's kernel costs, per query, its window's pairs plus
  ``stated.window_attention_extra_tokens`` more (the per-query-tile work a full-length layer spreads over thousands
  of key tiles: loading the queries, the softmax's rescaling, writing the output): measured as the same
  ~670 tokens at windows of 128 and 1,024.
* **TensorRT-LLM's context attention.** Where TensorRT-LLM runs a prompt's attention as its own kernel
  (``engine_terms.prompt_attention_apart``) with an FP8 KV cache, the prompt's causal pairs run at
  ``stated.trtllm_context_attention_peak_share`` (R) of the BF16 peak and each query costs
  ``stated.trtllm_context_attention_extra_pairs`` (E) more key pairs: a prompt of ``I`` tokens at
  ``R (I / 2) / (I / 2 + E)`` of the peak, read from AIConfigurator 0.12.0's measured context-attention tables
  (:func:`trtllm_prompt_attention_peak_share`).

Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping

from anchorgpu.architectures import ModelSpec
from anchorgpu.hardware import GpuSpec
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import attention_dims, attention_flops_per_token

__all__ = ["attention_rate_ratio", "head_dim_rate_ratio", "prompt_extra_pairs_factor", "timed_prefill_attention_flops_per_token",
           "train_attention_rate_ratio", "trtllm_context_attention", "trtllm_prompt_attention_peak_share"]


def head_dim_rate_ratio(ratios: Mapping[int, float], head_dim: float) -> float:
    """The attention rate at ``head_dim`` over that at 128, on the straight line between the measured head sizes
    ``ratios`` holds (clamped to its ends; empty: 1.0).

    >>> head_dim_rate_ratio({64: 0.6, 128: 1.0, 256: 1.1}, 96)
    0.8
    >>> head_dim_rate_ratio({64: 0.6, 128: 1.0}, 32), head_dim_rate_ratio({}, 64)
    (0.6, 1.0)
    """
    if not ratios:
        return 1.0
    dims = sorted(ratios)
    if head_dim <= dims[0]:
        return ratios[dims[0]]
    for low, high in zip(dims, dims[1:], strict=False):
        if head_dim <= high:
            share = (head_dim - low) / (high - low)
            return ratios[low] + share * (ratios[high] - ratios[low])
    return ratios[dims[-1]]


def attention_rate_ratio(model: ModelSpec, gpu: GpuSpec, cal: Calibration) -> float:
    """The rate ``model``'s fused attention reaches on ``gpu`` over ``attention_efficiency``'s (head dimension 128):
    ``cal.attention_head_dim_rate`` of the GPU's compute capability major version at the model's head size.

    >>> from dataclasses import replace
    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> attention_rate_ratio(toy_model(), toy_gpu(), calibration())  # the toy: head dim 64 on a Hopper part
    0.766
    >>> attention_rate_ratio(toy_model(), toy_gpu(), replace(calibration(), attention_head_dim_rate={}))
    1.0
    >>> attention_rate_ratio(toy_model(), toy_gpu(), replace(calibration(), attention_head_dim_rate={"9": {64: 0.77}}))
    0.77
    """
    major = (gpu.compute_capability or "").rstrip("?").split(".")[0]
    ratios = cal.attention_head_dim_rate.get(major) if gpu.vendor == "NVIDIA" else None
    if not ratios:
        return 1.0
    d_qk, d_v = attention_dims(model)
    return head_dim_rate_ratio(ratios, (d_qk + d_v) / 2.0)


def train_attention_rate_ratio(model: ModelSpec, gpu: GpuSpec, cal: Calibration) -> float:
    """The rate ``model``'s fused training attention reaches on ``gpu`` over ``attention_efficiency``'s: on a GPU
    ``cal.train_attention_hopper_ratio`` states, the reference family's head-size curve
    (``cal.attention_head_dim_rate[cal.train_attention_reference]``, Hopper's) times the GPU's measured ratio to that
    family at the model's head size, both on the straight line between their stated head sizes; elsewhere
    :func:`attention_rate_ratio` (the GPU's own family curve).

    >>> from anchorgpu.architectures import load_model
    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> cal, oss = calibration(), load_model("gpt-oss-120b")  # head size 64
    >>> [round(train_attention_rate_ratio(oss, get_gpu(g), cal), 3) for g in ("gb200", "gb300", "h100")]
    [0.506, 0.653, 0.766]
    >>> round(attention_rate_ratio(oss, get_gpu("gb200"), cal), 3)  # the family curve, serving's: both alike
    0.609
    """
    by_dim = cal.train_attention_hopper_ratio.get(gpu.name) if gpu.vendor == "NVIDIA" else None
    reference = cal.attention_head_dim_rate.get(cal.train_attention_reference)
    if not by_dim or not reference:
        return attention_rate_ratio(model, gpu, cal)
    d_qk, d_v = attention_dims(model)
    head_dim = (d_qk + d_v) / 2.0
    return head_dim_rate_ratio(reference, head_dim) * head_dim_rate_ratio(by_dim, head_dim)


def timed_prefill_attention_flops_per_token(model: ModelSpec, context_tokens: int, window_extra_tokens: float) -> float:
    """Causal attention FLOPs a token of a ``context_tokens`` sequence is timed at: each sliding-window layer
    shorter than the sequence charged ``window_extra_tokens`` more pairs a query (the FLOP count for MFU is
    :func:`~anchorgpu.planner.speed.flops.attention_flops_per_token`'s, unchanged).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> m = toy_model()  # no windows: the FLOP count
    >>> timed_prefill_attention_flops_per_token(m, 100, 670.0) == attention_flops_per_token(m, 100, causal=True)
    True
    """
    return attention_flops_per_token(model, context_tokens, causal=True, window_extra_tokens=window_extra_tokens)


def trtllm_context_attention(gpu: GpuSpec, cal: Calibration, *, apart: bool, kv_fp8: bool) -> tuple[float, float] | None:
    """TensorRT-LLM's context attention kernel's measured (R, E) on ``gpu``: the share of the BF16 peak its causal
    pairs run at and the extra key pairs a query costs (``cal.trtllm_context_attention_peak_share`` and
    ``..._extra_pairs`` by CUDA compute capability; AIConfigurator 0.12.0's
    ``systems/data/<gpu>/attention/trtllm/1.3.0rc20/context_attention_perf.parquet``, FP8 attention and FP8 KV cache),
    where they apply: the prompt's attention timed as a kernel of its own (``apart``: TensorRT-LLM) over an FP8 KV
    cache, on a GPU family with a figure. None elsewhere: the prompt's arithmetic at ``attention_efficiency``.

    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> from anchorgpu.planner.speed.calibration import calibration
    >>> trtllm_context_attention(toy_gpu(), calibration(), apart=True, kv_fp8=True)  # the toy: a Hopper part
    (0.806, 820.0)
    >>> trtllm_context_attention(toy_gpu(), calibration(), apart=True, kv_fp8=False) is None
    True
    """
    if not apart or not kv_fp8 or gpu.vendor != "NVIDIA":
        return None
    cc = (gpu.compute_capability or "").rstrip("?")
    share = cal.trtllm_context_attention_peak_share.get(cc)
    if not share:
        return None
    return share, cal.trtllm_context_attention_extra_pairs.get(cc, 0.0)


def prompt_extra_pairs_factor(extra_pairs: float, prompt_tokens: int) -> float:
    """The timed FLOPs of a ``prompt_tokens`` prompt's causal attention over its causal FLOPs when each query costs
    ``extra_pairs`` key pairs more than its mean ``I / 2``: ``1 + 2 E / I`` (1.0 without extra pairs or a length).

    >>> prompt_extra_pairs_factor(1000.0, 2000), prompt_extra_pairs_factor(0.0, 2000), prompt_extra_pairs_factor(9.0, 0)
    (2.0, 1.0, 1.0)
    """
    if not extra_pairs or prompt_tokens < 1:
        return 1.0
    return 1.0 + 2.0 * extra_pairs / prompt_tokens


def trtllm_prompt_attention_peak_share(peak_share: float, extra_pairs: float, prompt_tokens: int) -> float:
    """The share of the BF16 peak TensorRT-LLM's context attention reaches on a ``prompt_tokens`` prompt:
    ``R (I / 2) / (I / 2 + E)`` with ``R`` = ``peak_share`` and ``E`` = ``extra_pairs``
    (:func:`trtllm_context_attention`), i.e. ``R`` over :func:`prompt_extra_pairs_factor`.

    >>> round(trtllm_prompt_attention_peak_share(0.806, 820.0, 20000), 3)  # Hopper, a 20,000-token prompt
    0.745
    """
    return peak_share / prompt_extra_pairs_factor(extra_pairs, prompt_tokens)
