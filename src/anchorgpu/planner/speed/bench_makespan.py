"""trtllm-bench's throughput: output tokens over the whole run, every request queued at once. Pure.

What the benchmark reports (NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py``,
``StatsKeeper.generate_statistics_summary``: ``total_latency_ns`` from the first request's start to the last one's end;
``statistics.py``, ``BenchmarkStatistics``: output throughput = total output tokens / total latency) is a makespan of
a fixed number of equal requests (the perf-overview page's ``$num_requests`` for the shape, ``--input-stdev=0
--output-stdev=0``): the run fills, holds and drains, and its equal requests are admitted in groups that finish
together. A steady state of a full batch is that figure only when the requests are many times the batch and arrive
evenly. Pipeline stages multiply the batch (``max_batch_size`` is per micro-batch and the KV cache of every stage
holds its layers only), so the page's PP 4 and PP 8 runs hold 1.1-1.9 batches of requests (Llama 3.3 70B TP 1 PP 8
1000/2000: 1,332 running of 1,500); on one stage the small-MoE Blackwell runs hold 1-2.5 (Qwen3-30B-A3B GB200
128/2048: 1,496 of 3,000), and a prompt rides in 7% of the run's steps where a steady state puts one in 87.5%. Every
row that states ``bench_requests`` and is not restated from attention DP as TP (:func:`times_row`) is timed here, step by
step (a cycle of ``pp`` micro-batches over stages), at every ``pp``: the same measurement modelled the same way. The
planner's own serving figures stay steady states (a server under a steady load).
Findings: benchmarks/hardening/stop62_rtxpp.md, stop62_makespan62.md.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import lru_cache
from typing import Any

from anchorgpu.planner.speed.batching import _attention_flops, _steady, serving_estimate
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.step_constants import ServingSetup, _pair

__all__ = ["attention_dp_group_plan", "bench_cycle_groups", "bench_schedule", "bench_steady_output_tokens_per_s",
           "staged_bench_output_tokens_per_s", "times_row"]

CYCLE_GROUPS = 24
"""Cycles of one kind (with prompts admitted, without) are timed in up to this many groups of equal cycle counts, each
at its mean decodes and prompts: a cycle's time is smooth in both, and a run of 10^4 cycles timed one by one would
make a refit slow (stop 61's ``STEP_GROUPS``, which moved no perf-overview row by 0.1% against 96)."""


def times_row(r: dict[str, object]) -> bool:
    """Whether a measured row is timed over its trtllm-bench makespan: it states ``bench_requests`` (the page's
    ``$num_requests``) and is not restated from attention DP as TP (``attention_dp_weights`` over more than one
    GPU), at any ``pp``.

    An attention-DP row keeps its steady state: its ranks each run their own scheduler (their own ``max_batch_size``
    and ``max_num_tokens``, ``tp x max_batch_size`` admitted to the group), which is not the schedule of the TP
    group it is timed as, and its step at a part batch is the TP restatement's, which stop 61 (``stop61_makespan.md``
    section 3) and stop 62 (``stop62_rtxpp.md`` section 4, ``stop62_makespan62.md``) found too slow there.
    At ``tp`` 1 nothing is restated: attention DP's group is one rank (``Mapping``: the attention-DP size is
    ``tp_size``), whose own scheduler, batch cap and token budget are the engine's, so it is timed like any other
    row (Llama 4 Scout on one B200 / GB200; stop 63, ``stop63_trtmoe63.md``).

    >>> times_row({"bench_requests": 3000, "pp": 1}), times_row({"bench_requests": 3000, "attention_dp_weights": True})
    (True, False)
    >>> times_row({"bench_requests": 3000, "attention_dp_weights": True, "tp": 1})
    True
    """
    if "bench_requests" not in r:
        return False
    return not r.get("attention_dp_weights") or r.get("tp") == 1


def bench_schedule(requests: int, prompt_tokens: int, output_tokens: int, batch: int,
                   token_budget: int) -> Counter[tuple[int, int]]:
    """Cycles of ``requests`` equal requests all queued at once, counted by (sequences decoding, prompts admitted).

    TensorRT-LLM as trtllm-bench runs it: chunked prefill off (trtllm-bench's default; the page's commands do not
    set it), so a micro-batch admits whole prompts first come first served while its running sequences plus the
    prompts fit its token budget (``tensorrt_llm/_torch/pyexecutor/scheduler.py``, the capacity and micro-batch
    schedulers); the engine runs at most ``batch`` at once (GUARANTEED_NO_EVICT: what the KV cache holds at full
    length, up to ``max_batch_size`` a micro-batch times the stages). Over ``pp`` stages a cycle is ``pp``
    micro-batches, each with its own budget (``token_budget`` here is the cycle's: ``pp`` times the micro-batch's);
    a prompt over it runs alone. A request admitted in cycle ``s`` gives its first token in ``s`` and its last in
    ``s + output_tokens - 1``.

    >>> steps = bench_schedule(4, 10, 3, batch=2, token_budget=100)
    >>> sorted(steps.items())  # two waves of two, each: admit (first token), two decodes (the last frees the slots)
    [((0, 2), 2), ((2, 0), 4)]
    """
    ends: dict[int, int] = {}
    running = admitted = done = cycle = 0
    counts: Counter[tuple[int, int]] = Counter()
    while done < requests:
        cycle += 1
        tokens, k = running, 0
        while admitted + k < requests and running + k < batch and tokens + prompt_tokens <= token_budget:
            tokens, k = tokens + prompt_tokens, k + 1
        if k == 0 and running == 0:  # a prompt over the budget runs alone
            k = 1
        counts[(running, k)] += 1
        admitted, running = admitted + k, running + k
        ends[cycle + output_tokens - 1] = ends.get(cycle + output_tokens - 1, 0) + k
        finished = ends.pop(cycle, 0)
        running, done = running - finished, done + finished
    return counts


@lru_cache(maxsize=1024)
def bench_cycle_groups(requests: int, prompt_tokens: int, output_tokens: int, batch: int,
                       token_budget: int) -> tuple[tuple[float, float, int], ...]:
    """:func:`bench_schedule`'s cycles as (mean sequences decoding, mean prompts admitted, cycles): those with prompts
    and those without, each in up to :data:`CYCLE_GROUPS` groups of equal cycle counts by sequences decoding
    (memoised: the schedule depends on no speed constant).

    >>> groups = bench_cycle_groups(1500, 1000, 2000, 1332, 8 * 3332)  # 1,332 run at once: a wave of 168 after
    >>> sum(n for _, _, n in groups), sum(k * n for _, k, n in groups)  # cycles (~2 x 2,000), every request once
    (4006, 1500.0)
    """
    counts = bench_schedule(requests, prompt_tokens, output_tokens, batch, token_budget)
    out: list[tuple[float, float, int]] = []
    for with_prompt in (True, False):
        cycles = sorted((b, k, n) for (b, k), n in counts.items() if (k > 0) == with_prompt)
        total = sum(n for _, _, n in cycles)
        group: list[tuple[int, int, int]] = []
        for i, (b, k, n) in enumerate(cycles):
            group.append((b, k, n))
            held = sum(x[2] for x in group)
            if held * CYCLE_GROUPS >= total or i == len(cycles) - 1:
                out.append((sum(x[0] * x[2] for x in group) / held, sum(x[1] * x[2] for x in group) / held, held))
                group = []
    return tuple(out)


def staged_bench_output_tokens_per_s(plan: object, setup: ServingSetup, saturation: int, cal: Calibration, *,
                                     requests: int, prompt_tokens: int, output_tokens: int) -> float:
    """Output tokens a second over the makespan of ``requests`` equal requests queued at once on one replica of
    ``setup.pp`` stages (:func:`bench_schedule`, at most ``saturation`` running), each cycle timed as the steady state
    times one: a cycle admitting ``k`` prompts beside ``b`` decodes is :func:`~anchorgpu.planner.speed.batching.
    _steady` of ``b + k`` sequences carrying ``k`` prompts (the admitted ones give their first token in it), one
    without is ``b`` decodes on the captured graph of the next listed batch size, as the steady state's decode
    cycles are."""
    model, gpu = plan.model, plan.gpu  # type: ignore[attr-defined]
    c, ci = _pair(model, gpu, setup, cal)
    attn = _attention_flops(model, c, prompt_tokens, output_tokens, cal)
    sizes = setup.graph_batch_sizes
    total_s = 0.0
    for decoding, k, n in bench_cycle_groups(requests, prompt_tokens, output_tokens, max(1, saturation),
                                             setup.pp * setup.max_num_batched_tokens):
        if k:
            seqs = decoding + k
            total_s += n * _steady(setup, c, ci, max(1, round(seqs)), prompt_tokens, seqs / k, attn)[0]
        else:
            padded = next((s for s in sizes if s >= decoding), 0) if sizes else 0
            total_s += n * _step(setup, c, decoding, 0.0, attn[0], 0.0, padded_batch=padded, head_skip=0.0)[0]
    return requests * output_tokens / total_s


def bench_steady_output_tokens_per_s(plan: object, setup: ServingSetup, saturation: int, cal: Calibration, *,
                                     requests: int, prompt_tokens: int, output_tokens: int) -> float:
    """The steady state a row that keeps it (restated from attention DP as TP, :func:`times_row`) is timed at when
    the engine's saturation exceeds the run's ``requests``: trtllm-bench queues ``$num_requests`` and no more, so at
    most that many run at once, whatever the batch cap and the KV cache allow (the makespan's schedule is bounded
    the same way); within the requests it is the plan's own steady state at ``saturation``.
    Findings: benchmarks/hardening/stop63_trtmoe63.md."""
    model, gpu = plan.model, plan.gpu  # type: ignore[attr-defined]
    concurrency = plan.workload.concurrency or 1  # type: ignore[attr-defined]
    est = serving_estimate(model, gpu, setup, prompt_tokens, output_tokens, concurrency,
                           max(1, min(saturation, requests)), cal)
    return est.max_output_tokens_per_s


def attention_dp_group_plan(plan: Any) -> Any:
    """``plan`` with the limits its attention-DP group admits: ``tp x`` each rank's ``max_batch_size`` and
    ``max_num_tokens`` (TensorRT-LLM ``_torch/pyexecutor/py_executor.py`` ``_fetch_new_requests``:
    ``total_max_num_active_requests = self.dist.tp_size * self.max_num_active_requests`` under
    ``enable_attention_dp``; each rank runs its own scheduler with the engine's limits; trtllm-bench sizes them for
    the ``--tp`` engine, ``tuning.py``, knowing nothing of attention DP). Only the timed saturation reads them: the
    plan's memory (the KV cache, one rank's transients) is the rank's, as planned."""
    w, tp = plan.workload, plan.layout.tp
    if tp <= 1 or not (w.max_num_seqs and w.max_num_batched_tokens):
        return plan
    return replace(plan, workload=replace(w, max_num_seqs=w.max_num_seqs * tp,
                                          max_num_batched_tokens=w.max_num_batched_tokens * tp))
