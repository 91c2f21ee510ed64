"""Runs inside ``benchmarks/.aic-venv`` (AIConfigurator 0.12.0, unmodified): its estimate of the three
``trtllm-dsr1-adp`` rows' jobs (TensorRT-LLM's DeepSeek-R1 best-perf guide, max throughput, attention DP 8, EP 8) and
of the FP8 KV B200 job at the BF16 one's batch (moe_small_batch_findings.md, "Stop 63"). Prints per job its output
tokens/s, TPOT and the generation-only / mixed step latencies it schedules.

    benchmarks/.aic-venv/bin/python benchmarks/_aiconfigurator_dsr1_adp.py
"""

from __future__ import annotations

import contextlib
import io
import logging

logging.disable(logging.WARNING)

from aiconfigurator.cli.api import cli_estimate  # noqa: E402

# name, system, per-rank batch, KV dtype, max_num_tokens (ctx_tokens), GEMM/MoE quantization
JOBS = (
    ("TRT-DSR1-ADP-B200-FP8KV", "b200_sxm", 896, "fp8", 2048, "nvfp4"),
    ("TRT-DSR1-ADP-B200-BF16KV", "b200_sxm", 384, "bfloat16", 1536, "nvfp4"),
    ("B200 FP8 KV at 384", "b200_sxm", 384, "fp8", 1536, "nvfp4"),
    ("TRT-DSR1-ADP-H200", "h200_sxm", 128, "bfloat16", 1151, "fp8_block"),
)


def main() -> None:
    for name, system, batch, kv, ctx, quant in JOBS:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            r = cli_estimate(
                "deepseek-ai/DeepSeek-V3",
                system,
                isl=1024,
                osl=2048,
                batch_size=batch,
                tp_size=1,
                attention_dp_size=8,
                moe_tp_size=1,
                moe_ep_size=8,
                gemm_quant_mode=quant,
                moe_quant_mode=quant,
                kvcache_quant_mode=kv,
                ctx_tokens=ctx,
            )
        s = r.per_ops_data["scheduling"]
        print(
            f"{name:26s} {r.tokens_per_second:9.0f} tok/s  TPOT {r.tpot:6.1f} ms  generation-only step "
            f"{s['genonly_step_latency_ms']:6.1f} ms  mixed step {s['mix_step_latency_ms']:6.1f} ms "
            f"({s['num_mix_steps']:.0f} of {s['decode_iterations']:.0f})"
        )


if __name__ == "__main__":
    main()
