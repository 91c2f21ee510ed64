"""Runs inside ``benchmarks/.aic-venv`` (AIConfigurator 0.12.0, unmodified): its per-operation step breakdown for
Qwen3-30B-A3B-like jobs (moe_small_batch_findings.md, "Stop 47"). argv[1] is a JSON list of jobs
``[isl, osl, batch, ctx_tokens or null, hf_model, system, quant, tp]`` (MoE TP = TP, EP 1, FP8 KV cache, the quant
for the GEMMs and the experts alike); prints one JSON list: per job its tokens/s, the mix and generation-only steps'
per-op milliseconds (``EstimateResult.per_ops_data``) and where each op's figure came from (``per_ops_source``).

    benchmarks/.aic-venv/bin/python benchmarks/_aiconfigurator_ops.py \
        '[[1000,1000,1582,1582,"Qwen/Qwen3-30B-A3B","b200_sxm","nvfp4",1]]'
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys

logging.disable(logging.WARNING)

from aiconfigurator.cli.api import cli_estimate  # noqa: E402


def main() -> None:
    out = []
    for isl, osl, batch, ctx, model, system, quant, tp in json.loads(sys.argv[1]):
        job = [isl, osl, batch, ctx, model, system, quant, tp]
        extra = {} if ctx is None else {"ctx_tokens": int(ctx)}
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                r = cli_estimate(model, system, isl=isl, osl=osl, batch_size=batch, tp_size=tp, moe_tp_size=tp,
                                 moe_ep_size=1, gemm_quant_mode=quant, moe_quant_mode=quant, kvcache_quant_mode="fp8",
                                 **extra)
        except Exception as exc:  # noqa: BLE001 - report whatever it raised, in one line
            out.append({"job": job, "error": str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__})
            continue
        out.append({"job": job, "tokens_per_s": r.tokens_per_second, "tpot_ms": r.tpot, "ctx_tokens": r.ctx_tokens,
                    "per_ops_ms": r.per_ops_data, "source": r.per_ops_source})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
