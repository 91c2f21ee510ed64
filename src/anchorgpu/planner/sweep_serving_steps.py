"""The serving sweep's step forms over the pairs (:mod:`anchorgpu.planner.sweep_serving`): speed.batching's steady
step, a user's step between its tokens, the first token and the request's cycle, in array form over a
:class:`~anchorgpu.planner.sweep_serving_ticks.Ticks` (one entry a pair, ``(1, P)``); the sweep times the grid with
them, the per-user limit search its rounds. Split from sweep_serving (recfast, stop 59)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from anchorgpu.planner.sweep_serving_ticks import Ticks

__all__ = ["little_ttft", "request_step", "steady_step", "steady_steps", "time_to_first_token", "user_output_tokens"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _others_output_tokens(batch: FloatArray, out_tokens: int) -> FloatArray | int:
    """:func:`~anchorgpu.planner.speed.batching.others_output_tokens` of every pair's sequences ``(1, P)``: the
    outputs a user's steady state between its tokens is timed at (the other ``B - 1`` users' prompts only)."""
    if out_tokens == 1:
        return out_tokens
    others = batch - 1.0
    return np.divide(out_tokens * batch, others, out=np.full_like(batch, np.inf), where=others > 0)


def user_output_tokens(batch: FloatArray, prompt: int, out_tokens: int, budget_tokens: FloatArray
                        ) -> FloatArray | int:
    """The outputs a user's step between its tokens is timed at ``(1, P)``: :func:`_others_output_tokens`, or past
    the token budget :func:`~anchorgpu.planner.speed.batching.prompt_bound_output_tokens` (``T - B`` prompt tokens a
    step)."""
    others = _others_output_tokens(batch, out_tokens)
    if out_tokens <= 1:
        return others
    bound = (batch > 1.0) & (budget_tokens > batch) & (batch * (1.0 + prompt / out_tokens) > budget_tokens)
    if not bound.any():
        return others
    room = np.where(bound, budget_tokens - batch, 1.0)
    return np.where(bound, np.maximum(others, batch * prompt / room), others)


def little_ttft(ttft: FloatArray, batch: FloatArray, out_tokens: int, step: FloatArray,
                 user_step: FloatArray) -> FloatArray:
    """:func:`~anchorgpu.planner.speed.batching.little_ttft_s` in place on ``ttft`` ``(W, K, 1, P)`` where the pairs
    run more than one sequence ``batch`` ``(1, P)``: the request's ``O`` mean steps less its ``O - 1`` between tokens
    (one output: all of its step), at least its own chunks."""
    many = batch > 1.0
    if many.any():
        queued = out_tokens * step - (out_tokens - 1) * user_step
        np.copyto(ttft, np.maximum(ttft, queued), where=many)
    return ttft


def request_step(step: FloatArray, ttft: FloatArray, user_step: FloatArray, out_tokens: int) -> FloatArray:
    """:func:`~anchorgpu.planner.speed.request_cycle.request_step_s` in place on ``step`` ``(W, K, 1, P)``: the mean step
    the output rate is timed at, at least the request's time to first token and ``O - 1`` gaps over ``O``."""
    cycle = user_step * (out_tokens - 1)
    cycle += ttft
    cycle /= out_tokens
    return np.maximum(step, cycle, out=step)


def steady_step(ticks: Ticks, batch: FloatArray, prompt: int, out_tokens: int | FloatArray,
                 budget_tokens: FloatArray, out: FloatArray) -> FloatArray:
    """Seconds per step at the steady state (speed.serving._steady) of the pairs ``(1, P)`` (:func:`tick_pairs`, in
    order of their sequences a replica), written into ``out`` ``(W, K, 1, P)``: :func:`steady_steps` of one."""
    steady_steps(ticks, batch, prompt, ((out_tokens, out),), budget_tokens)
    return out


def steady_steps(ticks: Ticks, batch: FloatArray, prompt: int,
                  steps: Sequence[tuple[int | FloatArray, FloatArray]], budget_tokens: FloatArray) -> None:
    """Seconds per step at the steady state (speed.serving._steady) of the pairs ``(1, P)`` (:func:`tick_pairs`, in
    order of their sequences a replica) at each ``(out_tokens, out)`` of ``steps``, written into its ``out``
    ``(W, K, 1, P)``: B*I/O prompt tokens a step, spread over every step when they fill a chunk, else whole chunks
    (up to the step's token budget) in that share of the steps, a step without a chunk being the chunk step's light
    tick. Each form computed only over the pairs from the first that takes it to the last (those that spread their
    prompts run the most sequences: a few, at the end). The ticks with and without a chunk do not read the outputs
    (the chunk is the budget's, the micro-batches the sequences'), so they are formed once for every step, over the
    pairs from the first that any step chunks to the last, and each step takes its own span of them: the same
    elementwise operations on the same values, so the same figures as a step formed alone."""
    chunk = np.maximum(1.0, np.minimum(float(prompt), budget_tokens - np.floor(batch)))
    forms = []
    for out_tokens, _ in steps:
        prefill_avg = batch * prompt / out_tokens
        share = prefill_avg / chunk
        # over pipeline stages, between one chunk a cycle and one a micro-batch: ``share`` micro-batches carry a chunk
        spread = ((share >= 1.0) & ((ticks.pp <= 1) | (share >= ticks.groups(batch))))[0]
        forms.append((prefill_avg, share, spread, np.flatnonzero(spread), np.flatnonzero(~spread)))
    chunked = [form[4] for form in forms if form[4].size]
    if chunked:  # the ticks with and without a chunk, once over every step's chunked span
        start, stop = min(int(at[0]) for at in chunked), max(int(at[-1]) for at in chunked) + 1
        groups_all, heavy_all, light_all = ticks.part(slice(start, stop)).chunk_ticks(batch[:, start:stop],
                                                                                      chunk[:, start:stop])
        chunked_left = len(chunked)
    for (_, out), (prefill_avg, share, spread, spread_at, mixed_at) in zip(steps, forms, strict=True):
        if mixed_at.size == 0:
            np.copyto(out, ticks.step(batch, prefill_avg))
            continue
        at = _span(mixed_at)
        own = slice(at.start - start, at.stop - start)
        chunked_left -= 1
        # the chunk step and the step without one write over these ticks: a copy where another step reads them still
        heavy, light = ((heavy_all[..., own], light_all[..., own]) if not chunked_left
                        else (heavy_all[..., own].copy(), light_all[..., own].copy()))
        part, batch_at, share_at = ticks.part(at), batch[:, at], share[:, at]
        mixed = part.chunk_step(groups_all[..., own], heavy, light, batch_at, chunks=np.maximum(share_at, 1.0))
        weight = np.minimum(share_at, 1.0)
        mixed *= weight
        light = part.decode_only_step(batch_at, light)  # a step without a chunk
        light *= 1.0 - weight
        mixed += light
        out[..., at] = mixed
        if spread_at.size:
            _spread_step(ticks, batch, prefill_avg, spread, spread_at, out)


def _spread_step(ticks: Ticks, batch: FloatArray, prefill_avg: FloatArray, spread: BoolArray, spread_at: IntArray,
                 out: FloatArray) -> None:
    """The step with the prompts spread over every step, written into ``out`` at the pairs ``spread_at`` (``spread``
    where true): formed over the span from the first to the last, or, where they are fewer than half of it (they
    interleave with the chunked pairs), at those pairs alone (every term taken there): the same elementwise
    operations on the same values either way, on fewer pairs."""
    at = _span(spread_at)
    if 2 * spread_at.size >= at.stop - at.start:
        np.copyto(out[..., at], ticks.part(at).step(batch[:, at], prefill_avg[:, at]), where=spread[at])
        return
    out[..., spread_at] = ticks.taken(spread_at).step(batch[:, spread_at], prefill_avg[:, spread_at])


def _span(positions: IntArray) -> slice:
    """The slice from the first of ``positions`` (sorted, not empty) to the last."""
    return slice(int(positions[0]), int(positions[-1]) + 1)


def time_to_first_token(ticks: Ticks, budget_tokens: FloatArray, batch: FloatArray, prompt: int,
                         out: FloatArray) -> FloatArray:
    """Seconds to the first token, written into ``out`` ``(W, K, C, L)``: the prompt's chunks, each sharing a step
    with the other running sequences.

    A chunk's step is its micro-batch's way through every stage, ``pp`` ticks that carry it (speed.serving._step
    with ``first_token``): never shorter than what one stage does in that time, the chunk's tick and the other
    micro-batches' ticks without it (fewer tokens, so shorter: each term of a tick grows with its tokens, the
    elementwise one strictly, by far more than a rounding), so the ticks without the chunk are not formed."""
    others = batch - 1.0
    room = np.maximum(1.0, budget_tokens - others)
    chunks = np.ceil(prompt / room)
    chunk = prompt / chunks  # the budget's chunks and the remainder, timed as that many even ones (speed.batching._ttft)
    through = ticks.tick(others / ticks.groups(others), chunk)
    through *= ticks.pp
    return np.multiply(ticks.hosted(through, others, chunk), chunks, out=out)
