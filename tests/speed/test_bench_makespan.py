"""trtllm-bench rows, timed over the run's makespan (``speed.bench_makespan``) at every ``pp``.

trtllm-bench reports total output tokens over the time from the first request's start to the last one's end
(NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py``, ``generate_statistics_summary``), of the
``$num_requests`` equal requests the perf-overview page queues at once (docs/source/performance/perf-overview.md at
commit 00f3768, "Preparing a Dataset"). Over pipeline stages the engine runs so many at once that the RTX PRO 6000
PP 4 and PP 8 runs hold 1.1-3.9 batches: their fill and drain, at part batches, are a large share of the run
(benchmarks/hardening/stop62_rtxpp.md); on one stage the small-MoE Blackwell runs hold 1-2.5, and their equal
requests are admitted in groups, so few steps carry a prompt (benchmarks/hardening/stop62_makespan62.md).
"""

from __future__ import annotations

import pytest

from anchorgpu.planner.speed.bench_makespan import (
    attention_dp_group_plan,
    bench_cycle_groups,
    bench_schedule,
    times_row,
)
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.row_engines import trtllm_bench_engine
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import _graph_sizes, _reservation, _serve_plan, load_runs, predict
from anchorgpu.planner.speed.serving_plan import serving_saturation

RUNS = {run.id: run for run in load_runs()}

# perf-overview.md @00f3768, "Preparing a Dataset": $num_requests for each (ISL, OSL)
PAGE_REQUESTS = {(128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
                 (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000}


def _steady(run_id: str) -> float:
    run = RUNS[run_id]
    r = run.row
    return float(plan_performance(_serve_plan(run_id), kv_reservation=_reservation(r),
                                  graph_batch_sizes=_graph_sizes(r, _serve_plan(run_id)),
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


@pytest.mark.parametrize("run_id", ["PL4S-H100-1000/2000"])
def test_attention_dp_rows_keep_the_steady_state(run_id: str) -> None:
    # attention DP restated as TP: its ranks' own schedules are not what the row is timed as (here the KV cache
    # binds, not the group's limits)
    assert RUNS[run_id].row["attention_dp_weights"] and not times_row(RUNS[run_id].row)
    assert predict(RUNS[run_id]) == pytest.approx(_steady(run_id), rel=1e-9)


def test_an_attention_dp_group_admits_tp_times_a_ranks_batch() -> None:
    """perf-overview.md @00f3768, Llama 4 Maverick FP8 on 8 H200, 128/128: 63,994 output tok/s measured; trtllm-bench
    caps the engine at 4,096 sequences, and under attention DP each of the 8 ranks takes that cap
    (``_fetch_new_requests``: ``tp_size * max_num_active_requests``)."""
    run = RUNS["PL4M-H200-128/128"]
    r, p = run.row, _serve_plan(run.id)
    group = attention_dp_group_plan(p)
    assert (group.workload.max_num_seqs, group.workload.max_num_batched_tokens) == (8 * 4096, 8 * 8192)
    assert group.breakdown == p.breakdown  # the memory is the rank's, as planned
    _, _, sat = serving_saturation(group, 128, 128, calibration(), _reservation(r), _graph_sizes(r, p),
                                   engine=engine_of(run))
    assert sat > 4096
    timed, steady = predict(run), _steady(run.id)
    assert timed > 1.1 * steady and abs(timed / run.value - 1) < 0.25 < abs(steady / run.value - 1)


def test_an_attention_dp_steady_state_runs_at_most_the_runs_requests() -> None:
    """perf-overview.md @00f3768, Qwen3-235B-A22B NVFP4 on 8 B200, 1000/2000: 34,105 output tok/s measured, 1,500
    requests queued; trtllm-bench's cap (2,560) and the KV cache would run more at once than the run ever has."""
    run = RUNS["PQ235-B200-1000/2000"]
    r, p = run.row, _serve_plan(run.id)
    _, (_, cap), sat = serving_saturation(p, r["prompt_tokens"], r["output_tokens"], calibration(), _reservation(r),
                                          _graph_sizes(r, p), engine=engine_of(run))
    assert r["bench_requests"] == 1500 < sat <= cap and not times_row(r)
    timed, steady = predict(run), _steady(run.id)
    assert timed < 0.9 * steady  # the steady state at 1,500 sequences, not at 2,560
    assert abs(timed / run.value - 1) < 0.25 < abs(steady / run.value - 1)


@pytest.mark.parametrize("run_id", ["PL4S-GB200-128/128", "PL4S-B200-1000/2000"])
def test_attention_dp_over_one_gpu_is_timed_over_the_makespan(run_id: str) -> None:
    # Llama 4 Scout on one B200 / GB200 (perf-overview.md @00f3768): attention DP over one rank restates nothing,
    # so its scheduler is the engine's and the row is timed like any other (stop63_trtmoe63.md)
    r = RUNS[run_id].row
    assert r["attention_dp_weights"] and r["tp"] == 1 and times_row(r)
    timed, steady, measured = predict(RUNS[run_id]), _steady(run_id), RUNS[run_id].value
    assert timed != pytest.approx(steady, rel=1e-3)
    assert abs(timed / measured - 1) < abs(steady / measured - 1)


def test_a_one_stage_moe_row_admits_its_prompts_in_groups_and_is_timed_so() -> None:
    """perf-overview.md @00f3768, Qwen3-30B-A3B NVFP4 on one GB200, 128/2048: 31,311 output tok/s measured, 3,000
    requests. At the steady state a 128-token prompt rides in 87.5% of the steps, each paying the host's pass in
    series (engine_terms.prompt_step_host_serial): -30.9%. The burst runs two waves, and a prompt rides in under 10% of
    its steps."""
    run_id = "PQ30-GB200-128/2048"
    run, r = RUNS[run_id], RUNS[run_id].row
    assert run.value == 31311 and r["pp"] == 1 and times_row(r)
    setup, _, sat = serving_saturation(_serve_plan(run_id), 128, 2048, calibration(), _reservation(r),
                                       _graph_sizes(r, _serve_plan(run_id)), True, None, False, engine_of(run))
    counts = bench_schedule(3000, 128, 2048, sat, setup.max_num_batched_tokens)
    assert sum(n for (_, k), n in counts.items() if k) < 0.1 * sum(counts.values())
    steady, timed = _steady(run_id), predict(run)
    assert abs(steady / 31311 - 1) > 0.25
    assert abs(timed / 31311 - 1) < 0.25


def test_the_decode_graphs_stop_at_the_engines_batch_cap() -> None:
    """TensorRT-LLM keeps the listed CUDA graph sizes up to min(max_batch_size, max_num_tokens) and pads to that cap
    above it (model_engine.py ``_filter_cuda_graph_batch_sizes``). Llama 3.1 405B FP8 on 8 H200, 128/2048
    (perf-overview.md @00f3768, 5,348 tok/s measured): trtllm-bench sizes 1,536 sequences and 2,048 tokens a step, so
    the planned 1,187 running pad to 1,536, not the listed 2,048; an attention-DP group pads each rank's batch."""
    run_id = "P405-H200-128/2048"
    r, p = RUNS[run_id].row, _serve_plan(run_id)
    assert trtllm_bench_engine(p.model, p.gpu.memory_bytes, r) == (1536, 2048)
    assert _graph_sizes(r, p)[-3:] == (512, 1024, 1536) and max(r["graph_batch_sizes"]) == 8192
    assert abs(predict(RUNS[run_id]) / 5348 - 1) < 0.25
    adp = RUNS["PQ235-B200-1000/2000"].row
    assert all(size % adp["tp"] == 0 for size in _graph_sizes(adp, _serve_plan("PQ235-B200-1000/2000")))
