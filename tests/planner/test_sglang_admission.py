"""SGLang's admission when its KV pool is the limit, as its scheduler does it, not vLLM's rule.

SGLang starts a waiting request only if the pool's free and evictable slots, less ``new_token_ratio x
min(max_new_tokens - generated, 4,096)`` for every running request, exceed the newcomer's prompt +
``min(max_new_tokens, 4,096)`` (sgl-project/sglang@00550cd11b35def9d584bf761a1e32729c20a21d
python/sglang/srt/managers/schedule_policy.py, ``PrefillAdder._get_running_request_total_token_offset`` and
``add_one_req``). The ratio starts at ``SGLANG_INIT_NEW_TOKEN_RATIO`` 0.7 and decays over
``SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`` 600 decode steps to 0.7 x ``SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR`` 0.14 = 0.098
(sgl-project/sglang@0003215cf1464f44b389cd0b18d0b4c56f2a3da6 python/sglang/srt/environ.py;
sgl-project/sglang@1a882c5c63cfeff4e20254078cbd89500d5b1fe9
python/sglang/srt/managers/scheduler_components/new_token_ratio_tracker.py). vLLM's rule, the planner's before,
holds the pool over the average cached length alone: prompt + output / 2 a request.
"""

from __future__ import annotations

import math

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.sglang import (
    CLIP_MAX_NEW_TOKENS,
    RATIO_DECAY_STEPS,
    admission_tokens,
    admitted_requests,
    initial_new_token_ratio,
    new_token_ratio_floor,
)
from anchorgpu.planner.speed.estimate import plan_performance

# Llama 3.1 8B on one GPU: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes = 131,072 bytes a token slot
TOKEN_BYTES = 32 * 8 * 128 * 2 * 2


def _plan(context: int, concurrency: int, prompt: int, output: int):  # type: ignore[no-untyped-def]
    return plan(load_model("llama-3.1-8b"), Workload(engine="sglang", context_tokens=context, concurrency=concurrency,
                                                     prompt_tokens=prompt, output_tokens=output),
                layout=Layout(gpus=1, tp=1), gpu=get_gpu("h100"), suggest=False, choose_layout=False)


def test_the_ratio_schedule_is_sglangs_defaults() -> None:
    assert initial_new_token_ratio() == 0.7
    assert new_token_ratio_floor() == pytest.approx(0.7 * 0.14) == pytest.approx(0.098)
    assert (RATIO_DECAY_STEPS, CLIP_MAX_NEW_TOKENS) == (600, 4096)


@pytest.mark.parametrize(("prompt", "output", "sglang", "vllm"), [
    # the pool of 411,413 slots (asserted below): vLLM's rule floor(411,413 / (1,024 + 512)) = 267; SGLang's charge
    # 1,024 + 512 + 0.098 x 512 = 1,586.176 a running request, room for 1,024 + 1,024 more:
    # ceil((411,413 - 2,048) / 1,586.176) = ceil(258.08) = 259
    (1024, 1024, 259, 267),
    # an output above the 4,096-token clip: the charge is 0.098 x the mean of min(8,192 - g, 4,096), 4,096 - 1,024;
    # ceil((411,413 - 5,120) / (1,024 + 4,096 + 301.056)) = ceil(74.95) = 75, vLLM's floor(411,413 / 5,120) = 80
    (1024, 8192, 75, 80),
])
def test_a_pool_bound_plan_admits_what_sglangs_scheduler_admits_not_vllms_rule(prompt: int, output: int, sglang: int,
                                                                               vllm: int) -> None:
    p = _plan(prompt + output, 1, prompt, output)
    pool = p.breakdown["kv_pool_tokens"]
    assert pool == 411_413 and p.breakdown["kv_cache_capacity_bytes"] // TOKEN_BYTES == pool
    charge = 0.098 * (output / 2 if output <= 4096 else 4096 - 4096**2 / (2 * output))
    assert math.ceil((pool - prompt - min(output, 4096)) / (prompt + output / 2 + charge)) == sglang
    assert pool // (prompt + output // 2) == vllm
    own = plan_performance(p)
    average = plan_performance(p, kv_reservation="average")
    assert (own["kv_reservation"], own["saturation_concurrency"]) == ("ratio", sglang)
    assert average["saturation_concurrency"] == vllm
    assert own["max_output_tokens_per_s"] < average["max_output_tokens_per_s"]
    line = next(a for a in own["assumptions"] if a.startswith("serving at"))
    assert f"saturation at {sglang:,} sequences" in line and "ratio's floor of 0.098" in line


def test_where_the_pool_limits_the_users_concurrency_the_figures_are_those_of_what_sglang_admits() -> None:
    # 400 requests of 1,024 tokens fit the pool (409,600 of 411,413 slots), but timed at 1,024 + 1,024 tokens
    # SGLang runs 259 of them (above) and queues the rest; vLLM's rule would run 267
    p = _plan(1024, 400, 512, 512)
    own = plan_performance(p, prompt_tokens=1024, output_tokens=1024)
    average = plan_performance(p, prompt_tokens=1024, output_tokens=1024, kv_reservation="average")
    assert (own["saturation_concurrency"], average["saturation_concurrency"]) == (259, 267)
    assert own["tpot_s"] < average["tpot_s"]  # a smaller batch, a shorter step
    # the 259 it runs, at their steady step: the saturation's figure (a user's TPOT, the other users' prompts only
    # between its tokens, is shorter than that step: speed.batching.others_output_tokens)
    assert own["output_tokens_per_s"] == pytest.approx(own["max_output_tokens_per_s"], rel=1e-9)
    assert own["output_tokens_per_s"] < 259 / own["tpot_s"]
    assert any("the 141 request(s) beyond saturation wait" in a for a in own["assumptions"])


@pytest.mark.parametrize("output", [21, 256, 1024, 4096, 8192, 32768])
def test_at_the_floor_an_evenly_spread_population_never_runs_short_of_a_decode_steps_slots(output: int) -> None:
    """The derivation's premise: once admission stops, the slots left free hold a decode step (one a request), so no
    request is retracted and the ratio stays at its floor (a retraction is what raises it)."""
    pool, prompt = 400_000, 700
    charge, newcomer = admission_tokens(prompt, output)
    n = admitted_requests(pool, prompt + output / 2 + charge, newcomer)
    assert n > 1
    held = sum(prompt + output * (i + 0.5) / n for i in range(n))  # progress spread evenly over the output
    assert pool - held >= n
    # below 21 output tokens the floor keeps back less than a slot a request: the premise fails there
    assert new_token_ratio_floor() * 20 / 2 < 1 <= new_token_ratio_floor() * 21 / 2


def test_admission_counts_the_requests_below_the_pool_strictly() -> None:
    # n x 10 + 30 < 100 for n = 0..6: seven; the newcomer alone above the pool: none
    assert admitted_requests(100, 10, 30) == 7 and admitted_requests(100, 10, 31) == 7
    assert admitted_requests(29, 10, 30) == 0 and admitted_requests(30, 10, 30) == 0
