"""A burst: every request sent at once, run in waves of what the KV cache and the sequence cap hold, each wave's
prompts prefilled before its outputs decode together (what ``vllm bench serve`` with every prompt sent together
measures); a wave larger than the cache holds preempts and recomputes. Pure."""

from __future__ import annotations

import math

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.attention_rate import prompt_extra_pairs_factor, timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import (
    decode_attention_flops_per_token,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.mixed_attention import mixed_step_kv_read_factor, mixed_step_l2_kv_bytes
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.step_constants import ServingSetup, _pair, _StepConstants

__all__ = ["burst_makespan_s"]


def burst_makespan_s(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, requests: int, concurrency: int,
                     prompt_tokens: int, output_tokens: int, cal: Calibration | None = None,
                     kv_tokens: float | None = None) -> float:
    """Seconds until the last of ``requests`` equal requests, all sent at once, has its last token: what a burst
    benchmark (``vllm bench serve`` with every prompt sent together) divides its output tokens by.

    The replicas share the requests evenly; each runs them in waves of ``concurrency`` (what its KV cache and
    sequence cap hold at once, per replica; with ``kv_tokens``, the engine's sequence cap, and a wave is what it
    admits while the requests' prompts, and a token each, fit the cache). Equal requests admitted together finish together, so a wave is its
    prompts' prefill, in steps of the token budget (one after another through pipeline stages), then
    ``output_tokens - 1`` decode steps of the whole wave (the first token comes with the prefill). The steady state of :func:`serving_estimate` instead hides each prompt's
    prefill in the decode steps of requests admitted earlier, which a synchronised wave cannot do.

    ``kv_tokens``: the tokens one replica's KV cache holds, for an engine that admits a request when its prompt fits
    and preempts when the cache runs out (vLLM); None for one that admits a request only when its whole length fits
    (TensorRT-LLM's GUARANTEED_NO_EVICT), whose waves never outgrow the cache. A wave whose caches at full length,
    ``wave * (prompt + output)`` tokens, outgrow it is timed with the engine's recompute preemption
    (:func:`_preempting_wave_s`): every request beyond what the cache holds is decoded, dropped and computed again.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> one = burst_makespan_s(toy_model(), toy_gpu(), s, requests=8, concurrency=8, prompt_tokens=100, output_tokens=50)
    >>> two = burst_makespan_s(toy_model(), toy_gpu(), s, requests=16, concurrency=8, prompt_tokens=100, output_tokens=50)
    >>> 1.99 < two / one < 2.01  # twice the requests at the same concurrency: two equal waves
    True
    """
    if min(requests, concurrency, prompt_tokens, output_tokens) < 1:
        raise InvalidWorkload(said("requests, concurrency, prompt and output tokens must each be at least 1"))
    cal = cal or calibration()
    c, _ = _pair(model, gpu, setup, cal)
    decode_flops = decode_attention_flops_per_token(model, prompt_tokens + output_tokens // 2)
    per_replica, wave = math.ceil(requests / setup.replicas), max(1, concurrency // setup.replicas)
    if kv_tokens is not None and prompt_tokens + output_tokens <= kv_tokens:  # admitted while their prompts fit
        wave = min(wave, int(kv_tokens // (prompt_tokens + 1)))
    reread = mixed_step_kv_read_factor(model, gpu, engine=setup.engine, tp=setup.tp, attention_dp=setup.attention_dp,
                                       kv_fp8=setup.kv_fp8) if setup.pp == 1 else 1.0
    l2_kv_bytes = mixed_step_l2_kv_bytes(model, gpu, tp=setup.tp, pp=setup.pp, attention_dp=setup.attention_dp)
    total = 0.0
    while per_replica > 0:
        batch = min(wave, per_replica)
        per_replica -= batch
        decoding = float(batch)
        if kv_tokens is not None and prompt_tokens + output_tokens <= kv_tokens < batch * (prompt_tokens + output_tokens):
            total += _preempting_wave_s(model, setup, c, batch, prompt_tokens, output_tokens, kv_tokens)
            decoding = kv_tokens / (prompt_tokens + output_tokens // 2)  # what the cache holds decoding
        else:
            total += _prefill_s(model, setup, c, float(batch * prompt_tokens), prompt_tokens)
            total += (output_tokens - 1) * _step(setup, c, float(batch), 0.0, decode_flops, 0.0, head_skip=0.0)[0]
        if reread > 1.0 and per_replica > 0 and decoding * setup.kv_bytes_per_sequence_per_gpu > l2_kv_bytes:
            total += _shared_steps_reread_s(setup, c, decoding, min(wave, per_replica), prompt_tokens, output_tokens,
                                            reread)
    return total


def _shared_steps_reread_s(setup: ServingSetup, c: _StepConstants, decoding: float, next_batch: int,
                           prompt_tokens: int, output_tokens: int, reread: float) -> float:
    """The KV cache a wave's decodes read again in the steps they share with the next wave's prompt chunks, on an
    engine whose attention there reads it ``reread`` times (vLLM's FlashAttention 2:
    :func:`~anchorgpu.planner.speed.mixed_attention.mixed_step_kv_read_factor`).

    A continuous-batching engine admits the next requests while this wave decodes, so its decode steps carry their
    prompt chunks for as many steps as those chunks take (the next wave's prompt tokens over the token budget), at
    most this wave's ``output_tokens - 1``; the last wave decodes alone. Each such step reads the caches of the
    ``decoding`` sequences (the wave, or what the cache holds of a wave that outgrows it) ``reread - 1`` times more
    than the planned decode step does, at the rate the planned step reads them (``c.kv_rate``). Charged where the
    replica is one pipeline stage (the caller's ``setup.pp == 1``) and the decodes' caches outgrow what the L2 keeps
    between a group's query heads (the caller's test against
    :func:`~anchorgpu.planner.speed.mixed_attention.mixed_step_l2_kv_bytes`), as the steady state's steps are."""
    shared = min(output_tokens - 1, math.ceil(next_batch * prompt_tokens / setup.max_num_batched_tokens))
    return shared * (reread - 1.0) * decoding * setup.kv_bytes_per_sequence_per_gpu / c.kv_rate


def _prefill_s(model: ModelSpec, setup: ServingSetup, c: _StepConstants, tokens: float, length: int) -> float:
    """Prompt tokens (or a preempted request's prompt and outputs, computed again) of sequences ``length`` long,
    in steps of the token budget; over pipeline stages the chunks follow each other through the stages. The LM head
    runs at the last token of each sequence only (:func:`~anchorgpu.planner.speed.flops.unsampled_prompt_share`)."""
    steps = math.ceil(tokens / setup.max_num_batched_tokens)
    through = _step(setup, c, 0.0, tokens / steps, 0.0,
                    timed_prefill_attention_flops_per_token(model, length, c.window_extra_tokens)
                    * prompt_extra_pairs_factor(c.prompt_extra_pairs, length),
                    one_chunk=True, first_token=True, head_skip=unsampled_prompt_share(length))[0]
    return (steps + setup.pp - 1) * through / setup.pp


def _preempting_wave_s(model: ModelSpec, setup: ServingSetup, c: _StepConstants, batch: int, prompt: int,
                       output: int, kv_tokens: float) -> float:
    """Seconds for ``batch`` equal requests admitted together to one replica whose KV cache holds ``kv_tokens``
    tokens, fewer than their caches at full length: vLLM's recompute preemption.

    The engine admits a waiting request when the cache holds its tokens (prompt, outputs so far and the next
    one) and, when a running request needs a slot and none is free, preempts the newest running request: its
    cache is freed, it goes back to the front of the queue, and when admitted again its prompt and the outputs
    it had are computed again as a prompt (vllm-project/vllm ``vllm/v1/core/sched/scheduler.py``, ``schedule()``:
    ``preempted_req = self.running.pop()``, ``_preempt_request``, ``self.waiting.prepend_request``; V0's
    ``vllm/core/scheduler.py``, ``_schedule_running``: ``victim_seq_group = running_queue.pop()``,
    ``PreemptionMode.RECOMPUTE``). Requests are kept as groups of equal progress (oldest first); between events
    (a group finishing, the cache filling) every step decodes the same running batch, timed at its mean cached
    length at the middle of the stretch. A (re)admitted group's prompt is prefilled in steps of the token budget
    and gives its next token, as the wave's first prefill does; nothing here is fitted.
    """
    waiting: list[list[int]] = [[batch, 0]]  # [requests, outputs so far], the front of the queue first
    running: list[list[int]] = []  # oldest first
    total = 0.0
    while waiting or running:
        used = sum(n * (prompt + g) for n, g in running)
        tokens, weighted = 0, 0
        while waiting:  # admit from the front of the queue while the cache holds them and their next token
            n, g = waiting[0]
            fit = min(n, int((kv_tokens - used) // (prompt + g + 1)))
            if fit <= 0:
                break
            if fit == n:
                waiting.pop(0)
            else:
                waiting[0][0] -= fit
            tokens += fit * (prompt + g)
            weighted += fit * (prompt + g) ** 2
            used += fit * (prompt + g + 1)
            running.append([fit, g + 1])  # its prefill gives its next token
        if tokens:
            total += _prefill_s(model, setup, c, float(tokens), round(weighted / tokens))
        running = [group for group in running if group[1] < output]
        if not running:
            continue
        b = sum(n for n, _ in running)
        used = sum(n * (prompt + g) for n, g in running)
        while used + b > kv_tokens:  # no free slot for every next token: the newest running requests are preempted
            n, g = running[-1]
            k = min(n, math.ceil((used + b - kv_tokens) / (prompt + g + 1)))
            if k == n:
                running.pop()
            else:
                running[-1][0] -= k
            if waiting and waiting[0][1] == g:
                waiting[0][0] += k
            else:
                waiting.insert(0, [k, g])
            b, used = b - k, used - k * (prompt + g)
        # decode steps until a group finishes or the cache fills, each of the same batch
        steps = max(1, min(min(output - g for _, g in running), int((kv_tokens - used) // b)))
        mean = used / b + (steps - 1) / 2
        total += steps * _step(setup, c, float(b), 0.0,
                               decode_attention_flops_per_token(model, round(mean)), 0.0, head_skip=0.0)[0]
        running = [[n, g + steps] for n, g in running]
    return total
