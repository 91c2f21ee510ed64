"""vLLM's Marlin MoE kernel on the A100, read from AIConfigurator 0.12.0's measured tables (stop 63, helper
gpustack63; benchmarks/hardening/stop63_gpustack63.md). Dev tooling: prints the fit, writes nothing.

vLLM runs MXFP4 experts below SM 9.0 with ``fused_marlin_moe``, which calls ``moe_wna16_marlin_gemm`` (b_q_type
float4_e2m1f). AIConfigurator has no vLLM Marlin table for the A100; its A100 SGLang 0.5.10 table holds the same
kernel (``sglang_marlin_moe``, SGLang's fused Marlin MoE over ``moe_wna16_marlin_gemm``) with int4 weight-only
experts. Fitted as the H100 entry of ``vllm_marlin_moe_peak_share`` / ``vllm_marlin_moe_expert_half_tokens`` was:
least squares of latency = FLOPs / R x (1 + half_tokens / rows) over the cells of 18-293 rows an expert, MoE TP 1,
EP 1. Also prints the H100 vLLM table by the same recipe (the stored 228.7 TFLOPS / 22.2 as a check) and the int4
kernel against the MXFP4 one on the H100.

    benchmarks/.aic-venv/bin/python benchmarks/marlin_a100_moe_fit.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

_SPEC = importlib.util.find_spec("aiconfigurator_core")
assert _SPEC is not None and _SPEC.origin is not None, "run with the AIConfigurator venv"
DATA = Path(_SPEC.origin).parent / "systems" / "data"
SHAPE = ["hidden_size", "inter_size", "topk", "num_experts"]


def load(gpu: str, framework: str, version: str, kernel: str) -> pd.DataFrame:
    d = pd.read_parquet(DATA / gpu / "moe" / framework / version / "moe_perf.parquet")
    d = d[d.kernel_source.str.contains(kernel) & (d.moe_tp_size == 1) & (d.moe_ep_size == 1)]
    return d.assign(rows=d.num_tokens * d.topk / d.num_experts, lat_s=d.latency * 1e-3,
                    flops=2 * 3 * d.num_tokens * d.topk * d.hidden_size * d.inter_size)


def fit(cells: pd.DataFrame) -> tuple[float, float, float]:
    """(R in TFLOPS, half_tokens, largest relative cell error) of latency = FLOPs / R x (1 + half / rows)."""
    def residual(p: np.ndarray) -> np.ndarray:
        return np.asarray((cells.flops / (p[0] * 1e12) * (1 + p[1] / cells.rows) - cells.lat_s) / cells.lat_s)
    r = least_squares(residual, [150.0, 20.0], bounds=([1.0, 0.0], [1000.0, 2000.0]))
    return float(r.x[0]), float(r.x[1]), float(np.max(np.abs(r.fun)))


def window(d: pd.DataFrame, distribution: str) -> pd.DataFrame:
    return d[(d.distribution == distribution) & (d.rows >= 18) & (d.rows <= 293)]


def main() -> None:
    a100 = load("a100_sxm", "sglang", "0.5.10", "marlin")
    for dist in ("power_law_1.01", "balanced", "power_law_1.2"):
        cells = window(a100, dist)
        rate, half, worst = fit(cells)
        print(f"A100 Marlin (SGLang, int4_wo), pooled, {dist}: R {rate:.1f} TFLOPS ({rate / 312:.3f} of 312), "
              f"half_tokens {half:.1f}, largest cell error {worst:.0%}, {len(cells)} cells")
        for shape, g in cells.groupby(SHAPE):
            rate, half, worst = fit(g)
            print(f"    {shape}: R {rate:.1f}, half_tokens {half:.1f}, largest error {worst:.0%}, {len(g)} cells")
    h100 = load("h100_sxm", "vllm", "0.24.0", "marlin")
    for dtype, g in window(h100, "power_law_1.01").groupby("moe_dtype"):
        for shape, gg in g.groupby(SHAPE):
            rate, half, worst = fit(gg)
            print(f"H100 Marlin (vLLM 0.24) {dtype} {shape}: R {rate:.1f}, half_tokens {half:.1f}, "
                  f"largest error {worst:.0%}")


if __name__ == "__main__":
    main()
