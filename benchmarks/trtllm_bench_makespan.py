"""trtllm-bench's throughput is a makespan, not a steady state: the perf-overview rows re-timed step by step
(benchmarks/hardening/stop60_bwmoe.md). Dev tooling; changes no constant and writes nothing.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_bench_makespan.py rows [ID-PREFIX ...]
    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_bench_makespan.py eager MS [ID-PREFIX ...]
    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_bench_makespan.py calibrate [--eager-ms MS] [--all|--write ...]

What the benchmark measures (NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py``,
``StatsKeeper.generate_statistics_summary``: ``total_latency_ns = end_time - start_time`` over every request;
``statistics.py``, ``BenchmarkStatistics``: output throughput = total output tokens / total latency): every one of the
page's ``$num_requests`` requests (``docs/source/performance/perf-overview.md`` @00f3768, its table by ISL/OSL) is
queued at once with fixed lengths (``--input-stdev=0 --output-stdev=0``), so the run ramps up, holds, and drains.
The planner times these rows at the steady state of a full batch instead.

The schedule: the engine trtllm-bench sized (``runs.trtllm_bench_engine``'s batch and tokens a step, the planner's
saturation where the cache holds fewer), chunked prefill off, so a step admits whole prompts first come first served
while the running sequences plus the prompts fit the token budget and the batch cap; a request admitted in step s
gives its first token in s and its last in s + O - 1. Each step is timed with ``serving._step`` at its decodes and
prompt tokens. Only rows on one pipeline stage and one replica are re-timed (``_step`` is a whole step there); the
MoE rows with TP > 1 ran attention DP (the page's MoE ``llm_options.yml``), so their ranks are scheduled apart, each
with the page's requests over the ranks and its share of the batch, and step together. ``rows`` prints each
trtllm-bench row steady and re-timed; ``calibrate`` runs calibrate's report (or refit) with the re-timed rows.

``eager MS``: a probe, not a model term: the re-timed rows with every step that carries a prompt taking at least the
host's per-sequence work (``host_s_per_sequence_step``) plus MS milliseconds on a Grace host (MS / 2.75 on x86, the
ratio the x86 figure is stated with), as if the host launched the step's forward op by op
(``ScheduledRequests.can_run_cuda_graph`` is false with a context request) and did its per-sequence work in the
same thread. MS is the one unknown; nothing states it.
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from typing import Any

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.batching import _attention_flops
from anchorgpu.planner.speed.bench_makespan import bench_schedule
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.serving_plan import serving_saturation
from anchorgpu.planner.speed.step_constants import _pair

# perf-overview.md @00f3768, "Preparing a Dataset": $num_requests by (input, output) length
PAGE_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
                 (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}
ADP_SETS = ("trtllm-moe", "trtllm-pcie-moe")  # the page's MoE command: enable_attention_dp in llm_options.yml


def schedule(requests: int, prompt: int, output: int, batch: int, budget: int) -> Counter[tuple[int, int]]:
    """Steps by (decoding sequences, prompts admitted) of ``requests`` equal requests queued at once: the planner's own
    schedule since stop 62 (``speed.bench_makespan.bench_schedule``, which admits no more than ``requests``)."""
    return Counter(bench_schedule(requests, prompt, output, batch, budget))


_BINS: dict[tuple[int, ...], list[tuple[float, float, int]]] = {}


def binned(requests: int, prompt: int, output: int, batch: int, budget: int,
           bins: int = 24) -> list[tuple[float, float, int]]:
    """:func:`schedule`'s steps as (mean decoding sequences, mean prompts admitted, steps), the steps with prompts
    and those without each in up to ``bins`` groups of equal step counts by decoding sequences (memoised: the
    schedule depends on no speed constant)."""
    key = (requests, prompt, output, batch, budget, bins)
    if key not in _BINS:
        counts = schedule(requests, prompt, output, batch, budget)
        out: list[tuple[float, float, int]] = []
        for with_prompt in (True, False):
            steps = sorted((b, k, n) for (b, k), n in counts.items() if (k > 0) == with_prompt)
            total = sum(n for _, _, n in steps)
            group: list[tuple[int, int, int]] = []
            for b, k, n in steps:
                group.append((b, k, n))
                held = sum(x[2] for x in group)
                if held * bins >= total or (b, k, n) == steps[-1]:
                    out.append((sum(x[0] * x[2] for x in group) / held, sum(x[1] * x[2] for x in group) / held, held))
                    group = []
        _BINS[key] = out
    return _BINS[key]


def makespan_rate(run: rs.Run, cal: Calibration, eager_s: float = 0.0,
                  steady: bool = True) -> tuple[float | None, float]:
    """(output tokens a second over the makespan, or None where not re-timed; the planner's steady figure, or nan
    without ``steady``); ``eager_s``: the ``eager`` probe's host time a prompt step on a Grace host."""
    r = run.row
    prompt, output = r["prompt_tokens"], r["output_tokens"]
    p = rs._serve_plan(run.id)
    engine, graphs = engine_of(run), tuple(r.get("graph_batch_sizes", ()))
    figure = math.nan
    if steady:
        figure = float(plan_performance(p, cal=cal, kv_reservation=rs._reservation(r), graph_batch_sizes=graphs,
                                        engine=engine)["max_output_tokens_per_s"])
    setup, _, sat = serving_saturation(p, prompt, output, cal, rs._reservation(r), graphs, True, None, False, engine)
    requests = PAGE_REQUESTS.get((prompt, output))
    if requests is None or setup.replicas != 1 or setup.pp != 1:
        return None, figure
    c, _ = _pair(p.model, p.gpu, setup, cal)
    ranks = int(r["tp"]) if r.get("set") in ADP_SETS and int(r["tp"]) > 1 else 1
    attn = _attention_flops(p.model, c, prompt, output, cal)
    skip = 1.0 - 1.0 / prompt
    total = 0.0
    for decoding, k, n in binned(math.ceil(requests / ranks), prompt, output, max(1, int(sat) // ranks),
                                 setup.max_num_batched_tokens):
        b = decoding * ranks
        if k:
            t = _step(setup, c, b, k * ranks * prompt, attn[0], attn[1], one_chunk=True, head_skip=skip)[0]
            if eager_s:
                grace = c.host_s_per_sequence > 2e-5  # the superchip's stated figure (29.4 us) against x86's 10.7
                t = max(t, c.host_s_per_sequence * b / ranks + (eager_s if grace else eager_s / 2.75))
        else:
            padded = next((s for s in setup.graph_batch_sizes if s >= b), 0) if setup.graph_batch_sizes else 0
            t = _step(setup, c, b, 0.0, attn[0], 0.0, padded_batch=padded, head_skip=0.0)[0]
        total += n * t
    return requests * output / total, figure


def _bench(run: rs.Run) -> bool:
    return run.metric == "max_output_tokens_per_s" and run.row.get("engine_limits") == "trtllm-bench"


def rows(prefixes: tuple[str, ...], eager_s: float = 0.0) -> None:
    cal = calibration()
    for run in rs.load_runs():
        if not _bench(run) or (prefixes and not run.id.startswith(prefixes)):
            continue
        new, steady = makespan_rate(run, cal, eager_s)
        retimed = f"{new:8.0f} ({new / run.value - 1:+6.1%})" if new else "    (not re-timed)"
        print(f"{run.id:28s} {run.role:7s} measured {run.value:8.0f}  steady {steady:8.0f} "
              f"({steady / run.value - 1:+6.1%})  makespan {retimed}")


def calibrate_retimed(argv: list[str]) -> int:
    serve = rs._serve
    eager_s = 0.0
    if argv[:1] == ["--eager-ms"]:
        eager_s, argv = float(argv[1]) / 1e3, argv[2:]

    def retimed(run: rs.Run, cal: Calibration) -> Any:
        if _bench(run):
            new, _ = makespan_rate(run, cal, eager_s, steady=False)
            if new is not None:
                return new
        return serve(run, cal)

    rs._serve = retimed  # type: ignore[assignment]
    return calibrate.main(argv)


if __name__ == "__main__":
    mode, rest = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("rows", [])
    if mode == "rows":
        rows(tuple(rest))
    elif mode == "eager":
        rows(tuple(rest[1:]), float(rest[0]) / 1e3)
    elif mode == "calibrate":
        sys.exit(calibrate_retimed(rest))
    else:
        sys.exit(f"unknown mode {mode!r}: rows or calibrate")
