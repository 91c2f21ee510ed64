"""Dev probe (benchmarks/hardening/stop62_makespan62.md): a trtllm-bench row's steady state and makespan, with the
makespan's step groups timed apart (prompt steps; decode steps on the next graph, and unpadded).

    PYTHONPATH=src python benchmarks/makespan62_step_parts.py P405-H100-128/128 P405-H200-128/2048
"""

from __future__ import annotations

import sys

from anchorgpu.planner.speed.batching import _attention_flops, _steady
from anchorgpu.planner.speed.bench_makespan import bench_cycle_groups
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _graph_sizes, _reservation, _serve_plan, load_runs
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.serving_plan import serving_saturation
from anchorgpu.planner.speed.step_constants import _pair


def main(run_ids: list[str]) -> None:
    cal = calibration()
    runs = {run.id: run for run in load_runs()}
    for run_id in run_ids:
        run = runs[run_id]
        r, p = run.row, _serve_plan(run_id)
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        setup, _, sat = serving_saturation(p, prompt, output, cal, _reservation(r), _graph_sizes(r, p), True, None,
                                           False, engine_of(run))
        c, ci = _pair(p.model, p.gpu, setup, cal)
        attn = _attention_flops(p.model, c, prompt, output, cal)
        steady_s = _steady(setup, c, ci, sat, prompt, output, attn)[0]
        prompt_s = decode_s = unpadded_s = 0.0
        prompt_n = decode_n = 0
        sizes = setup.graph_batch_sizes
        for b, k, n in bench_cycle_groups(int(r["bench_requests"]), prompt, output, max(1, sat),
                                          setup.pp * setup.max_num_batched_tokens):
            if k:
                seqs = b + k
                prompt_s += n * _steady(setup, c, ci, max(1, round(seqs)), prompt, seqs / k, attn)[0]
                prompt_n += n
            else:
                pad = next((x for x in sizes if x >= b), 0) if sizes else 0
                decode_s += n * _step(setup, c, b, 0.0, attn[0], 0.0, padded_batch=pad, head_skip=0.0)[0]
                unpadded_s += n * _step(setup, c, b, 0.0, attn[0], 0.0, padded_batch=0, head_skip=0.0)[0]
                decode_n += n
        tokens = int(r["bench_requests"]) * output
        print(f"{run_id}: measured {r['value']} steady {sat / steady_s:.0f} ({steady_s * 1e3:.1f} ms a step at {sat}),"
              f" makespan {tokens / (prompt_s + decode_s):.0f}, unpadded {tokens / (prompt_s + unpadded_s):.0f};"
              f" {prompt_n} prompt steps of {prompt_s / max(1, prompt_n) * 1e3:.1f} ms, {decode_n} decode steps of"
              f" {decode_s / max(1, decode_n) * 1e3:.1f} ms ({unpadded_s / max(1, decode_n) * 1e3:.1f} unpadded)")


if __name__ == "__main__":
    main(sys.argv[1:])
