"""Group the MoE serving calibration rows' errors by model, GPU and layout, and split a row's steady step into its
parts beside the step its measurement implies (benchmarks/moe_small_batch_findings.md, "Stop 40").

    .venv/bin/python benchmarks/moe_serving_misses.py            # the grouped table of the MoE serving sets
    .venv/bin/python benchmarks/moe_serving_misses.py PQ30-B200  # step parts of the rows whose id contains this

The implied step is the planner's own saturation batch over the measured output rate (the measured run's batch is
not published), so it compares step times at the planner's batch, not the engine's. Dev tooling; reads no constant.
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict

from anchorgpu.planner.speed.batching import prefill_chunk_share
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance, serving_setup
from anchorgpu.planner.speed.flops import attention_flops_per_token, decode_attention_flops_per_token
from anchorgpu.planner.speed.rows_report import report_rows, set_of
from anchorgpu.planner.speed.runs import _serve_plan, load_runs
from anchorgpu.planner.speed.serving import _tick
from anchorgpu.planner.speed.step_constants import _pair

MOE_SETS = ("trtllm-pcie-moe", "trtllm-moe", "vllm-gpustack-moe", "trtllm-dsr1-adp")


def row_serving(run, cal):  # type: ignore[no-untyped-def]
    """A serving row's plan, its performance at the row's own settings and its serving setup (the three the
    diagnostic scripts beside this one start from)."""
    r = run.row
    p = _serve_plan(run.id)
    perf = plan_performance(p, cal=cal, kv_reservation=r.get("kv_reservation", "average"),
                            graph_batch_sizes=tuple(r.get("graph_batch_sizes", ())),
                            host_overlap=bool(r.get("host_overlap", True)))
    setup = serving_setup(p, prompt_tokens=r["prompt_tokens"], output_tokens=r["output_tokens"],
                          host_overlap=bool(r.get("host_overlap", True)))
    return p, perf, setup


def grouped() -> None:
    runs = {r.id: r for r in load_runs()}
    groups: dict[tuple[str, str, str, str], list[tuple[str, float]]] = defaultdict(list)
    for row in report_rows(calibration(), tuple(runs.values())):
        run = runs[row["id"]]
        if set_of(run) not in MOE_SETS:
            continue
        r = run.row
        model = r["model"].get("registry", run.id)
        layout = f"tp{r['tp']}pp{r.get('pp', 1)}" + (f"ep{r['ep']}" if int(r.get("ep", 1)) > 1 else "")
        groups[(set_of(run), model, r["gpu"], layout)].append((run.role, 100.0 * row["error"]))
    print(f"{'set':18s} {'model':30s} {'gpu':13s} {'layout':9s} {'rows':>4s} {'median':>7s} {'min':>7s} {'max':>7s}"
          "  held out within 25%")
    for key, rows in sorted(groups.items()):
        errors = [e for _, e in rows]
        held = [e for role, e in rows if role == "holdout"]
        print(f"{key[0]:18s} {key[1]:30s} {key[2]:13s} {key[3]:9s} {len(rows):4d} {statistics.median(errors):+7.1f} "
              f"{min(errors):+7.1f} {max(errors):+7.1f}  {sum(abs(e) <= 25 for e in held)}/{len(held)}")


def parts(pattern: str) -> None:
    cal = calibration()
    for run in load_runs():
        if run.phase != "serve" or pattern not in run.id or run.metric != "max_output_tokens_per_s":
            continue
        r = run.row
        p, perf, setup = row_serving(run, cal)
        c, _ = _pair(p.model, p.gpu, setup, cal)
        batch = max(1, perf["saturation_concurrency"] // setup.replicas)
        prompt, output = r["prompt_tokens"], r["output_tokens"]
        prefill = batch * prompt / output
        attn = (decode_attention_flops_per_token(p.model, prompt + output // 2),
                attention_flops_per_token(p.model, prompt, causal=True))
        _, share = prefill_chunk_share(batch, prompt, output, setup.max_num_batched_tokens)
        t = _tick(setup, c, batch, prefill, attn[0], attn[1], 0.0, head_skip=0.0)  # the prompts spread over every step
        implied = batch * setup.replicas / run.value
        tokens = batch + prefill
        print(f"{run.id:26s} {run.role:7s} B={batch:5d} prompt tok/step={prefill:7.0f} share={share:5.2f} "
              f"step={t[0] * 1e3:6.1f} ms (fixed {t[1] * 1e3:4.1f}, weights+products {t[2] * 1e3:5.1f}, "
              f"attention {t[3] * 1e3:5.1f}, comm {t[4] * 1e3:5.1f}, host {c.host_s_per_sequence * batch * 1e3:5.1f}) "
              f"implied {implied * 1e3:6.1f} ms, missing {(implied - t[0]) * 1e6 / tokens:+6.1f} us a token")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        for arg in sys.argv[1:]:
            parts(arg)
    else:
        grouped()
