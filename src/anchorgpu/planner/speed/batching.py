"""Continuous batching over the serving step (:mod:`anchorgpu.planner.speed.serving`): the mean step of a steady
state, where every request brings its prompt's chunks into the steps that decode the others, the time to first token,
and the figures at a concurrency and at saturation, each with its ceiling. Pure; stdlib only."""

from __future__ import annotations

import math
from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import builder, fast_init
from anchorgpu.planner.speed.attention_rate import prompt_extra_pairs_factor, timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import (
    decode_attention_flops_per_token,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.request_cycle import request_step_s
from anchorgpu.planner.speed.serving import _dense_step, _step
from anchorgpu.planner.speed.step_constants import ServingSetup, _pair, _StepConstants
from anchorgpu.units import at_least, clamp

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


_new_estimate = builder(ServingEstimate)  # ServingEstimate(...) once per estimate


def others_output_tokens(batch: int, output: int) -> float:
    """The output tokens a request of a steady state of ``batch`` is timed at between its own tokens: its prompt is
    prefilled before its first token (vLLM's scheduler, vllm-project/vllm@00024d31 ``vllm/v1/core/sched/scheduler.py``
    ``schedule``: a request emits no token until its prompt is computed), so the steps between its tokens carry the
    other ``B - 1`` requests' prompts only, ``(B - 1) * I / O`` tokens a step: the steady state's ``B * I / O`` at
    ``O * B / (B - 1)`` outputs (infinite at one request: decodes alone). The tokens/s in all still pays every
    prompt (the steady state at ``O``). One output token a request keeps ``O``: no time passes between tokens, and
    the time per output token is the steady state's seconds per request (``plan_render.NO_TPOT_LINE``).

    >>> others_output_tokens(1, 1000), others_output_tokens(4, 300), others_output_tokens(4, 1)
    (inf, 400.0, 1)
    """
    if output == 1:
        return output
    return math.inf if batch <= 1 else output * batch / (batch - 1)


def prompt_bound_output_tokens(batch: int, prompt: int, output: int, budget_tokens: int) -> float | None:
    """The output tokens a user's steps between its tokens are timed at in the prompt-bound regime, else None.

    The steady state carries ``B + B * I / O`` tokens a step (``B`` decodes, the prompts spread over the outputs).
    Past the engine's token budget ``T`` (``max_num_batched_tokens``) no step holds that: vLLM's scheduler gives
    the running requests' decodes their tokens first and then prompt chunks until the budget is spent
    (vllm-project/vllm@00024d31 ``vllm/v1/core/sched/scheduler.py`` ``schedule``: ``token_budget`` falls with every
    request scheduled, "First, schedule the RUNNING requests", then the WAITING ones). Every step is then full, and
    the prompts that do not fit wait. A user that has its first token decodes in every step, so its time per output
    token is one step of ``B`` decodes and ``T - B`` prompt tokens: the steady state at ``B * I / (T - B)``
    outputs (fewer prompt tokens than the others' ``(B - 1) * I / O``, :func:`others_output_tokens`, once these
    pass ``T - B``; the larger of the two outputs is taken, so the time per output token runs on continuously
    into the regime). Only where ``B > 1`` (a lone user has no other prompt to wait behind), ``O > 1`` (one token
    a request has no time between tokens) and ``T > B`` (the decodes alone fit a step).

    >>> prompt_bound_output_tokens(64, 4000, 10, 8192) == 64 * 4000 / (8192 - 64)  # qa16's L2: 25,664 a step
    True
    >>> prompt_bound_output_tokens(20, 4000, 10, 8192), prompt_bound_output_tokens(1, 120000, 10, 8192)
    (None, None)
    """
    if batch <= 1 or output <= 1 or budget_tokens <= batch or batch * (1.0 + prompt / output) <= budget_tokens:
        return None
    return max(others_output_tokens(batch, output), batch * prompt / (budget_tokens - batch))


def little_ttft_s(own_prompt_s: float, output: int, step_s: float, tpot_s: float) -> float:
    """Time to first token of a user among ``B > 1`` with ``O > 1`` outputs a request: the request's time less its
    ``O - 1`` steps between tokens, and never less than its own prompt's chunks (``own_prompt_s``, :func:`_ttft`).

    Each of the ``B`` users of a replica emits ``O`` tokens a request, and the replica ``B / step_s`` tokens a second
    (``step_s``: the mean step of the full steady state), so by Little's law (a closed loop of ``B`` users, ``B * O``
    tokens in flight) a user's request takes ``B * O / (B / step_s) = O * step_s``. Of that, ``O - 1`` gaps of one
    step each (``tpot_s``) follow the first token; the rest, ``O * step_s - (O - 1) * tpot_s``, is the time to first
    token. So ``TTFT + (O - 1) * TPOT = O * step_s``, and ``B * O`` over it is the output rate.

    Below the engine's token budget the gaps are steps with the other users' prompts only
    (:func:`others_output_tokens`), shorter than the mean step, and the rest is the steps of the request's own prompt
    chunks with their share of the state's work: its chunks timed alone with the others' decodes would leave the
    request up to one step short of ``O * step_s``, and ``B * O`` over the sum above the rate (20 users of 4,000 / 10
    on an H100: 0.092 s + 9 gaps of 0.171 s, 122.6 tok/s by the sum against the rate's 111.2; so 0.259 s). Past the
    budget (:func:`prompt_bound_output_tokens`) every step is full and the prompts queue: the gaps are budget-full
    steps, and the rest holds the wait for the prompt's turn behind the others' chunks, in ``N = B * (I + O) / T``
    budget-full steps a cycle (the mean step's work, ``B * (I + O)`` tokens a request of each user, conserved). One
    rule on both sides, so the time to first token runs on continuously across the budget (21 users: 0.268 s).

    >>> little_ttft_s(0.1, 10, 0.568, 0.2)  # 5.68 s a request, 9 gaps of 0.2 s
    3.88
    >>> little_ttft_s(0.5, 10, 0.1, 0.1)  # its own chunks take longer than the rest of its request
    0.5
    """
    queued = output * step_s - (output - 1) * tpot_s
    return queued if queued > own_prompt_s else own_prompt_s


def prefill_chunk_share(batch: float, prompt: int, output: float, max_num_batched_tokens: int) -> tuple[float, float]:
    """(chunk, share): prompts enter the steps of ``batch`` decoding sequences in chunks of at most the step's token
    budget left by the decodes; ``share`` is the fraction of steps that carry one, ``B * I / O`` prompt tokens per
    step over the chunk (at least 1 when every step carries prompt tokens: then they are spread over all steps).

    A long prompt among few sequences comes as a few large chunks in few steps, each compute-bound, between steps
    that only read the weights; spreading it over every step would hide its products behind the weight reads.

    >>> prefill_chunk_share(20, 20000, 2000, 2048)  # 200 prompt tokens a step, in chunks of 2,028: a tenth of steps
    (2028, 0.09861932938856016)
    >>> prefill_chunk_share(300, 2048, 128, 8192)[1] >= 1  # 4,800 a step: every step carries prompt tokens
    True
    """
    chunk = clamp(max_num_batched_tokens - int(batch), 1, prompt)  # prompt >= 1
    return chunk, batch * prompt / output / chunk


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


def _group_chunks(mean_share: float, ranks: float, balanced: bool) -> tuple[float, float]:
    """(share, chunks): the share of an EP group's aligned steps that carry a prompt chunk, and the group's chunks in
    such a step, when each of its ``ranks`` replicas brings one in ``mean_share`` of its steps. Scheduled on their
    own, a step carries one whenever any replica has one, ``1 - (1 - s) ** ranks`` of the steps, with ``ranks * s``
    over that many chunks in all (at least 1). ``balanced`` (TensorRT-LLM's ``attention_dp_config.enable_balance``):
    a rank holds its new prompts until every rank has one (``PyExecutor._balance_adp_requests``, up to
    ``timeout_iters``), so the ranks prefill together: ``s`` of the steps, each with every rank's chunk.

    >>> [round(x, 3) for x in _group_chunks(0.1, 2.0, False)]  # 19% of the steps, 1.05 chunks each
    [0.19, 1.053]
    >>> _group_chunks(0.1, 2.0, True)
    (0.1, 2.0)
    """
    if balanced:
        return mean_share, ranks
    group_share = 1.0 - (1.0 - mean_share) ** ranks
    return group_share, ranks * mean_share / group_share  # at least 1: the group's chunks in a step that has one


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
    chunked, decodes = _mixed_steps(setup, c, ci, batch, chunk, attn, skip, share >= 0.5, not share >= 0.5)
    return (share * chunked[0] + (1.0 - share) * decodes[0], chunked[1] if share >= 0.5 else decodes[1],
            share * chunked[2] + (1.0 - share) * decodes[2],
            share_between * chunked[0] + (1.0 - share_between) * decodes[0],
            share_between * chunked[2] + (1.0 - share_between) * decodes[2])


def _pass_outputs_ratio(setup: ServingSetup, light: int, busy: int, prompt: int, output: int) -> float:
    """Output tokens a pass of a replica running ``light`` sequences emits, over one running ``busy``, when the
    replicas of an EP group run their passes together (each takes the busiest replica's time).

    A steady pass carries each sequence's decode and, on average, ``prompt / output`` of prompt tokens for it, up to
    the engine's token budget: ``min(B, budget / (1 + I/O))`` sequences' worth of output a pass. Where decodes
    dominate that is ``B``, and a lighter replica emits ``light / busy`` of the busiest one's tokens a pass (it keeps
    the busiest pace); where long prompts fill every pass of both, each emits as much as the other (the lighter
    replica's users are served sooner, and its passes are as full).

    >>> from anchorgpu.planner.speed.serving import ServingSetup
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6, max_num_batched_tokens=8192)
    >>> _pass_outputs_ratio(s, 63, 64, 1000, 1000), _pass_outputs_ratio(s, 7, 8, 8000, 1)
    (0.984375, 1.0)
    """
    cap = setup.max_num_batched_tokens / (1.0 + prompt / output)
    return min(float(light), cap) / min(float(busy), cap)


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


def serving_estimate(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, prompt_tokens: int, output_tokens: int,
                     concurrency: int, saturation_concurrency: int, cal: Calibration | None = None) -> ServingEstimate:
    """TTFT, TPOT and tokens/s at ``concurrency`` (over all replicas) and at ``saturation_concurrency``. A
    concurrency beyond saturation runs the saturation's sequences and queues the rest (as vLLM's scheduler does
    past its KV cache or ``max_num_seqs``): its figures are the saturation's, its queue wait is not in TTFT.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> e = serving_estimate(toy_model(), toy_gpu(), s, prompt_tokens=100, output_tokens=50, concurrency=4,
    ...                      saturation_concurrency=256)
    >>> e.output_tokens_per_s < e.max_output_tokens_per_s <= e.max_output_tokens_per_s_ceiling
    True
    """
    if prompt_tokens < 1 or output_tokens < 1 or concurrency < 1:
        raise InvalidWorkload("prompt, output tokens and concurrency must each be at least 1")
    cal = cal or calibration()
    sat_replica = saturation_concurrency // setup.replicas
    if not sat_replica > 1:  # at_least(sat_replica, 1), inline
        sat_replica = 1
    # beyond saturation the engine runs what its KV cache and sequence cap hold and queues the rest (their wait is
    # not in the time to first token); below it the busiest replica runs ceil(c / replicas) and paces every user
    queued = concurrency > saturation_concurrency
    per_replica = sat_replica if queued else math.ceil(concurrency / setup.replicas)
    c, ci = _pair(model, gpu, setup, cal)
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
    skip = unsampled_prompt_share(prompt_tokens)  # of every state's prompt tokens, the LM head's unsampled share
    lean = setup.pp == 1 and c.routed_share is None  # a dense model on one stage: _steady's lean step, called directly
    # a user's time between its tokens: the same steady state with the other users' prompts only (its own comes
    # before its first token); the tokens/s in all pays every prompt, at ``step``
    between = others_output_tokens(per_replica, output_tokens)
    # past the engine's token budget every step is full, the prompts queue: a user's step between its tokens holds
    # ``T - B`` prompt tokens, and its wait comes before its first token (prompt_bound_output_tokens, little_ttft_s)
    bound_output = prompt_bound_output_tokens(per_replica, prompt_tokens, output_tokens, setup.max_num_batched_tokens)
    if bound_output is not None:
        between = bound_output
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
        ttft = little_ttft_s(ttft, output_tokens, step, tpot)
        ttft_top = little_ttft_s(ttft_top, output_tokens, step_top, tpot_top)
    # a request takes its time to first token and O - 1 gaps (Little's law): where its own prompt's chunks pass the
    # O mean steps (a prompt longer than the token budget takes more steps than the state's mean step holds), the
    # cycle is that long and the rate falls with it (request_step_s)
    step, step_top = (request_step_s(step, ttft, tpot, output_tokens),
                      request_step_s(step_top, ttft_top, tpot_top, output_tokens))
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
    top, top_ceiling = _saturated_rates(setup.replicas * sat_replica, sat, sat_top)
    return _new_estimate(
        concurrency=concurrency, per_replica=per_replica, ttft_s=ttft, tpot_s=tpot,
        output_tokens_per_s=rate, decode_tokens_per_s_per_user=1.0 / tpot,
        saturation_concurrency=setup.replicas * sat_replica, max_output_tokens_per_s=top,
        bound=bound, ttft_s_ceiling=ttft_top, tpot_s_ceiling=tpot_top, output_tokens_per_s_ceiling=rate_top,
        max_output_tokens_per_s_ceiling=top_ceiling, prompts_queue=bound_output is not None,
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
        raise InvalidWorkload("prompt, output tokens and concurrency must each be at least 1")
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
    the ceiling takes the same FLOPs at its own rate)."""
    return (decode_attention_flops_per_token(model, prompt_tokens + output_tokens // 2),
            timed_prefill_attention_flops_per_token(model, prompt_tokens, cal.window_attention_extra_tokens)
            * prompt_extra_pairs_factor(c.prompt_extra_pairs, prompt_tokens))
