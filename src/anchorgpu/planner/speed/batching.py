"""Continuous batching over the serving step (:mod:`anchorgpu.planner.speed.serving`): the mean step of a steady
state, where every request brings its prompt's chunks into the steps that decode the others, the time to first token,
and the figures at a concurrency and at saturation, each with its ceiling. Pure; stdlib only."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import builder, fast_init
from anchorgpu.planner.speed.attention_rate import timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.batching_rules import (  # re-exported: the rules the estimate times by
    _group_chunks,
    _pass_outputs_ratio,
    little_ttft_s,
    others_output_tokens,
    prefill_chunk_share,
    prompt_bound_output_tokens,
)
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.dense_step import _dense_step
from anchorgpu.planner.speed.flops import (
    _ATTENTION_CACHE,
    decode_attention_flops_per_token,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.step_constants import ServingSetup, _pair, _StepConstants
from anchorgpu.units import at_least

__all__ = ["ServingEstimate", "little_ttft_s", "others_output_tokens", "prefill_chunk_share",
           "prompt_bound_output_tokens", "saturated_rates", "serving_estimate"]


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ServingEstimate:
    """Serving figures at the requested concurrency and at saturation, with the ceilings beside them."""

    concurrency: int
    per_replica: int
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    decode_tokens_per_s_per_user: float
    saturation_concurrency: int
    max_output_tokens_per_s: float
    bound: str
    ttft_s_ceiling: float
    tpot_s_ceiling: float
    output_tokens_per_s_ceiling: float
    max_output_tokens_per_s_ceiling: float
    prompts_queue: bool  # past the engine's step budget (prompt_bound_output_tokens): the users' prompts wait


# ServingEstimate(...) once per estimate, its fields by position but the last (each keyword costs a match)
_new_estimate: Callable[..., ServingEstimate] = builder(ServingEstimate, positional=13)


def _steady(setup: ServingSetup, c: _StepConstants, ci: _StepConstants, batch: int, prompt: int, output: float,
            attn: tuple[float, float], even: float = 1.0) -> tuple[float, str, float]:
    """The mean step of a steady state, what bounds it, and its ceiling (the same state under the ideal constants
    ``ci``): ``B`` decodes, and the prompts' chunks in the share of steps that carry one. Over pipeline stages,
    where a step's prompt tokens fill more than one chunk but not one a micro-batch, that many micro-batches of
    each cycle carry a whole chunk (each has its own token budget) rather than every one a slice of them. Under
    expert parallelism wider than TP the ``ep / tp`` replicas of an EP group step together (vLLM's data-parallel
    ranks align their forward passes, padding an idle rank with a dummy one; TensorRT-LLM's attention-DP ranks meet
    at every MoE layer's all-gather), each scheduling its own prompts: a step carries a chunk when any of them has
    one, ``1 - (1 - s) ** (ep / tp)`` of the steps, and then, on average, ``ep / tp * s`` over that many chunks in
    all, ``s`` a replica's own share at the group's mean load. ``even``: what a replica of the group brings to a
    step, on average, over this (the busiest) one's (1.0 where they run alike; :func:`_pass_outputs_ratio`): the
    group's tokens, which its experts serve and its GPUs gather, are the replicas' own, not the busiest one's
    ``ep / tp`` times (:func:`~anchorgpu.planner.speed.serving._tick`'s ``group_ratio``). The LM head runs at the
    last token of each prompt only (``B / O`` prompts end a step: :func:`~anchorgpu.planner.speed.flops.
    unsampled_prompt_share`) and at every decoded token."""
    if setup.pp == 1 and c.routed_share is None:  # a dense model on one stage: the lean step, the same values
        return _dense_steady(setup, c, ci, batch, prompt, output, attn, unsampled_prompt_share(prompt))
    prefill = batch * prompt / output
    skip = unsampled_prompt_share(prompt)
    chunk, share = prefill_chunk_share(batch, prompt, output, setup.max_num_batched_tokens)
    ranks = c.expert_token_scale
    if share >= 1.0 and prefill and setup.pp > 1 and share < min(float(setup.pp), max(1.0, batch)):
        s = _step(setup, c, batch, chunk, attn[0], attn[1], one_chunk=True, ceiling=ci, chunks=share,
                  group_ratio=even, head_skip=skip)
        return s[0], s[5], s[6]
    if share >= 1.0 or not prefill:
        s = _step(setup, c, batch, prefill, attn[0], attn[1] if prefill and prompt else 0.0, ceiling=ci,
                  group_ratio=even, head_skip=skip)
        return s[0], s[5], s[6]
    # expert parallelism wider than TP: the replicas of an EP group run their forward passes aligned (every MoE layer
    # gathers all of them), so a step carries a prompt chunk whenever any of them has one; this replica's chunk
    # sets the step's pace, the others carry theirs as often as their own share says
    mixed_ratio = 1.0
    if ranks > 1.0:
        mean_share = share * even  # a replica's prompts come in proportion to what it runs
        share, chunks_in_step = _group_chunks(mean_share, ranks, setup.adp_balance)
        mixed_ratio = (even * batch + chunks_in_step * chunk / ranks) / (batch + chunk)
    sizes = setup.graph_batch_sizes  # decode-only steps run the first captured graph that holds the batch
    padded = next((size for size in sizes if size >= batch), 0) if sizes else 0
    mixed = _step(setup, c, batch, chunk, attn[0], attn[1], one_chunk=True, ceiling=ci, group_ratio=mixed_ratio,
                  head_skip=skip)
    plain = _step(setup, c, batch, 0.0, attn[0], 0.0, padded_batch=padded, ceiling=ci, group_ratio=even,
                  head_skip=0.0)
    return (share * mixed[0] + (1.0 - share) * plain[0], mixed[5] if share >= 0.5 else plain[5],
            share * mixed[6] + (1.0 - share) * plain[6])


def _dense_steady(setup: ServingSetup, c: _StepConstants, ci: _StepConstants, batch: int, prompt: int, output: float,
                  attn: tuple[float, float], skip: float, bound_read: bool = True) -> tuple[float, str, float]:
    """:func:`_steady` of a dense model on one stage, on the lean step (:func:`~anchorgpu.planner.speed.serving.
    _dense_step`), the same values; ``skip``: the prompt's :func:`~anchorgpu.planner.speed.flops.
    unsampled_prompt_share`, which the caller forms once for every state it times. ``bound_read`` False: the caller
    reads no bound (``""`` stands in for it unless the host sets the pace), so the steps form none."""
    prefill = batch * prompt / output
    room = setup.max_num_batched_tokens - int(batch)
    chunk = 1 if room < 1 else prompt if room > prompt else room  # prefill_chunk_share's clamp, inline
    share = prefill / chunk
    if share >= 1.0 or not prefill:
        return _dense_step(setup, c, batch, prefill, attn[0], attn[1] if prefill and prompt else 0.0, 0.0, ci, skip,
                           bound_read)
    # the bound said is the chunked step's where it is at least half the steps, else the decodes'
    chunked, decodes = _mixed_steps(setup, c, ci, batch, chunk, attn, skip, bound_read and share >= 0.5,
                                    bound_read and not share >= 0.5)
    return (share * chunked[0] + (1.0 - share) * decodes[0], chunked[1] if share >= 0.5 else decodes[1],
            share * chunked[2] + (1.0 - share) * decodes[2])


def _mixed_steps(setup: ServingSetup, c: _StepConstants, ci: _StepConstants, batch: int, chunk: int,
                 attn: tuple[float, float], skip: float, chunked_bound: bool,
                 decode_bound: bool) -> tuple[tuple[float, str, float], tuple[float, str, float]]:
    """The two lean steps a steady state below the token budget mixes: one carrying a prompt chunk with the batch's
    decodes, one of the decodes alone (padded to its CUDA graph's batch); each forms its bound where asked."""
    sizes = setup.graph_batch_sizes
    chunked = _dense_step(setup, c, batch, chunk, attn[0], attn[1], 0.0, ci, skip, chunked_bound)
    decodes = _dense_step(setup, c, batch, 0.0, attn[0], 0.0,
                          next((size for size in sizes if size >= batch), 0) if sizes else 0, ci, 0.0, decode_bound)
    return chunked, decodes


def _dense_steady_between(setup: ServingSetup, c: _StepConstants, ci: _StepConstants, batch: int, prompt: int,
                          output: int, between: float, attn: tuple[float, float],
                          skip: float) -> tuple[float, str, float, float, float]:
    """:func:`_dense_steady` at ``output`` (its step, bound and ceiling) and at ``between`` outputs a prompt (a user's
    steady state with the other users' prompts only: its step and ceiling), the same values as two calls: where both
    states mix chunked and decode-only steps, the two steps are the same (the chunk depends on the prompt and the
    batch alone) and only their shares differ, so they are formed once."""
    if between == output:
        step, bound, top = _dense_steady(setup, c, ci, batch, prompt, output, attn, skip)
        return step, bound, top, step, top
    room = setup.max_num_batched_tokens - int(batch)
    chunk = 1 if room < 1 else prompt if room > prompt else room  # prefill_chunk_share's clamp, inline
    share, share_between = batch * prompt / output / chunk, batch * prompt / between / chunk
    if not (0.0 < share_between and 0.0 < share < 1.0 and share_between < 1.0):
        step, bound, top = _dense_steady(setup, c, ci, batch, prompt, output, attn, skip)
        tpot, _, tpot_top = _dense_steady(setup, c, ci, batch, prompt, between, attn, skip, False)
        return step, bound, top, tpot, tpot_top
    sizes = setup.graph_batch_sizes  # _mixed_steps' two steps, inline
    chunked = _dense_step(setup, c, batch, chunk, attn[0], attn[1], 0.0, ci, skip, share >= 0.5)
    decodes = _dense_step(setup, c, batch, 0.0, attn[0], 0.0,
                          next((size for size in sizes if size >= batch), 0) if sizes else 0, ci, 0.0,
                          not share >= 0.5)
    return (share * chunked[0] + (1.0 - share) * decodes[0], chunked[1] if share >= 0.5 else decodes[1],
            share * chunked[2] + (1.0 - share) * decodes[2],
            share_between * chunked[0] + (1.0 - share_between) * decodes[0],
            share_between * chunked[2] + (1.0 - share_between) * decodes[2])


def _ttft(setup: ServingSetup, c: _StepConstants, ci: _StepConstants, others: int, prompt: int,
          attn: tuple[float, float], group_tokens: float, skip: float) -> tuple[float, float]:
    """The prompt's own chunks and their ceiling (the time to first token of a lone user, and its floor among more:
    :func:`little_ttft_s`), each chunk sharing a step with the ``others``: as many as
    the step's token budget left by their decodes takes, the last one the remainder (vLLM's scheduler gives a running
    prompt ``min(left, token_budget)`` a step), timed as that many chunks of an even share of the prompt.
    ``group_tokens``: under expert parallelism wider than TP, what each other replica of the EP group brings to the
    step on average (its decodes and its share of a chunk; 0: as much as this one). The LM head runs at the prompt's
    last token only, a ``1 / prompt`` share of each chunk's (:func:`~anchorgpu.planner.speed.flops.
    unsampled_prompt_share`: ``skip``, the caller's), and at the others' decoded tokens."""
    budget = setup.max_num_batched_tokens - others
    if budget < 1:
        budget = 1
    chunks = math.ceil(prompt / budget)
    chunk = prompt / chunks  # the budget's chunks and the remainder, timed as that many even ones (burst._prefill_s)
    ratio = 1.0
    if group_tokens and others + chunk:  # this replica's tokens and the others' over ep / tp of these
        ranks = c.expert_token_scale
        ratio = (others + chunk + (ranks - 1.0) * group_tokens) / (ranks * (others + chunk))
    if setup.pp == 1 and c.routed_share is None:  # a dense model on one stage: the lean step, the same values
        one = _dense_step(setup, c, others, chunk, attn[0], attn[1] if chunk and prompt else 0.0, 0.0, ci, skip,
                          False)  # no bound read
        return chunks * one[0], chunks * one[2]
    s = _step(setup, c, others, chunk, attn[0], attn[1] if chunk and prompt else 0.0, one_chunk=True,
              first_token=True, ceiling=ci, group_ratio=ratio, head_skip=skip)
    return chunks * s[0], chunks * s[6]


def serving_estimate(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, prompt_tokens: int, output_tokens: int,
                     concurrency: int, saturation_concurrency: int, cal: Calibration | None = None,
                     pair: tuple[_StepConstants, _StepConstants] | None = None) -> ServingEstimate:
    """TTFT, TPOT and tokens/s at ``concurrency`` (over all replicas) and at ``saturation_concurrency``. A
    concurrency beyond saturation runs the saturation's sequences and queues the rest (as vLLM's scheduler does
    past its KV cache or ``max_num_seqs``): its figures are the saturation's, its queue wait is not in TTFT.
    ``pair``: the step constants of the prediction and the ceiling (``step_constants._pair`` of these arguments),
    where the caller has them. Every argument may be given by position (the plan's estimate: no keyword to match).

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> e = serving_estimate(toy_model(), toy_gpu(), s, prompt_tokens=100, output_tokens=50, concurrency=4,
    ...                      saturation_concurrency=256)
    >>> e.output_tokens_per_s < e.max_output_tokens_per_s <= e.max_output_tokens_per_s_ceiling
    True
    """
    if prompt_tokens < 1 or output_tokens < 1 or concurrency < 1:
        raise InvalidWorkload(said("prompt, output tokens and concurrency must each be at least 1"))
    cal = cal or calibration()
    sat_replica = saturation_concurrency // setup.replicas
    if not sat_replica > 1:  # at_least(sat_replica, 1), inline
        sat_replica = 1
    # beyond saturation the engine runs what its KV cache and sequence cap hold and queues the rest (their wait is
    # not in the time to first token); below it the busiest replica runs ceil(c / replicas) and paces every user
    queued = concurrency > saturation_concurrency
    per_replica = sat_replica if queued else math.ceil(concurrency / setup.replicas)
    c, ci = pair or _pair(model, gpu, setup, cal)
    attn = _attention_flops(model, c, prompt_tokens, output_tokens, cal)
    busy = setup.replicas if queued else concurrency - setup.replicas * (per_replica - 1)
    light = setup.replicas - busy
    even, others, lighter = 1.0, 0.0, 1.0
    if c.expert_token_scale > 1.0:  # an EP group's replicas step together
        if light and per_replica > 1:  # a lighter one brings, and emits, what its passes hold
            lighter = _pass_outputs_ratio(setup, per_replica - 1, per_replica, prompt_tokens, output_tokens)
            # over pipeline stages with no more sequences than stages it runs one micro-batch fewer, the others as
            # full, and a full one's way through every stage sets the pace
            if setup.pp == 1 or per_replica > setup.pp:
                even = 1.0 - light / setup.replicas * (1.0 - lighter)
        # another replica's tokens in a step: its decodes and, on average, its prompts' share of the token budget
        mean = float(sat_replica) if queued else concurrency / setup.replicas
        others = mean + min(mean * prompt_tokens / output_tokens, max(0.0, setup.max_num_batched_tokens - mean))
    # of every state's prompt tokens, the LM head's unsampled share (unsampled_prompt_share, inline; prompt_tokens >= 1)
    skip = 1.0 - 1.0 / prompt_tokens
    lean = setup.pp == 1 and c.routed_share is None  # a dense model on one stage: _steady's lean step, called directly
    # a user's time between its tokens: the same steady state with the other users' prompts only (its own comes
    # before its first token); the tokens/s in all pays every prompt, at ``step``
    # (others_output_tokens, inline)
    between = (output_tokens if output_tokens == 1 else math.inf if per_replica <= 1
               else output_tokens * per_replica / (per_replica - 1))
    # past the engine's token budget every step is full, the prompts queue: a user's step between its tokens holds
    # ``T - B`` prompt tokens, and its wait comes before its first token (prompt_bound_output_tokens, inline: the
    # larger of the two; little_ttft_s)
    budget = setup.max_num_batched_tokens
    prompts_queue = not (per_replica <= 1 or output_tokens <= 1 or budget <= per_replica
                         or per_replica * (1.0 + prompt_tokens / output_tokens) <= budget)
    if prompts_queue:
        between = max(between, per_replica * prompt_tokens / (budget - per_replica))
    if lean:
        step, bound, step_top, tpot, tpot_top = _dense_steady_between(setup, c, ci, per_replica, prompt_tokens,
                                                                      output_tokens, between, attn, skip)
    else:
        step, bound, step_top = _steady(setup, c, ci, per_replica, prompt_tokens, output_tokens, attn, even)
        if between == output_tokens:
            tpot, tpot_top = step, step_top
        else:
            tpot, _, tpot_top = _steady(setup, c, ci, per_replica, prompt_tokens, between, attn, even)
    ttft, ttft_top = _ttft(setup, c, ci, per_replica - 1, prompt_tokens, attn, others, skip)
    if per_replica > 1:  # Little's law: a request takes O mean steps, less its O - 1 gaps (request_cycle: O = 1 too)
        request_s = output_tokens * step - (output_tokens - 1) * tpot  # little_ttft_s of each, inline
        ttft = request_s if request_s > ttft else ttft
        request_s = output_tokens * step_top - (output_tokens - 1) * tpot_top
        ttft_top = request_s if request_s > ttft_top else ttft_top
    # a request takes its time to first token and O - 1 gaps (Little's law): where its own prompt's chunks pass the
    # O mean steps (a prompt longer than the token budget takes more steps than the state's mean step holds), the
    # cycle is that long and the rate falls with it (request_step_s)
    cycle = (ttft + (output_tokens - 1) * tpot) / output_tokens  # request_step_s of each, inline
    step = cycle if cycle > step else step
    cycle = (ttft_top + (output_tokens - 1) * tpot_top) / output_tokens
    step_top = cycle if cycle > step_top else step_top
    if output_tokens == 1:  # one token a request: the time per output token is the request's (others_output_tokens)
        tpot, tpot_top = step, step_top
    if sat_replica == per_replica and even == 1.0:  # the same steady state (queued, or at saturation): not again
        sat, sat_top = step, step_top
    else:
        sat, _, sat_top = (_dense_steady(setup, c, ci, sat_replica, prompt_tokens, output_tokens, attn, skip, False)
                           if lean
                           else _steady(setup, c, ci, sat_replica, prompt_tokens, output_tokens, attn))
    # tokens/s over the replicas: ``busy`` of them run per_replica sequences at the TPOT above, the rest one fewer
    # at their own (faster) pace, or at the busy ones' where the replicas of an EP group step together (expert
    # parallelism wider than TP), each pass emitting what its own sequences hold (_pass_outputs_ratio); an even
    # split (or a queue) runs per_replica everywhere
    rate, rate_top = busy * per_replica / step, busy * per_replica / step_top
    if light and per_replica > 1:
        if c.expert_token_scale <= 1.0:  # replicas on their own: the lighter ones at their own pace
            own, _, own_top = (
                _dense_steady(setup, c, ci, per_replica - 1, prompt_tokens, output_tokens, attn, skip, False) if lean
                else _steady(setup, c, ci, per_replica - 1, prompt_tokens, output_tokens, attn))
            rate += light * (per_replica - 1) / own
            rate_top += light * (per_replica - 1) / own_top
        else:  # an EP group's passes take the busiest replica's time: the lighter ones emit what theirs hold
            rate += light * per_replica * lighter / step
            rate_top += light * per_replica * lighter / step_top
    running = setup.replicas * sat_replica  # _saturated_rates, inline
    top, top_ceiling = running / sat, running / sat_top
    return _new_estimate(  # concurrency, per_replica, ttft_s, tpot_s, output_tokens_per_s,
        # decode_tokens_per_s_per_user, saturation_concurrency, max_output_tokens_per_s, bound, then the four
        # ceilings (ServingEstimate's order)
        concurrency, per_replica, ttft, tpot, rate, 1.0 / tpot, setup.replicas * sat_replica, top, bound, ttft_top,
        tpot_top, rate_top, top_ceiling, prompts_queue=prompts_queue,
    )


def _saturated_rates(running: int, step_s: float, step_s_ceiling: float) -> tuple[float, float]:
    """Output tokens/s of ``running`` sequences over the replicas at the steady step of saturation, and its
    ceiling (what :class:`ServingEstimate` gives as ``max_output_tokens_per_s`` and its ``_ceiling``)."""
    return running / step_s, running / step_s_ceiling


def saturated_rates(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, prompt_tokens: int, output_tokens: int,
                    saturation_concurrency: int, cal: Calibration | None = None) -> tuple[float, float]:
    """``max_output_tokens_per_s`` of :func:`serving_estimate` and its ceiling, alone (the same figures: the steady
    state of each replica's share of ``saturation_concurrency``), for a caller that needs nothing else of it."""
    if prompt_tokens < 1 or output_tokens < 1:
        raise InvalidWorkload(said("prompt, output tokens and concurrency must each be at least 1"))
    cal = cal or calibration()
    sat_replica = at_least(saturation_concurrency // setup.replicas, 1)
    c, ci = _pair(model, gpu, setup, cal)
    attn = _attention_flops(model, c, prompt_tokens, output_tokens, cal)
    sat, _, sat_top = _steady(setup, c, ci, sat_replica, prompt_tokens, output_tokens, attn)
    return _saturated_rates(setup.replicas * sat_replica, sat, sat_top)


def _attention_flops(model: ModelSpec, c: _StepConstants, prompt_tokens: int, output_tokens: int,
                     cal: Calibration) -> tuple[float, float]:
    """Every step here decodes at the average cached length and prefills the prompt: attention FLOPs per token,
    (decoded, prompt), the prompt's as timed (its windows' extra pairs, and TensorRT-LLM's context kernel's extra
    pairs a query: ``c.prompt_extra_pairs``, :func:`~anchorgpu.planner.speed.attention_rate.prompt_extra_pairs_factor`;
    the ceiling takes the same FLOPs at its own rate). Both are ``flops.attention_flops_per_token``'s memo's where it
    holds them (read in place: a model without MLA decodes at its causal count over twice the cached length, a prompt
    is timed at its causal count with the windows' extra tokens), else the functions' own answers."""
    cached, window_extra = prompt_tokens + output_tokens // 2, cal.window_attention_extra_tokens
    hit = _ATTENTION_CACHE.get((id(model), 2 * cached, True, 0.0)) if model.mla is None else None
    decode = (hit[1] if hit is not None and hit[0] is model
              else decode_attention_flops_per_token(model, cached))
    hit = _ATTENTION_CACHE.get((id(model), prompt_tokens, True, window_extra))
    prompt = (hit[1] if hit is not None and hit[0] is model
              else timed_prefill_attention_flops_per_token(model, prompt_tokens, window_extra))
    extra = c.prompt_extra_pairs  # prompt_extra_pairs_factor, inline
    return decode, prompt * (1.0 if not extra or prompt_tokens < 1 else 1.0 + 2.0 * extra / prompt_tokens)
