"""A burst of unequal requests: every request of a drawn list of (prompt, output) lengths sent at once and run
step by step through one replica's slots, as a continuous-batching engine runs them. Pure.

:func:`~anchorgpu.planner.speed.burst.burst_makespan_s` times equal requests, which finish together; a dataset's
requests do not (``vllm bench serve --dataset-name sharegpt``: each request's ``max_tokens`` is its recorded answer's
length, up to 2,044 tokens beside a 4-token prompt), so its makespan is set by its longest answers, decoded in a batch
that shrinks as the others finish. The product's plan (steady state) never uses this; the measured bursts drawn from
ShareGPT (``data/sharegpt_burst_lengths.json``) are compared with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from importlib import resources

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.attention_rate import prompt_extra_pairs_factor, timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.flops import decode_attention_flops_per_token, unsampled_prompt_share
from anchorgpu.planner.speed.mixed_attention import mixed_step_kv_read_factor, mixed_step_l2_kv_bytes
from anchorgpu.planner.speed.serving import _step
from anchorgpu.planner.speed.step_constants import ServingSetup, _pair

__all__ = ["mixed_burst_makespan_s", "sharegpt_pairs"]


def mixed_burst_makespan_s(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, pairs: Sequence[tuple[int, int]],
                           concurrency: int, cal: Calibration | None = None, kv_tokens: float | None = None,
                           reserve_tokens: float | None = None,
                           kv_bytes_at: Callable[[float], float] | None = None) -> float:
    """Seconds until the last of the requests ``pairs`` ((prompt, output) tokens each, in the order sent), all sent
    at once, has its last token.

    The replicas take the requests in turn; each is simulated step by step as vLLM's scheduler runs it
    (vllm-project/vllm ``vllm/v1/core/sched/scheduler.py``, ``schedule()``): the running requests first, one decode
    token each, then the waiting ones in order, admitted while the step's token budget
    (``setup.max_num_batched_tokens``) has room, fewer than ``concurrency`` per replica (the engine's sequence cap)
    are running, and, with ``kv_tokens``, the cache holds their prompts and a token each; a prompt longer than the
    budget left is chunked over steps. A request gives its first token in the step its prompt's last chunk runs in
    and leaves the batch after its ``output`` tokens, so later steps decode fewer sequences. With ``kv_tokens``, a
    step whose decodes have no room preempts the newest running requests, which are computed again as prompts
    (vLLM's recompute preemption, as :func:`~anchorgpu.planner.speed.burst._preempting_wave_s`). ``reserve_tokens``
    instead: an engine that admits a request only while the cache, ``reserve_tokens`` tokens, holds its prompt and its
    whole ``max_tokens`` beside what the running requests reserved, and stops at the first that does not fit
    (TensorRT-LLM's default GUARANTEED_NO_EVICT: NVIDIA/TensorRT-LLM ``cpp/tensorrt_llm/batch_manager/
    capacityScheduler.cpp``, ``GuaranteedNoEvictScheduler::impl``, "If one requests fails to be scheduled, break"),
    never preempting. Neither: the slot cap alone.

    Each step is :func:`~anchorgpu.planner.speed.serving._step` of its decodes (attention at their mean cached
    length, KV read at ``kv_bytes_at(mean)`` a sequence) and its prompt tokens (attention at their mean prompt length),
    plus the decodes' caches read again where vLLM's FlashAttention 2 reads them more than once in a step that also
    runs prompts (``mixed_attention.mixed_step_kv_read_factor``, as the equal burst charges it). Steps that only
    decode, with nothing to admit, are timed together until the next request finishes. Nothing here is fitted.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> even = mixed_burst_makespan_s(toy_model(), toy_gpu(), s, pairs=[(100, 50)] * 8, concurrency=8)
    >>> tail = mixed_burst_makespan_s(toy_model(), toy_gpu(), s, pairs=[(100, 30)] * 7 + [(100, 190)], concurrency=8)
    >>> tail > 2 * even  # the same output tokens, one long answer: its steps set the makespan
    True
    """
    if not pairs or concurrency < 1 or min(min(p, o) for p, o in pairs) < 1:
        raise InvalidWorkload(said("a burst needs requests of at least 1 prompt and 1 output token, and a slot"))
    cal = cal or calibration()
    replicas = max(1, setup.replicas)
    cap = max(1, concurrency // replicas)
    return max(_replica_s(model, gpu, setup, list(pairs[r::replicas]), cap, cal, kv_tokens, reserve_tokens,
                          kv_bytes_at)
               for r in range(min(replicas, len(pairs))))


def _replica_s(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, pairs: list[tuple[int, int]], cap: int,
               cal: Calibration, kv_tokens: float | None, reserve_tokens: float | None,
               kv_bytes_at: Callable[[float], float] | None) -> float:
    c, _ = _pair(model, gpu, setup, cal)
    reread = mixed_step_kv_read_factor(model, gpu, engine=setup.engine, tp=setup.tp, attention_dp=setup.attention_dp,
                                       kv_fp8=setup.kv_fp8) if setup.pp == 1 else 1.0
    l2_kv_bytes = mixed_step_l2_kv_bytes(model, gpu, tp=setup.tp, pp=setup.pp, attention_dp=setup.attention_dp)
    budget = setup.max_num_batched_tokens
    # a request: [tokens to prefill (its prompt, or prompt and outputs so far when recomputed), tokens prefilled,
    # outputs so far, its output length]; waiting in the order sent, running in the order admitted
    waiting: list[list[int]] = [[p, 0, 0, o] for p, o in pairs]
    running: list[list[int]] = []
    total = 0.0
    while waiting or running:
        decoding = [q for q in running if q[1] >= q[0]]
        room = budget - len(decoding)
        chunks: list[tuple[list[int], int]] = []
        for q in running:  # prompts admitted in an earlier step, still being prefilled
            if q[1] < q[0] and room > 0:
                n = min(room, q[0] - q[1])
                chunks.append((q, n))
                room -= n
        used = sum(q[1] + q[2] for q in running)
        reserved = sum(q[0] + q[3] for q in running)
        while waiting and room > 0 and len(running) < cap:
            q = waiting[0]
            if kv_tokens is not None and used + q[0] + 1 > kv_tokens:
                break
            if reserve_tokens is not None and reserved + q[0] + q[3] > reserve_tokens:
                break
            waiting.pop(0)
            running.append(q)
            n = min(room, q[0])
            chunks.append((q, n))
            room -= n
            used += q[0] + 1
            reserved += q[0] + q[3]
        if kv_tokens is not None:  # no room for every decode's next token: the newest running are preempted
            while decoding and sum(q[1] + q[2] for q in running) + len(decoding) > kv_tokens:
                q = running.pop()
                if q in decoding:
                    decoding.remove(q)
                chunks = [(x, n) for x, n in chunks if x is not q]
                waiting.insert(0, [q[0] + q[2], 0, 0, q[3] - q[2]] if q[2] else [q[0], 0, 0, q[3]])
        prompt_tokens = sum(n for _, n in chunks)
        b = len(decoding)
        if not b and not prompt_tokens:  # nothing runs: the next request alone outgrows the cache
            raise InvalidWorkload(said(f"a request of {waiting[0][0]} prompt and {waiting[0][3]} output tokens "
                                       f"outgrows the KV cache ({kv_tokens or reserve_tokens:.0f} tokens)"))
        # steps that only decode, nothing to admit: one batch until its first request finishes
        steps = 1
        if not prompt_tokens:
            steps = min(q[3] - q[2] for q in decoding)
            if kv_tokens is not None:
                free = kv_tokens - sum(q[1] + q[2] for q in running)
                steps = max(1, min(steps, int(free // b)))
        mean_cached = (sum(q[1] + q[2] for q in decoding) / b + (steps - 1) / 2) if b else 0.0
        prompt_mean = sum(x[0] * n for x, n in chunks) / prompt_tokens if prompt_tokens else 0.0
        step_setup = replace(setup, kv_bytes_per_sequence_per_gpu=kv_bytes_at(mean_cached)) if (
            kv_bytes_at is not None and b) else setup
        prefill_flops = (timed_prefill_attention_flops_per_token(model, round(prompt_mean), c.window_extra_tokens)
                         * prompt_extra_pairs_factor(c.prompt_extra_pairs, round(prompt_mean))) if prompt_tokens else 0.0
        step_s = _step(step_setup, c, float(b), float(prompt_tokens),
                       decode_attention_flops_per_token(model, round(mean_cached)) if b else 0.0, prefill_flops,
                       one_chunk=bool(prompt_tokens), first_token=bool(prompt_tokens) and not b,
                       head_skip=unsampled_prompt_share(prompt_mean) if prompt_tokens else 0.0)[0]
        kv_read_bytes = b * step_setup.kv_bytes_per_sequence_per_gpu
        if prompt_tokens and reread > 1.0 and kv_read_bytes > l2_kv_bytes:  # FA2 reads the decodes' caches again
            step_s += (reread - 1.0) * kv_read_bytes / c.kv_rate
        total += steps * step_s
        for q in decoding:
            q[2] += steps
        for q, n in chunks:
            q[1] += n
            if q[1] >= q[0]:
                q[2] += 1  # the prompt's last chunk gives its first token
        running = [q for q in running if q[2] < q[3]]
    return total


@cache
def _draws() -> dict[str, tuple[tuple[int, int], ...]]:
    text = resources.files("anchorgpu.planner.speed").joinpath("data/sharegpt_burst_lengths.json").read_text()
    return {name: tuple((int(p), int(o)) for p, o in d["pairs"]) for name, d in json.loads(text)["draws"].items()}


def sharegpt_pairs(draw: str) -> tuple[tuple[int, int], ...]:
    """The (prompt, output) token lengths of a 1,000-request ShareGPT burst as ``vllm bench serve`` draws them, with
    the tokenizer family ``draw`` (``qwen3`` or ``gpt-oss``), in the order sent: ``data/sharegpt_burst_lengths.json``,
    made by ``benchmarks/sharegpt_burst_lengths.py`` (its ``about`` says from what and how).

    >>> len(sharegpt_pairs("qwen3")), max(p for p, _ in sharegpt_pairs("qwen3")) <= 1024
    (1000, True)
    """
    draws = _draws()
    if draw not in draws:
        raise InvalidWorkload(said(f"no ShareGPT draw {draw!r}; known: {', '.join(sorted(draws))}"))
    return draws[draw]
