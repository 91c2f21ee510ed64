"""Stop 63 probe (dev tooling, not product code): every calibration row at the shipped constants, with an option to
give the attention-DP trtllm-bench rows (TP > 1) the group's limits, ``tp x`` trtllm-bench's ``max_batch_size`` and
``max_num_tokens`` (TensorRT-LLM's ``_fetch_new_requests`` under ``enable_attention_dp``:
``total_max_num_active_requests = tp_size * max_num_active_requests``; each rank's scheduler its own token budget),
on top of the request bound that ``runs._serve`` already applies (``bench_makespan.bench_steady_output_tokens_per_s``).
The plan's memory is untouched (the KV cache stays what one rank's limits leave); only the timed saturation reads the
group's limits. Findings: benchmarks/hardening/stop63_trtmoe63.md.

    PYTHONPATH=src python benchmarks/adp_group_cap_probe.py [--group-cap] [--base /work/notes/cal_base.txt] [REGEX]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from typing import Any

import anchorgpu.planner.speed.bench_makespan as bench
import anchorgpu.planner.speed.serving_plan as serving_plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

ROW = re.compile(r"(\S+)\s+(fit|holdout)\s+\S+\s+\S+\s+\S+\s+\S+\s+([+-][\d.]+)%")


def _patch_group_cap() -> None:
    """Hand the attention-DP rows' timed saturation the group's limits (tp x a rank's)."""
    saturation_of, times_row = serving_plan.serving_saturation, bench.times_row
    state = {"adp": False}

    def times(r: dict[str, Any]) -> bool:
        state["adp"] = bool(r.get("attention_dp_weights")) and r.get("tp") != 1 and "bench_requests" in r
        return times_row(r)

    def sat(plan: Any, *args: Any, **kwargs: Any) -> Any:
        if state["adp"]:
            w, tp = plan.workload, plan.layout.tp
            plan = dataclasses.replace(plan, workload=dataclasses.replace(
                w, max_num_seqs=w.max_num_seqs * tp, max_num_batched_tokens=w.max_num_batched_tokens * tp))
        return saturation_of(plan, *args, **kwargs)

    def steady(plan: Any, setup: Any, saturation: int, cal: Any, *, requests: int, prompt_tokens: int,
               output_tokens: int) -> float | None:
        if not state["adp"]:
            return None
        from anchorgpu.planner.speed.batching import serving_estimate

        est = serving_estimate(plan.model, plan.gpu, setup, prompt_tokens, output_tokens, 1,
                               max(1, min(saturation, requests)), cal)
        return est.max_output_tokens_per_s

    bench.times_row, serving_plan.serving_saturation = times, sat
    bench.bench_steady_output_tokens_per_s = steady


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pattern", nargs="?", default=".")
    parser.add_argument("--group-cap", action="store_true")
    parser.add_argument("--base", default="/work/notes/cal_base.txt")
    args = parser.parse_args()
    if args.group_cap:
        _patch_group_cap()
    base = {}
    with open(args.base) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                base[m.group(1)] = float(m.group(3))
    cal, pat, within = calibration(), re.compile(args.pattern), [0, 0, 0]
    for run in load_runs():
        if not pat.search(run.id):
            continue
        err = (predict(run, cal) / run.value - 1) * 100
        before = base.get(run.id, float("nan"))
        within[0] += 1
        within[1] += abs(before) <= 25
        within[2] += abs(err) <= 25
        flag = "WON" if abs(before) > 25 >= abs(err) else "LOST" if abs(before) <= 25 < abs(err) else ""
        print(f"{run.id:28s} {run.role:8s} {before:+7.1f} -> {err:+7.1f} {flag}")
    print(f"{within[0]} rows, within 25%: {within[1]} -> {within[2]}")


if __name__ == "__main__":
    main()
