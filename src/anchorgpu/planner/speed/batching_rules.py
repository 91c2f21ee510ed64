"""The rules of continuous batching the serving estimate (:mod:`.batching`) times its steady states and first token
by: which prompts share a user's steps between its tokens, when the prompts outrun the engine's step budget and queue,
a user's time to first token by Little's law, how prompts enter the steps in chunks, and how the replicas of an
expert-parallel group share their steps. Pure; stdlib only."""

from __future__ import annotations

import math

from anchorgpu.planner.speed.step_constants import ServingSetup
from anchorgpu.units import clamp

__all__ = ["little_ttft_s", "others_output_tokens", "prefill_chunk_share", "prompt_bound_output_tokens"]


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
