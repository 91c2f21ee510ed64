"""Stop 61 (`llama4`): the perf-overview MoE rows (``attention_dp_weights``) re-planned with attention data
parallelism's per-rank limits, nothing refitted, nothing written. Dev tooling; reads no constant.

Under ``enable_attention_dp`` each TensorRT-LLM rank schedules its own requests: the group admits ``tp_size *
max_num_active_requests`` (``tensorrt_llm/_torch/pyexecutor/py_executor.py`` ``PyExecutor._fetch_new_requests``;
``executor_request_queue.py`` later) and each rank's step holds up to ``max_num_tokens`` of its own, while trtllm-bench
sizes ``max_batch_size`` / ``max_num_tokens`` for the whole ``--tp`` engine (``bench/build/tuning.py``). The
calibration's TP restatement holds the group to one rank's limits. Here the TP-timed step takes tp x those limits; the
memory stays sized per rank (its sampler stand-in and prefill peak are one rank's).

    PYTHONPATH=src .venv/bin/python benchmarks/llama4_adp_caps.py                 # rows crossing 25%, counts
    PYTHONPATH=src .venv/bin/python benchmarks/llama4_adp_caps.py PL4M,PQ235-H1   # and every moved row of a prefix
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import Any

import anchorgpu.planner.speed.runs as runs
from anchorgpu.planner.speed.calibration import calibration

_plan_of = runs.serve_plan_of


def per_rank_limits(r: dict[str, Any]) -> Any:
    """A row's plan with the group's limits tp x trtllm-bench's (attention-DP rows over more than one GPU)."""
    p = _plan_of(r)
    tp = int(r["tp"])
    if r.get("attention_dp_weights") and r.get("engine_limits") == "trtllm-bench" and tp > 1:
        w = p.workload
        p = replace(p, workload=replace(w, max_num_seqs=w.max_num_seqs * tp,
                                        max_num_batched_tokens=w.max_num_batched_tokens * tp))
    return p


def main(prefixes: tuple[str, ...]) -> None:
    cal = calibration()
    rows = [run for run in runs.load_runs() if run.row.get("attention_dp_weights")]
    before = {run.id: runs.predict(run, cal) / run.value - 1 for run in rows}
    runs.serve_plan_of = per_rank_limits
    runs._serve_plan.cache_clear()
    try:
        after = {run.id: runs.predict(run, cal) / run.value - 1 for run in rows}
    finally:
        runs.serve_plan_of = _plan_of
        runs._serve_plan.cache_clear()
    counts = {"fit": [0, 0], "holdout": [0, 0]}
    for run in rows:
        b, a = before[run.id], after[run.id]
        counts[run.role][0] += abs(b) <= 0.25
        counts[run.role][1] += abs(a) <= 0.25
        crossed = (abs(b) <= 0.25) != (abs(a) <= 0.25)
        if crossed or (prefixes and run.id.startswith(prefixes) and abs(a - b) > 0.005):
            mark = ("  in" if abs(a) <= 0.25 else "  out") if crossed else ""
            print(f"{run.id:28s} {run.role:8s} {100 * b:+6.1f} -> {100 * a:+6.1f}{mark}")
    print("attention-DP rows within 25% (one rank's limits -> tp x):",
          {role: f"{n[0]} -> {n[1]}" for role, n in counts.items()})


if __name__ == "__main__":
    main(tuple(sys.argv[1].split(",")) if len(sys.argv) > 1 else ())
