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
* **Windows.** A sliding-window layer's kernel costs, per query, its window's pairs plus
  ``stated.window_attention_extra_tokens`` more (the per-query-tile work a full-length layer spreads over thousands
  of key tiles: loading the queries, the softmax's rescaling, writing the output): measured as the same
  ~670 tokens at windows of 128 and 1,024.

Pure; stdlib only.
"""

from __future__ import annotations

from collections.abc import Mapping

from anchorgpu.architectures import ModelSpec
from anchorgpu.hardware import GpuSpec
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import attention_dims, attention_flops_per_token

__all__ = ["attention_rate_ratio", "head_dim_rate_ratio", "timed_prefill_attention_flops_per_token"]


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
