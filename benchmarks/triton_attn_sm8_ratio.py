"""vLLM's Triton attention against FlashAttention 2 on an SM 8.x GPU, read from AIConfigurator 0.12.0's L40S tables
(stop 63, helper gpustack63; benchmarks/hardening/stop63_gpustack63.md). Dev tooling: prints, writes nothing.

vLLM 0.11 runs gpt-oss (attention sinks) on SM 8.x with its Triton unified attention (TRITON_ATTN), not FlashAttention 2
(vllm/platforms/cuda.py ``get_attn_backend_cls``; stop62_ossa100.md). AIConfigurator has no A100 table of it; its L40S
(SM 8.9) and RTX PRO 6000 (SM 12.0, also mma.sync) vLLM 0.24.0 context-attention tables hold both kernels: ``vllm_triton_attn`` (head_dim 192, FP8 KV cache
only) and ``vllm_flash_attn_fa2`` (BF16 KV). Prints the causal prompt-attention rate (4 x isl^2 / 2 x heads x
head_dim FLOPs over the latency, one sequence) of each at 64 query heads, and their ratio at long prompts.

    benchmarks/.aic-venv/bin/python benchmarks/triton_attn_sm8_ratio.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pandas as pd

_SPEC = importlib.util.find_spec("aiconfigurator_core")
assert _SPEC is not None and _SPEC.origin is not None, "run with the AIConfigurator venv"
DATA = Path(_SPEC.origin).parent / "systems" / "data"
# GPUs whose tensor cores both kernels drive with mma.sync (no wgmma/tcgen05): SM 8.9 and SM 12.0, with their BF16 peaks
GPUS = {"l40s": 362.0, "rtx_pro_6000_server": 503.8}


def main() -> None:
    for gpu, peak in GPUS.items():
        d = pd.read_parquet(DATA / gpu / "attention" / "vllm" / "0.24.0" / "context_attention_perf.parquet")
        d = d[(d.batch_size == 1) & (d.window_size == 0) & (d.num_heads == 64) & (d.isl >= 2048)]
        d = d.assign(tflops=4 * d.isl**2 / 2 * d.num_heads * d.head_dim / (d.latency * 1e-3) / 1e12)
        rates = {}
        for key, g in d[d.kernel_source.isin(("vllm_triton_attn", "vllm_flash_attn_fa2"))].groupby(
                ["kernel_source", "head_dim", "num_key_value_heads", "kv_cache_dtype"]):
            g = g.sort_values("isl")
            print(gpu, key, " ".join(f"{i}:{t:.0f}" for i, t in zip(g.isl, g.tflops, strict=True)))
            rates[key] = g[g.isl >= 8192].tflops.median()
        triton = rates[("vllm_triton_attn", 192, 4, "fp8")]
        fa2 = rates[("vllm_flash_attn_fa2", 192, 4, "bfloat16")]
        print(f"{gpu}: 64/4 heads, head_dim 192, 8K-16K tokens: Triton {triton:.0f} TFLOPS, FA2 {fa2:.0f}: ratio "
              f"{triton / fa2:.2f} (of the BF16 peak {peak:.0f}: {triton / peak:.2f} and {fa2 / peak:.2f})\n")


if __name__ == "__main__":
    main()
