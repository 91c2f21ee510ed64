"""A serving request's cycle by Little's law: what the output rate is timed at, and how long users beyond what the
engine runs wait for admission.

``B`` users of a closed loop each send a request of ``O`` output tokens once their last one ends, so a replica serving
``rate`` output tokens a second gives each of them ``B * O / rate`` seconds a request, of which the engine runs the
time to first token and ``O - 1`` gaps of one time per output token. Two consequences the estimate
(:func:`~anchorgpu.planner.speed.batching.serving_estimate`) reads:

- the rate's mean step is at least ``(TTFT + (O - 1) * TPOT) / O`` (:func:`request_step_s`);
- a one-token request (``O = 1``) has no gap: its first token ends it, so its time to first token is the whole of its
  mean step (64 users of 1,000 + 1 tokens on an H100 take 1.31 s a request, 8 budget-full steps of prompts; their
  0.028-s own chunks alone would have 64 requests end every 0.028 s, 2,285 tok/s, where the steps give 49): the
  estimate applies :func:`~anchorgpu.planner.speed.batching.little_ttft_s` at every ``O``, ``O = 1`` included;
- users beyond the engine's saturation wait the rest of their cycle in its queue (:func:`admission_wait_s`).
"""

from __future__ import annotations

__all__ = ["admission_wait_s", "request_step_s"]


def request_step_s(step_s: float, ttft_s: float, tpot_s: float, output: int) -> float:
    """The mean step a replica's output rate is timed at: the steady state's ``step_s``, or where a request's time to
    first token and its ``O - 1`` gaps take longer than ``O`` such steps, that time over ``O``. By Little's law ``B``
    users of a closed loop emit ``B * O`` tokens a request, so ``B * O / (TTFT + (O - 1) * TPOT)`` tokens a second;
    the steady state's mean step spreads a prompt longer than the engine's token budget over the request's ``O``
    steps as if one step held it, while the prompt's own chunks (``batching._ttft``) are budget-sized steps, each with
    its own fixed cost and weight reads (Llama-3.1-8B on one L40S, a 5,000-token prompt and 2 outputs for one user:
    three 2,048-token chunks, 0.359 s, then a 0.022-s decode, 5.2 tok/s, where two 2,501-token mean steps gave 5.8).

    >>> request_step_s(0.1726, 0.3593, 0.0224, 2)  # (0.3593 + 0.0224) / 2
    0.19085
    >>> request_step_s(0.2, 0.1, 0.2, 10)  # the steady state's own
    0.2
    """
    cycle = (ttft_s + (output - 1) * tpot_s) / output
    return cycle if cycle > step_s else step_s


def admission_wait_s(concurrency: int, output: int, rate: float, ttft_s: float, tpot_s: float) -> float:
    """Seconds a request waits in the engine's queue before its admission where ``concurrency`` users outnumber what
    the engine runs (its saturation): by Little's law ``C`` users of a closed loop, served at ``rate`` output tokens
    a second, each take ``C * O / rate`` a request, of which the engine runs ``TTFT + (O - 1) * TPOT``; the rest is
    the wait (256 users of 1,000 + 200 on one H100 with max_num_seqs 64: 12.96 s a request, 3.24 s of it running).

    >>> round(admission_wait_s(256, 200, 3951.4, 0.0342, 0.0161), 2)
    9.72
    """
    wait = concurrency * output / rate - ttft_s - (output - 1) * tpot_s
    return wait if wait > 0.0 else 0.0
