"""Per serving row: the planner's saturation batch B, the step the measurement implies at it (B over the measured
output rate), the bytes a decode step reads there (the GPU's weights and B KV caches at the average cached length)
over that step, and the product FLOPs of the step's tokens (B decodes and their share of prompt tokens) over it.
Both rates are lower bounds: the whole step is charged to one of them (benchmarks/rtx_pro_6000_findings.md).

    PYTHONPATH=src .venv/bin/python benchmarks/rtx_implied_step.py P70-RTXTP1PP1 P70-B200-128/128

Dev tooling; reads no constant it does not print.
"""

from __future__ import annotations

import sys
from pathlib import Path

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import forward_matmul_params
from anchorgpu.planner.speed.runs import load_runs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moe_serving_misses import row_serving  # noqa: E402  (beside this file)


def main(patterns: list[str]) -> None:
    cal = calibration()
    mbu = cal.stacks["cuda"].decode_mbu
    for run in load_runs():
        if run.phase != "serve" or run.metric != "max_output_tokens_per_s" or not any(p in run.id for p in patterns):
            continue
        r = run.row
        p, perf, s = row_serving(run, cal)
        batch = perf["saturation_concurrency"] // s.replicas
        step = batch * s.replicas / run.value
        read = s.weights_bytes_per_gpu - s.lookup_table_bytes_per_gpu + batch * s.kv_bytes_per_sequence_per_gpu
        tokens = batch * (1 + r["prompt_tokens"] / r["output_tokens"])
        flops = tokens * 2 * forward_matmul_params(p.model) / (s.tp * s.pp)
        bw = p.gpu.memory_bandwidth_bytes_per_s
        print(f"{run.id:26s} B={batch:5d} step={step * 1e3:6.1f} ms  read {read / 1e9:5.1f} GB -> "
              f"{read / step / 1e12:5.2f} TB/s ({read / step / bw:4.2f} of the catalog's; the model's {mbu:.2f})  "
              f"products >= {flops / step / 1e12:6.0f} TFLOP/s")


if __name__ == "__main__":
    main(sys.argv[1:])
