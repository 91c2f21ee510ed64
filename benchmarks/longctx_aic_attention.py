"""AIConfigurator 0.12.0's measured TensorRT-LLM attention tables at the shapes of the long-sequence perf-overview rows
(benchmarks/moe_small_batch_findings.md, "Stop 54 (branch longctx)"). Dev tooling; changes no constant, writes nothing.
Run with the AIConfigurator venv (pandas):

    benchmarks/.aic-venv/bin/python benchmarks/longctx_aic_attention.py decode    # per-rank decode attention a step
    benchmarks/.aic-venv/bin/python benchmarks/longctx_aic_attention.py gqa       # bandwidth share by GQA ratio
    benchmarks/.aic-venv/bin/python benchmarks/longctx_aic_attention.py context   # context attention's FLOP rate

``decode``: generation_attention_perf.parquet (torch_flow, FP8 KV, head dim 128, no window) at each row's shape under
attention DP (the planner's saturation batch over the ranks, the model's heads, KV length prompt + output / 2), the
nearest measured cell's achieved share of bandwidth scaled to the row's bytes, times the layers; against the planner's
KV read a step (``ROWS``' last column, from ``serving_setup`` and ``step_constants`` on the shipped constants of
714bf95). ``gqa``: the median share of the bandwidth over the cells with at least 2^20 KV token-heads and at most 8 KV
heads (Stop 55 (moebatch)'s filter), by query heads per KV head. ``context``: context_attention_perf.parquet, causal
FLOPs over latency over the BF16 dense peak, cells with batch x isl >= 8,192 and isl >= 2,048, by attention and KV dtype.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd

_SPEC = importlib.util.find_spec("aiconfigurator_core")  # the AIConfigurator venv's installed package
DATA = Path(_SPEC.origin if _SPEC and _SPEC.origin else ".").parent / "systems" / "data"
BANDWIDTH = {"h100_sxm": 3.35e12, "h200_sxm": 4.8e12, "b200_sxm": 8e12, "gb200": 8e12}
BF16_PEAK = {"h100_sxm": 989e12, "h200_sxm": 989e12, "b200_sxm": 2250e12, "gb200": 2500e12,
             "rtx_pro_6000_server": 503.8e12}
# row, AIC system, attention-DP ranks, running sequences, query heads, KV heads, KV length, full-length layers,
# chunked (8,192) layers, the planner's KV read a step (ms)
ROWS = (
    ("PQ235-B200-20000/2000", "b200_sxm", 8, 384, 64, 4, 21000, 94, 0, 17.97),
    ("PQ235-H200-20000/2000", "h200_sxm", 8, 224, 64, 4, 21000, 94, 0, 16.22),
    ("PQ235-B200-1000/2000", "b200_sxm", 8, 2560, 64, 4, 2000, 94, 0, 11.41),
    ("PQ235-B200-2048/2048", "b200_sxm", 8, 1792, 64, 4, 3072, 94, 0, 12.27),
    ("PQ235-B200-128/4096", "b200_sxm", 8, 1792, 64, 4, 2176, 94, 0, 8.69),
    ("PQ235-H100-1000/2000", "h100_sxm", 8, 768, 64, 4, 2000, 94, 0, 6.89),
    ("PL4S-H200-20000/2000", "h200_sxm", 4, 224, 40, 8, 21000, 12, 36, 17.97),
    ("PL4S-H100-128/4096", "h100_sxm", 4, 350, 40, 8, 2176, 12, 36, 6.98),
    ("PL4S-H100-1000/2000", "h100_sxm", 4, 480, 40, 8, 2000, 12, 36, 8.79),
    ("PL4S-B200-20000/2000", "b200_sxm", 1, 64, 40, 8, 21000, 12, 36, 13.27),
    ("PL4M-H200-20000/2000", "h200_sxm", 8, 384, 40, 8, 21000, 12, 36, 15.41),
    ("PL4M-B200-20000/2000", "b200_sxm", 8, 640, 40, 8, 21000, 12, 36, 16.59),
)


def _table(gpu: str, kind: str) -> pd.DataFrame:
    return pd.read_parquet(DATA / gpu / "attention/trtllm/1.3.0rc20" / f"{kind}_attention_perf.parquet")


def decode_ms(gpu: str, batch: float, heads: int, kv_heads: int, kv_tokens: int) -> tuple[float, tuple[int, int]]:
    """One layer's generation attention (ms) at ``batch`` sequences of ``kv_tokens``: the nearest measured cell (in
    log batch + log length) scaled by the bytes, and that cell (batch, step)."""
    d = _table(gpu, "generation")
    d = d[(d.kernel_source == "torch_flow") & (d.num_heads == heads) & (d.num_key_value_heads == kv_heads)
          & (d.head_dim == 128) & (d.kv_cache_dtype == "fp8") & (d.window_size == 0)]
    d = d.assign(dist=(np.log(d.batch_size) - np.log(batch)).abs() + (np.log(d.step + 1) - np.log(kv_tokens)).abs())
    cell = d.sort_values("dist").iloc[0]
    scale = batch * kv_tokens / (cell.batch_size * (cell.step + 1))
    return float(cell.latency) * scale, (int(cell.batch_size), int(cell.step))


def decode() -> None:
    for row, gpu, ranks, running, heads, kv_heads, length, full, chunked, planner_ms in ROWS:
        batch = running / ranks
        per_layer, cell = decode_ms(gpu, batch, heads, kv_heads, length)
        total = per_layer * full
        if chunked:
            total += decode_ms(gpu, batch, heads, kv_heads, min(length, 8192))[0] * chunked
        print(f"{row:24s} b {batch:6.1f} q{heads}/kv{kv_heads} {length:6d}: AIC {total:6.2f} ms (cell {cell}), "
              f"planner {planner_ms:6.2f} ms, AIC / planner {total / planner_ms:.2f}")


def gqa() -> None:
    for gpu, bandwidth in BANDWIDTH.items():
        d = _table(gpu, "generation")
        d = d[(d.kernel_source == "torch_flow") & (d.kv_cache_dtype == "fp8") & (d.window_size == 0)
              & (d.head_dim == 128) & (d.num_key_value_heads <= 8)]
        token_heads = d.batch_size * (d.step + 1) * d.num_key_value_heads
        # K and V of head dim 128 at one byte a value: 256 bytes a token-head, over the latency, over the bandwidth
        d = d.assign(share=token_heads * 256 / (d.latency * 1e-3) / bandwidth,
                     ratio=d.num_heads / d.num_key_value_heads)[token_heads >= 2**20]
        by = " ".join(f"{r:g}: {x.share.median():.3f}" for r, x in d.groupby("ratio"))
        print(f"{gpu:10s} all {d.share.median():.3f} ({len(d)} cells) | {by}")


def context() -> None:
    for gpu, peak in BF16_PEAK.items():
        d = _table(gpu, "context")
        d = d[(d.window_size == 0) & (d.head_dim == 128) & (d.batch_size * d.isl >= 8192) & (d.isl >= 2048)]
        flops = 4.0 * d.batch_size * d.num_heads * d.head_dim * (d.isl * (d.isl + 1) / 2 + d.isl * d.step)
        d = d.assign(rate=flops / (d.latency * 1e-3) / peak)
        medians = d.groupby(["attn_dtype", "kv_cache_dtype"]).rate.median().round(3).to_dict()
        print(f"{gpu:20s} " + ", ".join(f"{a} attention + {k} KV {v}" for (a, k), v in medians.items()))


if __name__ == "__main__":
    {"decode": decode, "gqa": gqa, "context": context}[sys.argv[1] if len(sys.argv) > 1 else "decode"]()
