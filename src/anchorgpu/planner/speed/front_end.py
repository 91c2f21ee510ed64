"""The serving front end's start delay in a burst benchmark, read from the run's own published figures. Pure.

``vllm bench serve`` with no ``--request-rate`` sends every request at time 0 (vllm-project/vllm
``vllm/benchmarks/serve.py``, ``--request-rate``: "If this is inf, then all the requests are sent at time 0"), so
its duration is the time the API server takes to hand the burst to the engine plus the engine's work on it. vLLM
0.11's chat front end renders every request's chat template on the API server's event loop and then awaits
tokenisation on a one-thread executor (``vllm/entrypoints/openai/serving_engine.py``, ``_preprocess_chat``;
``ThreadPoolExecutor(max_workers=1)``), so the whole burst's template work runs before the first request reaches the
engine: vLLM PR #20065 ("when we send 1000 requests to OpenAI server, it internally calls this function 1000 times
which results in 6-8 seconds delay before prompts actually are started to process") cached one part of it; the rest
is not costed by any source read here (benchmarks/hardening/stop60_vgm2.md), so the planner does not predict it.
A row whose page states the delay through its own latencies carries those figures (``front_end``); the burst it is
compared with is then the planned engine phase after the delay the page shows, not a delay the planner invents.

The reading (stop60_vgm2.md, benchmarks/gpustack_frontend_delay.py): in a burst of requests of a few output tokens
(128-token prompts, 4 outputs), a request's first token comes almost when its prompt is in, so first tokens come out
at the pace the engine works through the queue. If the engine starts ``t0`` after the burst was sent and then takes
``T``, first tokens spread evenly over it: mean TTFT = ``t0 + T/2`` and the duration ``t0 + T``, so
``t0 = 2 x mean TTFT - duration``. The P99 TTFT, ``t0 + 0.99 T``, checks it from a third figure of the page
(:func:`p99_check_s`).

A ShareGPT burst of 1,000 requests whose engine holds them all at once (vLLM's ``max_num_seqs`` 1,024 on an H100)
admits every prompt in one wave, so its first tokens spread over the prefill alone, ``Tp``, after the same start:
mean TTFT = ``t0 + Tp/2`` and P99 = ``t0 + 0.99 Tp``, so ``Tp = (P99 - mean) / 0.49`` and ``t0 = mean - Tp/2``
(``reading: "one_wave"``; benchmarks/gpustack_frontend_delay.py; the median TTFT, ``t0 + Tp/2`` as well, checks it).
A ShareGPT burst run in waves of 256 (vLLM on an A100) gives no such spread; its row carries the figures of the same
page's 128-token burst (same engine, model, chat template, host and 1,000 requests), read as above."""

from __future__ import annotations

from typing import Any

__all__ = ["front_end_delay_s", "one_wave_prefill_s", "p99_check_s"]


def front_end_delay_s(row: dict[str, Any]) -> float:
    """Seconds the burst waited before the engine started on it, from the row's ``front_end`` figures (the page's
    'Benchmark duration (s)', 'Mean TTFT (ms)' and, for a one-wave reading, 'P99 TTFT (ms)', in seconds):
    ``2 x mean TTFT - duration``, or ``mean - Tp/2`` for ``reading: "one_wave"``; 0.0 for a row without them. A
    negative reading would say the premise (first tokens spread evenly after one start) does not hold.

    >>> front_end_delay_s({"front_end": {"benchmark_duration_s": 26.79, "mean_ttft_s": 19.45146}})  # VGA-Q14-128
    12.11292
    >>> front_end_delay_s({"front_end": {"reading": "one_wave", "benchmark_duration_s": 52.39,  # VGM-GLMA-H100-SG
    ...                                  "mean_ttft_s": 16.38388, "p99_ttft_s": 19.97518}})
    12.719288
    """
    fe = row.get("front_end")
    if not fe:
        return 0.0
    if fe.get("reading") == "one_wave":  # every prompt admitted at once: first tokens over the prefill alone
        t0 = float(fe["mean_ttft_s"]) - one_wave_prefill_s(row) / 2.0
    else:
        t0 = 2.0 * float(fe["mean_ttft_s"]) - float(fe["benchmark_duration_s"])
    if t0 < 0.0:
        raise ValueError(f"front_end: a start of {t0:.3f} s read from mean TTFT {fe['mean_ttft_s']} s and duration "
                         f"{fe['benchmark_duration_s']} s: first tokens were not spread evenly after one start")
    return round(t0, 6)


def one_wave_prefill_s(row: dict[str, Any]) -> float:
    """The prefill ``Tp`` over which a one-wave burst's first tokens spread: ``(P99 TTFT - mean TTFT) / 0.49``."""
    fe = row["front_end"]
    return (float(fe["p99_ttft_s"]) - float(fe["mean_ttft_s"])) / 0.49


def p99_check_s(row: dict[str, Any]) -> float:
    """The P99 TTFT the short-burst reading implies, ``t0 + 0.99 T`` with ``T = duration - t0``, to set beside the
    page's own ``p99_ttft_s`` (a one-wave reading uses the P99 itself; its check is the median, ``t0 + Tp/2``)."""
    fe = row["front_end"]
    if fe.get("reading") == "one_wave":
        raise ValueError("p99_check_s: a one-wave reading is made from the P99 TTFT; check its median instead")
    t0 = front_end_delay_s(row)
    return t0 + 0.99 * (float(fe["benchmark_duration_s"]) - t0)
