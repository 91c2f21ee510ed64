"""What the A100 gpt-oss rows of ``vllm-gpustack-moe`` would read under a slower prompt attention (stop 62, helper
``ossa100``; benchmarks/hardening/stop62_ossa100.md). Dev tooling: changes no constant, writes nothing.

vLLM 0.11.0 runs gpt-oss (attention sinks) on compute capability 8.x with its Triton unified attention
(``TRITON_ATTN``; vllm/platforms/cuda.py ``get_attn_backend_cls``: ``if (has_sink or use_fp8_kv_cache) and not
cls.is_device_capability(90): return TRITON_ATTN``), for which no measured A100 rate is published. This prints each
row's error with the planner's prompt-attention rate times ``r`` on these rows (and, separately, with every
sliding-window layer charged the full causal prefix, as a kernel without sliding-window tile pruning would), then the
``r`` at which each long-prompt row's error is zero. Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/gptoss_a100_attention_whatif.py
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from anchorgpu.planner.speed import attention_rate, burst, burst_mix, serving
from anchorgpu.planner.speed import runs as runs_mod
from anchorgpu.planner.speed import step_constants as sc
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import attention_flops_per_token

ROWS = ("VGM-OSS20-A100-32K", "VGM-OSS20-A100-4K", "VGM-OSS20-A100-2K", "VGM-OSS20-A100-128", "VGM-OSS20-A100-SG",
        "VGM-OSS120-A100-32K", "VGM-OSS120-A100-4K", "VGM-OSS120-A100-2K", "VGM-OSS120-A100-128",
        "VGM-OSS120-A100-SG", "VGM-OSS120-A100-C4")
LONG = ("VGM-OSS20-A100-32K", "VGM-OSS20-A100-4K", "VGM-OSS20-A100-2K", "VGM-OSS120-A100-32K")
UNPRUNED = -1.0  # a window_extra_tokens no calibration holds: marks "every window layer costs the full prefix"
_BUILD = sc._build
_TIMED = attention_rate.timed_prefill_attention_flops_per_token


def _timed(model: Any, context_tokens: int, window_extra_tokens: float) -> float:
    if window_extra_tokens == UNPRUNED:
        return attention_flops_per_token(dataclasses.replace(model, layer_windows=None), context_tokens, causal=True)
    return _TIMED(model, context_tokens, window_extra_tokens)


def _patched(scale: float, unpruned: bool) -> Callable[..., Any]:
    def build(model: Any, gpu: Any, setup: Any, cal: Any, ideal: bool) -> Any:
        k = _BUILD(model, gpu, setup, cal, ideal)
        if ideal or gpu.compute_capability != "8.0":
            return k
        return dataclasses.replace(k, attention_rate=k.attention_rate * scale,
                                   window_extra_tokens=UNPRUNED if unpruned else k.window_extra_tokens)
    return build


def _error(run: Any, scale: float, unpruned: bool) -> float:
    sc._build = _patched(scale, unpruned)
    sc._STEP_MEMO.clear()
    return runs_mod.predict(run, calibration()) / run.value - 1.0


def main() -> None:
    for module in (burst, burst_mix, serving):
        module.timed_prefill_attention_flops_per_token = _timed  # type: ignore[attr-defined]
    runs = {r.id: r for r in runs_mod.load_runs()}
    for label, scale, unpruned in (("as planned", 1.0, False), ("windows unpruned", 1.0, True),
                                   ("r 0.5", 0.5, False), ("r 0.5, unpruned", 0.5, True), ("r 0.25", 0.25, False)):
        cells = [f"{i.removeprefix('VGM-')} {100 * _error(runs[i], scale, unpruned):+.1f}%" for i in ROWS]
        print(f"{label:<17}" + " | ".join(cells))
    print("r at which the row's error is zero (the planned A100 rate: 312 TFLOP/s x attention_efficiency 0.5):")
    for i in LONG:
        lo, hi = 0.02, 1.0
        for _ in range(30):
            mid = (lo * hi) ** 0.5
            lo, hi = (lo, mid) if _error(runs[i], mid, False) > 0 else (mid, hi)
        print(f"  {i}: r {mid:.3f}, {mid * 156:.0f} TFLOP/s")
    sc._build = _BUILD
    sc._STEP_MEMO.clear()


if __name__ == "__main__":
    main()
