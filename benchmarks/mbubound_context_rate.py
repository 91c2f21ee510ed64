"""TensorRT-LLM's context (prompt) attention rate by prompt length, from AIConfigurator 0.12.0's measured tables
(benchmarks/moe_small_batch_findings.md, "Stop 54 (branch mbubound)"). Dev tooling; changes no constant, writes
nothing. Run with the AIConfigurator venv (pandas):

    benchmarks/.aic-venv/bin/python benchmarks/mbubound_context_rate.py          # the two-term fit per GPU
    benchmarks/.aic-venv/bin/python benchmarks/mbubound_context_rate.py table    # the medians by length

``context_attention_perf.parquet`` (trtllm 1.3.0rc20, torch_flow), head dim 128, no window, at most 8 KV heads, cells
with batch x isl >= 16,384 and isl >= 512: causal FLOPs (``4 b h d isl (isl + 1) / 2``) over the latency over the
GPU's BF16 dense peak, median by isl. The medians follow ``1 / rate = 1 / R + c / isl`` within 1-2% from 512 to
16,384 tokens: the kernel runs its causal pairs at ``R`` of the BF16 peak and pays ``E = c R / 2`` more key pairs
a query (the per-query work a long sequence spreads over many key tiles, as ``stated.window_attention_extra_tokens``
says for windowed layers), so a prompt of ``I`` tokens runs at ``R (I / 2) / (I / 2 + E)``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_SPEC = importlib.util.find_spec("aiconfigurator_core")  # the AIConfigurator venv's installed package
DATA = Path(_SPEC.origin if _SPEC and _SPEC.origin else ".").parent / "systems" / "data"
BF16_PEAK = {"h100_sxm": 989e12, "h200_sxm": 989e12, "b200_sxm": 2250e12, "gb200": 2500e12,
             "rtx_pro_6000_server": 503.8e12, "l40s": 362e12}
KINDS = (("bfloat16", "fp8"), ("fp8", "fp8"), ("bfloat16", "bfloat16"))  # (attention dtype, KV cache dtype)


def medians(gpu: str, attn: str, kv: str) -> pd.Series:
    d = pd.read_parquet(DATA / gpu / "attention/trtllm/1.3.0rc20/context_attention_perf.parquet")
    d = d[(d.window_size == 0) & (d.head_dim == 128) & (d.num_key_value_heads <= 8) & (d.kv_cache_dtype == kv)
          & (d.attn_dtype == attn)]
    flops = 4.0 * d.batch_size * d.num_heads * d.head_dim * (d.isl * (d.isl + 1) / 2 + d.isl * d.step)
    d = d.assign(rate=flops / (d.latency * 1e-3) / BF16_PEAK[gpu])
    d = d[(d.batch_size * d.isl >= 16384) & (d.isl >= 512)]
    return d.groupby("isl").rate.median()


def fit(m: pd.Series) -> tuple[float, float, float]:
    """(R, E, the largest relative miss of the fit over the medians)."""
    length = m.index.values.astype(float)
    (a, c), *_ = np.linalg.lstsq(np.vstack([np.ones_like(length), 1 / length]).T, 1 / m.values, rcond=None)
    return 1 / a, c / a / 2, float(np.max(np.abs(1 / (a + c / length) / m.values - 1)))


def main() -> None:
    table = len(sys.argv) > 1 and sys.argv[1] == "table"
    for attn, kv in KINDS:
        for gpu in BF16_PEAK:
            m = medians(gpu, attn, kv)
            if table:
                print(f"{attn}+{kv} KV {gpu:20s} " + " ".join(f"{i}:{r:.3f}" for i, r in m.items()))
                continue
            r, extra, miss = fit(m)
            at = " ".join(f"@{i}: {r * i / 2 / (i / 2 + extra):.3f}" for i in (128, 1000, 2048, 5000, 20000))
            print(f"{attn}+{kv} KV {gpu:20s} R {r:.3f} E {extra:5.0f} pairs a query (fit within {miss:.1%}); {at}")


if __name__ == "__main__":
    main()
