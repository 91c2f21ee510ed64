"""AMD's vLLM throughput cells (rows RS10-RS17) read as the bursts they are, with and without vLLM's preemption
(benchmarks/rocm_rows_findings.md, "Stop 42"). Dev tooling; changes no constant and no row.

    PYTHONPATH=src .venv/bin/python benchmarks/rocm_burst_preemption.py RS10 RS11 RS12 RS13 RS14 RS15 RS16 RS17
    PYTHONPATH=src .venv/bin/python benchmarks/rocm_burst_preemption.py --tpot   # the IM-DSR1-* rows' step parts

ROCm/MAD's harness (scripts/vllm/config.csv) submits ``num_prompts`` equal to ``max_num_seqs`` at once and divides the
output tokens by the elapsed time. vLLM admits a request when its prompt's blocks fit; when a running request finds no
free block it preempts the newest running request and recomputes it later (vllm-project/vllm
vllm/v1/core/sched/scheduler.py ``schedule``: ``preempted_req = self.running.pop()``). :func:`simulate` follows that rule
for groups of equal requests.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from anchorgpu.planner.speed.burst import burst_makespan_s
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict
from anchorgpu.planner.speed.serving import decode_step


def simulate(p: Any, setup: Any, n: int, prompt: int, output: int, cap_tokens: float) -> tuple[float, int, float]:
    """(seconds, decode steps, tokens recomputed) of ``n`` equal requests admitted together into ``cap_tokens``."""
    cal = calibration()
    waiting: list[list[int]] = [[n, 0]]  # [requests, generated], first in the queue first
    running: list[list[int]] = []  # oldest first
    t, steps, recomputed = 0.0, 0, 0.0
    while waiting or running:
        used = sum(c * (prompt + g) for c, g in running)
        admitted = 0.0
        while waiting and sum(c for c, _ in running) < n:
            c, g = waiting[0]
            fit = min(c, int((cap_tokens - used) // (prompt + g + 1)), n - sum(cc for cc, _ in running))
            if fit <= 0:
                break
            waiting[0][0] -= fit
            if waiting[0][0] == 0:
                waiting.pop(0)
            running.append([fit, g])
            used += fit * (prompt + g)
            admitted += fit * (prompt + g)
        if admitted:  # prefill (or recompute) in steps of the token budget
            k = math.ceil(admitted / setup.max_num_batched_tokens)
            t += k * decode_step(p.model, p.gpu, setup, batch=0, prefill_tokens=admitted / k, prompt_tokens=prompt,
                                 cal=cal).step_s
            recomputed += admitted
        b = sum(c for c, _ in running)
        mean_len = sum(c * (prompt + g) for c, g in running) / b
        t += decode_step(p.model, p.gpu, setup, batch=b, cached_tokens=int(mean_len), cal=cal).step_s
        steps += 1
        running = [[c, g + 1] for c, g in running if g + 1 < output]
        used = sum(c * (prompt + g) for c, g in running)
        while used > cap_tokens and running:  # no free block: the newest running requests are preempted
            c, g = running[-1]
            k = min(c, math.ceil((used - cap_tokens) / (prompt + g)))
            running[-1][0] -= k
            if running[-1][0] == 0:
                running.pop()
            if waiting and waiting[0][1] == g:
                waiting[0][0] += k
            else:
                waiting.insert(0, [k, g])
            used -= k * (prompt + g)
    return t, steps, recomputed - n * prompt


def bursts(ids: list[str]) -> None:
    cal = calibration()
    runs = {r.id: r for r in load_runs()}
    for rid in ids:
        run = runs[rid]
        r = run.row
        p = _serve_plan(rid)
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        setup = serving_setup(p, prompt_tokens=prompt, output_tokens=output)
        n = int(r.get("max_num_seqs") or 256)
        cap = p.breakdown["kv_cache_capacity_bytes"] / (setup.kv_bytes_per_sequence_per_gpu / (prompt + output // 2))
        sat = plan_performance(p, cal=cal)["saturation_concurrency"]
        steady = predict(run, cal)
        wave = n * output / burst_makespan_s(p.model, p.gpu, setup, requests=n, concurrency=sat, prompt_tokens=prompt,
                                            output_tokens=output, cal=cal)
        t, steps, again = simulate(p, setup, n, prompt, output, cap)
        m = run.value

        def f(v: float, m: float = m) -> str:
            return f"{v:7.0f} ({100 * (v / m - 1):+5.1f}%)"

        print(f"{rid:5s} N={n} {prompt}/{output} cache {cap / 1e6:.2f}M tokens, end of burst {n * (prompt + output) / 1e6:.2f}M"
              f" | measured {m:7.0f} | steady {f(steady)} | burst {f(wave)} | burst, preempting {f(n * output / t)}"
              f" in {steps} steps, {again / 1e6:.2f}M tokens recomputed")


def tpot_parts() -> None:
    cal = calibration()
    for run in load_runs():
        if run.metric != "tpot_s" or not run.id.startswith("IM-DSR1"):
            continue
        r = run.row
        p = _serve_plan(run.id)
        s = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"])
        d = decode_step(p.model, p.gpu, s, batch=r["concurrency"], cached_tokens=r["prompt_tokens"] + r["output_tokens"] // 2,
                        cal=cal)
        pred = predict(run, cal)
        print(f"{run.id:28s} {r['gpu']:7s} {r.get('engine', '?'):7s} C={r['concurrency']:3d} measured {run.value * 1e3:6.2f} "
              f"predicted {pred * 1e3:6.2f} ms ({100 * (pred / run.value - 1):+5.1f}%); decode step {d.step_s * 1e3:5.2f} = "
              f"fixed {d.fixed_s * 1e3:5.2f} + weights {d.weights_s * 1e3:5.2f} + attention {d.attention_s * 1e3:4.2f} + "
              f"all-reduce {d.communication_s * 1e3:4.2f}; gap {1e3 * (run.value - pred):+5.2f} ms")


if __name__ == "__main__":
    if sys.argv[1:] == ["--tpot"]:
        tpot_parts()
    else:
        bursts(sys.argv[1:] or ["RS10", "RS11", "RS12", "RS13", "RS14", "RS15", "RS16", "RS17"])
