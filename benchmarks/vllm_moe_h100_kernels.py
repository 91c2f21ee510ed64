"""The planner's product time for the vllm-gpustack-moe steps against AIConfigurator's measured vLLM kernel tables.

Not a test and not calibration: it prints the evidence of the 2026-12-06 section of benchmarks/vllm_moe_findings.md.
For each model/GPU of the set it takes the step the planner models for GPUStack's bursts (vLLM's token budget: 8,192
on an H100, 2,048 on an A100), and sets beside each other, per layer and per GPU:

* the planner's routed-expert products: ``expert_share * tokens * 2 * matmul_params / split / expert_rate`` plus the
  small-row falloff ``expert_half_tokens / (tokens * route_share)`` (``serving._tick``), divided by the MoE layers;
* AIConfigurator's measured time of vLLM's fused-MoE kernel for the same shape (hidden, expert intermediate, experts,
  top-k, moe_tp = the row's TP), tokens = the step's, by routing distribution (``moe_perf.parquet``, ``latency`` in ms);
* the planner's rate for the dense 16-bit products against cuBLAS BF16 GEMMs of the same M from the same tables
  (``gemm_perf.parquet``, ``torch.nn.functional.linear`` on H100, ``vllm_default`` on A100).

Needs pandas: run with AIConfigurator's venv (it imports the planner from src/):

    PYTHONPATH=src benchmarks/.aic-venv/bin/python benchmarks/vllm_moe_h100_kernels.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd  # type: ignore[import-untyped]

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.peaks import peak_for
from anchorgpu.planner.speed.runs import _serve_plan, load_runs
from anchorgpu.planner.speed.step_constants import _constants, serve_shape_factor

_TABLES = Path("benchmarks/.aic-venv/lib/python3.11/site-packages/aiconfigurator_core/systems/data")
# the checkout's own AIConfigurator venv, else the main checkout's (a worktree has none)
AIC = next((p for p in (Path(__file__).resolve().parents[1] / _TABLES, Path("/work/main") / _TABLES) if p.is_dir()),
           _TABLES)
# (row the plan is read from, AIConfigurator GPU dir, vLLM version dir, kernel_source, moe_dtype,
#  table shape (hidden, inter, experts, topk) -- the model's own, or the nearest collected)
CASES = [
    ("VGM-OSS20-H100-2K", "h100_sxm", "0.24.0", "vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic",
     "w4a16_mxfp4", (2880, 2880, 32, 4)),
    ("VGM-Q235-H100-2K", "h100_sxm", "0.24.0", "vllm_unquantizedfusedmoe_triton_tritonexperts", "bfloat16",
     (4096, 1536, 128, 8)),
    ("VGM-GLMA-H100-SG", "h100_sxm", "0.24.0", "vllm_unquantizedfusedmoe_triton_tritonexperts", "bfloat16",
     (4096, 1536, 128, 8)),  # GLM-4.5-Air's experts are 1,408 wide: the table's 1,536 is scaled by 1408/1536
    ("VGM-Q235-A100-2K", "a100_sxm", "0.14.0", "vllm_fused_moe", "bfloat16", (4096, 1536, 128, 8)),
    ("VGM-GLMA-A100-2K", "a100_sxm", "0.14.0", "vllm_fused_moe", "bfloat16", (4096, 1536, 128, 8)),
]
# dense GEMMs: (GPU dir, version, kernel_source, [(m, n, k)])
GEMMS = [
    ("h100_sxm", "0.24.0", "torch.nn.functional.linear", [(8192, 5120, 3072), (8192, 3072, 4096), (8192, 1536, 4096),
                                                          (8192, 4096, 1024), (8192, 8192, 8192), (8192, 7168, 5120),
                                                          (8192, 16384, 5120), (8192, 5120, 16384)]),
    ("a100_sxm", "0.14.0", "vllm_default", [(2048, 5120, 3072), (2048, 3072, 4096), (2048, 1536, 4096),
                                            (2048, 4096, 1024), (8192, 8192, 8192)]),
]


def _moe_table(gpu: str, ver: str) -> pd.DataFrame:
    return pd.read_parquet(AIC / gpu / "moe" / "vllm" / ver / "moe_perf.parquet")


def _planner(row_id: str) -> tuple[float, float, float, float, int, float]:
    """(tokens, TP, planned routed-expert ms per MoE layer, planner's product rate TFLOPS, MoE layers,
    the model's expert intermediate size)."""
    run = next(r for r in load_runs() if r.id == row_id)
    plan = _serve_plan(row_id)
    setup = serving_setup(plan, prompt_tokens=run.row["prompt_tokens"], output_tokens=run.row["output_tokens"],
                          host_overlap=False)
    c = _constants(plan.model, plan.gpu, setup, calibration(), False)
    tokens = float(setup.max_num_batched_tokens)
    moe = plan.model.moe
    assert moe is not None
    expert_s = c.expert_share * tokens * 2.0 * c.matmul_params / c.split / c.expert_rate
    rows = tokens * c.expert_token_scale * c.route_share
    extra = c.expert_half_tokens / rows if rows >= c.expert_tile_rows else c.expert_half_tokens / c.expert_tile_rows
    per_layer_ms = expert_s * (1.0 + extra) / moe.num_moe_layers * 1e3
    return tokens, setup.tp, per_layer_ms, c.matmul_rate / 1e12, moe.num_moe_layers, moe.expert_intermediate_size


def main() -> None:
    print("| row | tokens | TP | kernel (AIConfigurator) | planned ms/layer | measured ms/layer balanced / "
          "power_law_1.01 / 1.2 | measured / planned | measured TFLOPS | planner base TFLOPS (before the falloff) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row_id, gpu, ver, kernel, dtype, (h, inter, e, k) in CASES:
        tokens, tp, planned_ms, rate, _, inter_model = _planner(row_id)
        df = _moe_table(gpu, ver)
        sel = df[(df.kernel_source == kernel) & (df.moe_dtype == dtype) & (df.hidden_size == h)
                 & (df.inter_size == inter) & (df.num_experts == e) & (df.topk == k) & (df.moe_tp_size == tp)
                 & (df.moe_ep_size == 1) & (df.num_tokens == int(tokens))]
        by = {d: float(g.latency.iloc[0]) * inter_model / inter for d, g in sel.groupby("distribution")}
        flops = tokens * k * 3 * h * inter_model * 2 / tp
        meas = by.get("balanced", by.get("power_law_1.01"))
        cells = " / ".join(f"{by[d]:.3f}" if d in by else "-" for d in ("balanced", "power_law_1.01", "power_law_1.2"))
        print(f"| {row_id} | {tokens:,.0f} | {tp} | {kernel} {dtype} | {planned_ms:.3f} | {cells} | "
              f"{meas / planned_ms:.2f}x | {flops / meas / 1e9:.0f} | {rate:.0f} |")
    print()
    print("| GPU | kernel | m x n x k | measured ms | TFLOPS |")
    print("|---|---|---|---|---|")
    for gpu, ver, kernel, shapes in GEMMS:
        g = pd.read_parquet(AIC / gpu / "gemm" / "vllm" / ver / "gemm_perf.parquet")
        g = g[(g.kernel_source == kernel) & (g.gemm_dtype == "bfloat16")]
        for m, n, kk in shapes:
            hit = g[(g.m == m) & (g.n == n) & (g.k == kk)]
            if hit.empty:
                print(f"| {gpu} | {kernel} | {m} x {n} x {kk} | - | - |")
                continue
            ms = float(hit.latency.iloc[0])
            print(f"| {gpu} | {kernel} | {m} x {n} x {kk} | {ms:.3f} | {2 * m * n * kk / ms / 1e9:.0f} |")

    cal = calibration()
    for name in ("h100-sxm", "a100-80gb-sxm"):
        gpu = get_gpu(name)
        eff = cal.serve_precision_efficiency(gpu, "bf16") * peak_for(gpu, "bf16").flops_per_s / 1e12
        half = cal.stack(gpu).serve_matmul_half_width
        rates = ", ".join(f"width {w}: {eff * serve_shape_factor(w, half):.0f}" for w in (2880, 4096, 5120))
        print(f"planner's BF16 product rate on {name}, TFLOPS: {rates}")


if __name__ == "__main__":
    main()
