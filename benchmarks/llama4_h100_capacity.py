"""Llama 4 on H100 (benchmarks/moe_small_batch_findings.md, "Stop 43"): the batch each TensorRT-LLM perf-overview row's
measured rate implies at the planner's own step, and the rows re-planned with one restatement changed (nothing
refitted, nothing written).

    .venv/bin/python benchmarks/llama4_h100_capacity.py implied PL4M-H100 PL4M-H200 PL4S-H100 PQ235-H100
    .venv/bin/python benchmarks/llama4_h100_capacity.py full-length-cache      # chunked layers cached at full length
    .venv/bin/python benchmarks/llama4_h100_capacity.py restate PL4M-H100 gpu_memory_utilization 0.90
    .venv/bin/python benchmarks/llama4_h100_capacity.py restate PL4S-H100,PL4S-H200 weights bf16

``implied``: the batch B at which B / step(B) (the step of ``moe_serving_misses.py``'s parts: the prompts spread
over every step, no graph padding) equals the measured rate per replica, against the planned batch (the KV cache's
sequences); "KV implied" is the planned KV pool scaled by their ratio, "gap" what the pool would have to lose.
Bisection up to 4x the planned batch, so a row the planner predicts too slow at every batch shows 4.00.
Dev tooling; reads no constant.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import anchorgpu.planner.speed.runs as runs
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import attention_flops_per_token, unsampled_prompt_share
from anchorgpu.planner.speed.rows_report import report_rows
from anchorgpu.planner.speed.serving import _tick
from anchorgpu.planner.speed.step_constants import _pair

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moe_serving_misses import row_serving  # noqa: E402  (beside this file)

GIB = 2**30


def _step(setup: Any, c: Any, model: Any, batch: float, prompt: int, output: int) -> float:
    attn = (attention_flops_per_token(model, 2 * (prompt + output // 2), causal=True),
            attention_flops_per_token(model, prompt, causal=True))
    # the LM head at each prompt's last token only, as speed.batching times a step
    return float(_tick(setup, c, batch, batch * prompt / output, attn[0], attn[1], 0.0,
                       head_skip=unsampled_prompt_share(prompt))[0])


def implied(prefixes: list[str]) -> None:
    cal = calibration()
    errors = {row["id"]: 100 * row["error"] for row in report_rows(cal, runs.load_runs())}
    print(f"{'row':24s} {'role':7s} {'measured':>8s} {'err%':>6s} {'B plan':>6s} {'B impl':>6s} {'ratio':>5s} "
          f"{'step impl ms':>12s} {'KV plan GiB':>11s} {'KV impl GiB':>11s} {'gap GiB':>7s}")
    for run in runs.load_runs():
        if run.phase != "serve" or run.metric != "max_output_tokens_per_s" or not run.id.startswith(tuple(prefixes)):
            continue
        r = run.row
        p, perf, setup = row_serving(run, cal)
        c, _ = _pair(p.model, p.gpu, setup, cal)
        planned = max(1, perf["saturation_concurrency"] // setup.replicas)
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        target = run.value / setup.replicas
        lo, hi = 1.0, 4.0 * planned
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if mid / _step(setup, c, p.model, mid, prompt, output) < target else (lo, mid)
        batch = (lo + hi) / 2
        kv = p.breakdown["kv_cache_capacity_bytes"]
        print(f"{run.id:24s} {run.role:7s} {run.value:8.0f} {errors[run.id]:+6.1f} {planned:6d} {batch:6.0f} "
              f"{batch / planned:5.2f} {1e3 * _step(setup, c, p.model, batch, prompt, output):12.1f} "
              f"{kv / GIB:11.2f} {kv * batch / planned / GIB:11.2f} {kv * (1 - batch / planned) / GIB:7.2f}")


def _compare(change: Any) -> None:
    """Every row's error before and after ``change()`` (which edits the rows or the model lookup); the rows that
    moved, and how many of them are within 25% before and after."""
    def errors() -> tuple[dict[str, float], dict[str, Any]]:
        runs._serve_plan.cache_clear()
        loaded = runs.load_runs()
        return ({row["id"]: 100 * row["error"] for row in report_rows(calibration(), loaded)},
                {run.id: run for run in loaded})
    before, by_id = errors()
    change(by_id)
    after, _ = errors()
    moved = [i for i in before if abs(before[i] - after[i]) > 0.05]
    for i in moved:
        print(f"{i:26s} {by_id[i].role:7s} {before[i]:+7.1f} -> {after[i]:+7.1f}")
    print(f"within 25%: {sum(abs(before[i]) <= 25 for i in moved)}/{len(moved)} -> "
          f"{sum(abs(after[i]) <= 25 for i in moved)}/{len(moved)}")


def full_length_cache() -> None:
    """Llama 4's chunked-attention layers cached at full length (no window), as a KV cache manager that is given no
    per-layer ``max_attention_window`` allocates them."""
    model_of = runs._model

    def no_windows(r: dict[str, Any]) -> Any:
        model = model_of(r)
        return dataclasses.replace(model, layer_windows=()) if "llama-4" in r["model"].get("registry", "") else model

    def change(_: dict[str, Any]) -> None:
        runs._model = no_windows
    try:
        _compare(change)
    finally:
        runs._model = model_of


def restate(prefixes: str, field: str, value: str) -> None:
    parsed: Any = float(value) if value.replace(".", "", 1).isdigit() else value

    def change(by_id: dict[str, Any]) -> None:
        for run in by_id.values():
            if run.id.startswith(tuple(prefixes.split(","))):
                run.row[field] = parsed
    _compare(change)


if __name__ == "__main__":
    command, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("implied", ["PL4M-H100"])
    if command == "implied":
        implied(args)
    elif command == "full-length-cache":
        full_length_cache()
    elif command == "restate":
        restate(*args)
    else:
        raise SystemExit(f"unknown command {command!r}: implied, full-length-cache or restate")
