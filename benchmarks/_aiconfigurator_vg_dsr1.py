"""Runs inside ``benchmarks/.aic-venv`` (AIConfigurator 0.12.0, unmodified): its estimate of VG-DSR1's job
(DeepSeek-R1 FP8-block on one 8 x H200 server, TP 8, 228 in / 213 out, 4 in flight, BF16 KV) on each engine's
tables, MoE TP 8 (the row's ``-tp 8`` without expert parallelism) and, for vLLM, EP 8 too. Prints the TPOT and the
generation-only step's ops (ms a step). Findings: benchmarks/hardening/stop62_singles.md.

    benchmarks/.aic-venv/bin/python benchmarks/_aiconfigurator_vg_dsr1.py
"""

from __future__ import annotations

import contextlib
import io
import logging

logging.disable(logging.WARNING)

from aiconfigurator.cli.api import cli_estimate  # noqa: E402

# engine, its table version (None: AIConfigurator's current one), MoE TP, MoE EP
JOBS = (
    ("vllm", "0.24.0", 8, 1),
    ("vllm", "0.24.0", 1, 8),
    ("sglang", None, 8, 1),
    ("trtllm", None, 8, 1),
)


def main() -> None:
    for backend, version, moe_tp, moe_ep in JOBS:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            r = cli_estimate("deepseek-ai/DeepSeek-V3", "h200_sxm", backend_name=backend, backend_version=version,
                             isl=228, osl=213, batch_size=4, tp_size=8, moe_tp_size=moe_tp, moe_ep_size=moe_ep,
                             gemm_quant_mode="fp8_block", moe_quant_mode="fp8_block", kvcache_quant_mode="bfloat16")
        ops = {k.removeprefix("generation_"): round(v, 2) for k, v in r.per_ops_data["genonly_step"].items() if v}
        print(f"{backend:7s} {version or 'current':8s} MoE TP {moe_tp} EP {moe_ep}: TPOT {r.tpot:5.2f} ms, "
              f"generation-only step {r.per_ops_data['scheduling']['genonly_step_latency_ms']:5.2f} ms {ops}")


if __name__ == "__main__":
    main()
