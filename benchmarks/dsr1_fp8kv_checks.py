"""The DeepSeek-R1 rows the dsr1 helper looked at, replanned with one setting changed (moe_small_batch_findings.md,
"Stop 63"): what the planner's FP8 KV cache buys at a fixed batch, and the C4 TensorRT-LLM row at EP 8 / FP8 KV.

    PYTHONPATH=src .venv/bin/python benchmarks/dsr1_fp8kv_checks.py

Dev tooling; reads no constant and writes nothing.
"""

from __future__ import annotations

import copy
from typing import Any

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _reservation, load_runs, serve_plan_of

FP8, BF16, C4 = "TRT-DSR1-ADP-B200-FP8KV", "TRT-DSR1-ADP-B200-BF16KV", "IM-DSR1-B200-TRT-1k-1k-C4"


def predicted(run: Any, change: dict[str, Any]) -> float:
    """The row's metric, planned with ``change`` applied to its row."""
    r = copy.deepcopy(run.row)
    r.update(change)
    perf = plan_performance(
        serve_plan_of(r),
        cal=calibration(),
        kv_reservation=_reservation(r),
        graph_batch_sizes=tuple(r.get("graph_batch_sizes", ())),
        engine=engine_of(run),
    )
    return float(perf.get(run.metric, float("nan")))


def main() -> None:
    runs = {run.id: run for run in load_runs()}
    fp8_caps = {
        k: runs[FP8].row[k]
        for k in (
            "max_num_seqs",
            "max_num_batched_tokens",
            "concurrency",
            "graph_batch_sizes",
            "kv_free_fraction",
            "gpu_memory_utilization",
        )
    }
    cases = [
        (FP8, {}),
        (BF16, {}),
        (BF16, {"kv_cache": "fp8"}),
        (BF16, {"kv_cache": "fp8", **fp8_caps}),
        (C4, {}),
        (C4, {"ep": 8}),
        (C4, {"kv_cache": "fp8"}),
        (C4, {"ep": 8, "kv_cache": "fp8"}),
    ]
    for rid, change in cases:
        run = runs[rid]
        value = predicted(run, change)
        shown = {k: v for k, v in change.items() if k != "graph_batch_sizes"}
        print(f"{rid:26s} {str(shown):120s} {value:12.5g} ({100 * (value / run.value - 1):+.1f}%)")


if __name__ == "__main__":
    main()
