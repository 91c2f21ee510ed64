"""Runs inside ``benchmarks/.aic-venv`` (AIConfigurator 0.12.0, unmodified; its default power_law_1.2 routing): its estimate, on its B200 TensorRT-LLM
tables, of the InferenceMAX gpt-oss-120b jobs of the ``inferencemax-trt-moe`` rows (stop63_b200tpot63.md). Per job:
TPOT, the generation-only step and its parts (ms a step, summed over the 36 layers), so the planner's terms
(``benchmarks/trtllm_dep_terms.py``) can be set beside NVIDIA's measured kernels.

    benchmarks/.aic-venv/bin/python benchmarks/_aiconfigurator_imt_dep.py

Jobs as the rows run them (InferenceMAX/InferenceMAX benchmarks/gptoss_fp4_b200_trt_slurm.sh @ cc9bed4): MXFP4
experts with MXFP8 activations (``w4a8_mxfp4_mxfp8``, the TRTLLM-gen MoE), 16-bit attention and head, FP8 KV, a
per-rank batch of CONC / DP, max_num_tokens 20000.
"""

from __future__ import annotations

import contextlib
import io
import logging

logging.disable(logging.WARNING)

from aiconfigurator.cli.api import cli_estimate  # noqa: E402

# name, isl, osl, per-rank batch, attention DP, MoE EP, TP
JOBS = (
    ("1k/1k DEP2-C64", 1024, 1024, 32, 2, 2, 1),
    ("1k/1k DEP2-C128", 1024, 1024, 64, 2, 2, 1),
    ("1k/8k DEP2-C64", 1024, 8192, 32, 2, 2, 1),
    ("1k/8k DEP2-C128", 1024, 8192, 64, 2, 2, 1),
    ("1k/1k DEP4-C64", 1024, 1024, 16, 4, 4, 1),
    ("1k/1k TP1-C128", 1024, 1024, 128, 1, 1, 1),
)
PARTS = {"attention": ("generation_attention",), "norms": ("generation_add_norm_1", "generation_add_norm_2"),
         "qkv+o": ("generation_qkv_gemm", "generation_proj_gemm"), "router": ("generation_router_gemm",),
         "a2a": ("generation_moe_pre_dispatch", "generation_moe_post_dispatch"), "moe": ("generation_moe",),
         "head": ("generation_logits_gemm",)}


def main() -> None:
    for name, isl, osl, batch, adp, ep, tp in JOBS:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            r = cli_estimate("openai/gpt-oss-120b", "b200_sxm", isl=isl, osl=osl, batch_size=batch, tp_size=tp,
                             attention_dp_size=adp, moe_tp_size=tp, moe_ep_size=ep, kvcache_quant_mode="fp8",
                             moe_quant_mode="w4a8_mxfp4_mxfp8", gemm_quant_mode="bfloat16", ctx_tokens=20000)
        s = r.per_ops_data["scheduling"]
        g = r.per_ops_data["genonly_step"]
        parts = {k: sum(g.get(op, 0.0) for op in ops) for k, ops in PARTS.items()}
        rest = sum(g.values()) - sum(parts.values())
        print(f"{name:16s} TPOT {r.tpot:6.2f} ms  gen-only step {s['genonly_step_latency_ms']:6.2f}  "
              + "  ".join(f"{k} {v:.2f}" for k, v in parts.items()) + f"  other {rest:.2f}")


if __name__ == "__main__":
    main()
