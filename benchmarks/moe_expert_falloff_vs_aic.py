"""Does TensorRT-LLM's MoE layer on Hopper pay a cost per expert beyond reading the expert's weights? AIConfigurator's
measured tables against the planner's rows falloff (``moe_expert_half_tokens``), every expert shape the tables hold
(stop 59, helper ``moeexpert``; benchmarks/hardening/stop59_moeexpert.md). Dev tooling; reads no planner constant.

    benchmarks/.aic-venv/bin/python benchmarks/moe_expert_falloff_vs_aic.py

Source: aiconfigurator-core 0.12.0 (PyPI), ``systems/data/{h100_sxm,h200_sxm}/moe/trtllm/1.3.0rc20/moe_perf.parquet``;
rows with balanced routing, MoE TP 1, FP8 (per-tensor or 128x128 blocks), the fastest kernel a cell.

Part 1 (large batches, every expert touched): a line ``latency = A + s x rows a rank`` through the cells with at least
32 rows an expert; ``L0`` the cell with one row an expert (every local expert touched, its weights read, almost no
products). The planner's form charges each touched local expert ``half`` rows of products beyond its rows, so it
predicts ``A - L0 = half x local experts x s``; the implied ``half`` is printed (the fit ships 114).

Part 2 (small batches): the Maverick shape (5,120 x 8,192, 128 experts, top 1) at EP 8 below one row an expert; AIC's
balanced routing gives a rank ``T x k / EP`` rows on as many distinct local experts, so the layer's rise per touched
expert is ``b`` of ``latency = a + b x touched``, against one expert's FP8 weights (3 x 5,120 x 8,192 bytes) at the
GPU's HBM rate (H100 SXM 3.35 TB/s, H200 4.8 TB/s: the catalog's figures).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

AIC = Path(__file__).parent / ".aic-venv/lib/python3.11/site-packages/aiconfigurator_core/systems/data"
HBM_BYTES_S = {"h100_sxm": 3.35e12, "h200_sxm": 4.8e12}
SHAPE = ["hidden_size", "inter_size", "topk", "num_experts", "moe_ep_size"]


def table(gpu: str) -> pd.DataFrame:
    d = pd.read_parquet(AIC / gpu / "moe/trtllm/1.3.0rc20/moe_perf.parquet")
    d = d[(d.distribution == "balanced") & (d.moe_tp_size == 1) & d.moe_dtype.isin(["fp8", "fp8_block"])]
    return d.groupby([*SHAPE, "num_tokens"]).latency.min().reset_index()


def large_batches(gpu: str, g: pd.DataFrame) -> None:
    print(f"{gpu}: shape, EP, local experts | L0 ms (tokens) | A ms | s us/row | A-L0 ms | implied half rows")
    halves = []
    for (h, i, k, e, ep), x in g.groupby(SHAPE):
        if ep not in (1, 2, 4, 8) or ep > e:
            continue
        x = x.sort_values("num_tokens")
        rows_expert = x.num_tokens * k / e
        base, fit = x[rows_expert >= 1], x[rows_expert >= 32]
        if base.empty or len(fit) < 3:
            continue
        s, a = np.polyfit(fit.num_tokens * k / ep, fit.latency, 1)
        l0, local = base.latency.iloc[0], e / ep
        half = (a - l0) / (s * local)
        halves.append(half)
        print(f"  {h}x{i} top {k}/{e} EP{ep} {local:4.0f} | {l0:7.3f} ({base.num_tokens.iloc[0]}) | {a:7.3f} | "
              f"{s * 1e3:.4f} | {a - l0:+.3f} | {half:6.1f}")
    print(f"  implied half over {len(halves)} shape x EP cells: median {np.median(halves):.1f}, "
          f"quartiles {np.percentile(halves, 25):.1f} .. {np.percentile(halves, 75):.1f}")


def small_batches(gpu: str, g: pd.DataFrame) -> None:
    x = g[(g.hidden_size == 5120) & (g.inter_size == 8192) & (g.topk == 1) & (g.num_experts == 128)
          & (g.moe_ep_size == 8) & (g.num_tokens >= 8) & (g.num_tokens <= 128)]
    touched = np.minimum(x.num_tokens / 8, 16).clip(lower=1)
    b, a = np.polyfit(touched, x.latency, 1)
    read_s = 3 * 5120 * 8192 / HBM_BYTES_S[gpu]
    print(f"{gpu}: Maverick shape EP8, 8-128 tokens: {a * 1e3:.1f} us a layer + {b * 1e3:.1f} us a touched local "
          f"expert; one expert's FP8 weights at the HBM rate {read_s * 1e6:.1f} us ({read_s / b * 1e3:.2f} of it)")
    for t, lat in zip(x.num_tokens, x.latency, strict=True):
        print(f"    {t:4d} tokens ({min(max(t / 8, 1), 16):4.0f} touched): {lat * 1e3:7.1f} us")


if __name__ == "__main__":
    for gpu in HBM_BYTES_S:
        g = table(gpu)
        large_batches(gpu, g)
        small_batches(gpu, g)
