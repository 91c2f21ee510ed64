"""trtllm-bench rows over pipeline stages, timed over the run's makespan (``speed.bench_makespan``).

trtllm-bench reports total output tokens over the time from the first request's start to the last one's end
(NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py``, ``generate_statistics_summary``), of the
``$num_requests`` equal requests the perf-overview page queues at once (docs/source/performance/perf-overview.md at
commit 00f3768, "Preparing a Dataset"). Over pipeline stages the engine runs so many at once that the RTX PRO 6000
PP 4 and PP 8 runs hold 1.1-3.9 batches: their fill and drain, at part batches, are a large share of the run
(benchmarks/hardening/stop62_rtxpp.md).
"""

from __future__ import annotations

import pytest

from anchorgpu.planner.speed.bench_makespan import bench_cycle_groups, bench_schedule
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _reservation, _serve_plan, load_runs, predict

RUNS = {run.id: run for run in load_runs()}

# perf-overview.md @00f3768, "Preparing a Dataset": $num_requests for each (ISL, OSL)
PAGE_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
                 (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}


def _steady(run_id: str) -> float:
    run = RUNS[run_id]
    r = run.row
    return float(plan_performance(_serve_plan(run_id), kv_reservation=_reservation(r),
                                  graph_batch_sizes=tuple(r.get("graph_batch_sizes", ())),
                                  engine=engine_of(run))["max_output_tokens_per_s"])


def test_every_perf_overview_row_states_the_pages_requests() -> None:
    rows = [run.row for run in RUNS.values() if "perf-overview.md" in run.row.get("source", "")]
    assert len(rows) == 328
    for r in rows:
        assert r["bench_requests"] == PAGE_REQUESTS[(r["prompt_tokens"], r["output_tokens"])], r["id"]


@pytest.mark.parametrize(("requests", "prompt", "output", "batch", "budget"),
                         [(1500, 1000, 2000, 1332, 8 * 3332), (3000, 128, 2048, 1785, 8 * 2048), (7, 5000, 3, 2, 100)])
def test_the_schedule_admits_every_request_once_and_decodes_the_rest_of_its_tokens(
        requests: int, prompt: int, output: int, batch: int, budget: int) -> None:
    counts = bench_schedule(requests, prompt, output, batch, budget)
    assert sum(k * n for (_, k), n in counts.items()) == requests
    assert sum(b * n for (b, _), n in counts.items()) == requests * (output - 1)  # each decodes O - 1 more cycles
    assert max(b + k for b, k in counts) <= max(batch, 1)
    groups = bench_cycle_groups(requests, prompt, output, batch, budget)
    assert sum(n for *_, n in groups) == sum(counts.values())


# (row, measured output tok/s): perf-overview.md @00f3768, the Llama 3.3 70B RTX 6000 Pro table, TP1 PP8 (FP4)
PP8_ROWS = [("P70-RTXTP1PP8-128/4096", 7352), ("P70-RTXTP1PP8-1000/1000", 8166), ("P70-RTXTP1PP8-1000/2000", 6943),
            ("P70-RTXTP1PP8-2048/2048", 6078)]


@pytest.mark.parametrize(("run_id", "measured"), PP8_ROWS)
def test_pp8_rows_are_timed_over_the_makespan_below_their_steady_state(run_id: str, measured: float) -> None:
    assert RUNS[run_id].value == measured
    steady, timed = _steady(run_id), predict(RUNS[run_id])
    assert timed < 0.9 * steady  # 1.1-1.6 batches of requests: the fill and the drain cost at least 10%
    assert abs(timed / measured - 1) < abs(steady / measured - 1)
    assert abs(timed / measured - 1) < 0.25


@pytest.mark.parametrize("run_id", ["P70-RTXTP1PP1-128/4096", "PQ235-RTXTP2PP4-128/2048", "P70-B200-128/4096"])
def test_one_stage_and_attention_dp_rows_keep_the_steady_state(run_id: str) -> None:
    # one stage: stop 61 did not keep the makespan there (stop61_makespan.md); attention DP restated as TP: its
    # ranks' own schedules are not what the row is timed as
    assert predict(RUNS[run_id]) == pytest.approx(_steady(run_id), rel=1e-9)
