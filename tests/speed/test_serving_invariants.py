"""Invariants of the serving estimate that benchmarks/speed_invariants.py found broken (one test per finding)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance


def _serve(model: str, gpu: str, layout: Layout, *, prompt: int, output: int, concurrency: int,
           weights: str | None = None) -> dict[str, object]:
    p = plan(load_model(model), Workload(task="inference", prompt_tokens=prompt, output_tokens=output,
                                         concurrency=concurrency),
             gpu=get_gpu(gpu), layout=layout, precision=PrecisionPlan(weights=weights))
    assert p.fits
    return plan_performance(p)


def _replicas(concurrency: int) -> dict[str, object]:  # TP 2 on 8 GPUs: 4 replicas
    return _serve("bloomz-560m", "h100-sxm", Layout(gpus=8, tp=2), prompt=1000, output=200, concurrency=concurrency)


def test_uneven_replicas_count_only_the_users_there_are() -> None:
    # 31 users over 4 replicas: three run 8, one runs 7; the total is 31 users' tokens, not 32's
    perf = _replicas(31)
    assert perf["output_tokens_per_s"] < 32 / perf["tpot_s"]
    assert perf["output_tokens_per_s"] == pytest.approx(_replicas(32)["output_tokens_per_s"] * 24 / 32
                                                        + _replicas(28)["output_tokens_per_s"] * 7 / 28, rel=1e-9)


def test_the_lighter_replicas_keep_their_own_pace() -> None:
    # 8000-token prompts, 1 output token: each step is mostly prefill, so a replica's rate barely grows with its
    # batch; 3 users over 2 replicas must not make fewer tokens than 2 users (one replica still runs one at its pace)
    def rate(concurrency: int) -> float:
        return float(_serve("deepseek-v2-lite", "rtx-pro-6000", Layout(gpus=8, tp=4), prompt=8000, output=1,
                            concurrency=concurrency, weights="gguf-q4_k_m")["output_tokens_per_s"])

    assert rate(3) >= rate(2)
    # 31 users at the busiest replicas' pace (32 users' step: 8 a replica) would make fewer
    assert _replicas(31)["output_tokens_per_s"] > 31 / 32 * _replicas(32)["output_tokens_per_s"]


def test_concurrency_beyond_saturation_queues_instead_of_outrunning_the_maximum() -> None:
    # vLLM's 1,024-sequence cap on an 80 GB GPU: 4,096 users run 1,024 at a time, the rest wait in the queue
    at_cap = _serve("bloomz-560m", "h100-sxm", Layout(gpus=8, tp=8), prompt=1000, output=200, concurrency=1024,
                    weights="nvfp4")
    beyond = _serve("bloomz-560m", "h100-sxm", Layout(gpus=8, tp=8), prompt=1000, output=200, concurrency=4096,
                    weights="nvfp4")
    assert beyond["saturation_concurrency"] == 1024
    assert beyond["output_tokens_per_s"] <= beyond["max_output_tokens_per_s"] * (1 + 1e-9)
    assert beyond["tpot_s"] == pytest.approx(at_cap["tpot_s"], rel=1e-9)
    assert beyond["output_tokens_per_s"] == pytest.approx(at_cap["output_tokens_per_s"], rel=1e-9)
    assert any("3,072 request(s) beyond saturation wait in the engine's queue" in a for a in beyond["assumptions"])


def test_a_request_longer_than_its_context_is_refused_not_timed_beyond_the_memory_plan() -> None:
    from anchorgpu.errors import InvalidWorkload

    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    with pytest.raises(InvalidWorkload, match="prompt 32,000 \\+ output 1,000 tokens exceed the context of 4,096"):
        plan(model, Workload(context_tokens=4096, prompt_tokens=32000, output_tokens=1000), gpu=gpu)
    with pytest.raises(InvalidWorkload, match="exceed the model's limit of 2,048 tokens"):
        plan(load_model("bloomz-560m"), Workload(prompt_tokens=32000, output_tokens=1000), gpu=gpu)
    # a given prompt leaves the rest of the context to the default output: the timed request is the planned one
    p = plan(load_model("gpt2"), Workload(prompt_tokens=1000), gpu=gpu)
    perf = plan_performance(p)
    assert perf["prompt_tokens"] + perf["output_tokens"] <= p.workload.context_tokens == 1024


@pytest.mark.parametrize(("concurrency", "prompt", "output"), [(1, 120000, 1000), (1, 20000, 20), (4, 32000, 1000),
                                                               (32, 1000, 1000), (8, 8000, 200),
                                                               # past the token budget (stop56_qa16.md L2)
                                                               (64, 4000, 10), (21, 4000, 10), (32, 8000, 20)])
def test_a_users_tokens_over_its_request_time_are_the_output_rate(concurrency: int, prompt: int, output: int) -> None:
    """Each user's request takes its TTFT and then ``O - 1`` gaps of one TPOT (vLLM's benchmark: TPOT excludes the
    first token), so ``C x O / (TTFT + (O - 1) x TPOT)`` is the output tokens/s in all. A user's own prompt is
    prefilled before its first token, so only the other users' prompts land between its tokens
    (speed.batching.others_output_tokens); counted twice (stop56_qa16.md L1) one user with a 120,000-token prompt
    came out at 31.6 tok/s by this sum against the plan's 46.2 (15.0 against 26.7 at 20,000 / 20). Past the engine's
    token budget the prompts queue (64 users of 4,000 / 10 came out at 124.7 tok/s by it against 112.6:
    stop56_qa16.md L2, after tpotown); with more than one user and output the sum is exact on either side of the
    budget (speed.batching.little_ttft_s: test_with_more_than_one_user_a_request_takes_o_mean_steps)."""
    perf = _serve("llama-3.1-8b", "h100-sxm", Layout(gpus=1), prompt=prompt, output=output, concurrency=concurrency)
    ttft, tpot, rate = (float(perf[k]) for k in ("ttft_s", "tpot_s", "output_tokens_per_s"))  # type: ignore[arg-type]
    assert rate == pytest.approx(concurrency * output / (ttft + (output - 1) * tpot), rel=0.03)
    assert 0 < tpot < concurrency / rate  # the other users' prompts only: shorter than the mean step of them all


def _prompt_bound(concurrency: int) -> dict[str, object]:  # stop56_qa16.md L2: 4,000-token prompts for 10 outputs
    return _serve("llama-3.1-8b", "h100-sxm", Layout(gpus=1), prompt=4000, output=10, concurrency=concurrency)


def test_past_the_token_budget_the_prompts_queue_and_a_users_step_is_one_budget_full_step() -> None:
    """stop56_qa16.md L2: 64 users of 4,000 / 10 on one H100 carry 64 x 4,010 / 10 = 25,664 tokens a steady step,
    past vLLM's 8,192-token budget (max_num_batched_tokens on an H100, engine_limits): no step holds more than the
    budget (vLLM v1 ``scheduler.py`` ``schedule``), decodes first, so a user's step between its tokens holds its 64
    decodes and 8,128 prompt tokens, and the prompts wait. Before: TTFT 0.095 s (one prompt alone), TPOT 560 ms (one
    step of all 25,600 prompt tokens); the output rate (work conserved) stays 112.6 tok/s."""
    from anchorgpu.planner.speed.batching import prompt_bound_output_tokens
    from anchorgpu.planner.speed.estimate import serving_setup
    from anchorgpu.planner.speed.serving import decode_step

    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100-sxm")
    p = plan(model, Workload(task="inference", prompt_tokens=4000, output_tokens=10, concurrency=64), gpu=gpu,
             layout=Layout(gpus=1))
    setup = serving_setup(p, prompt_tokens=4000, output_tokens=10)
    assert setup.max_num_batched_tokens == 8192
    assert prompt_bound_output_tokens(64, 4000, 10, 8192) is not None
    perf = plan_performance(p)
    ttft, tpot, rate = (float(perf[k]) for k in ("ttft_s", "tpot_s", "output_tokens_per_s"))  # type: ignore[arg-type]
    full = decode_step(model, gpu, setup, batch=64, prefill_tokens=8192 - 64, prompt_tokens=4000,
                       cached_tokens=4000 + 10 // 2).step_s
    assert tpot == pytest.approx(full, rel=1e-9)
    assert rate == pytest.approx(112.6, rel=0.01)  # unchanged: the work is the same
    # each user's 10 tokens take 64 x 10 / rate: the wait and its own chunks, then 9 budget-full steps
    assert ttft + 9 * tpot == pytest.approx(64 * 10 / rate, rel=1e-9)
    assert ttft > 20 * tpot > 0  # 64 x 4,010 / 8,192 = 31 budget-full steps a request, 9 of them between its tokens


@pytest.mark.parametrize(("concurrency", "prompt", "output"), [(20, 4000, 10), (32, 1000, 1000), (8, 8000, 200),
                                                               (64, 1000, 200), (2, 500, 2), (21, 4000, 10),
                                                               (64, 4000, 10)])
def test_with_more_than_one_user_a_request_takes_o_mean_steps(concurrency: int, prompt: int, output: int) -> None:
    """A closed loop of ``B`` users (one replica) holds ``B x O`` output tokens in flight and emits ``B / step`` a
    second, so by Little's law a request takes ``O`` mean steps: ``TTFT + (O - 1) x TPOT = O x step`` (``step = B /
    rate``), below the token budget as past it (speed.batching.little_ttft_s). Before stop 57 the steady state's TTFT
    was its prompt's own chunks alone, up to one step short: 20 users of 4,000 / 10 on an H100 gave 0.092 s + 9 x
    0.171 s against 10 x 0.180 s (122.6 tok/s by the sum, rate 111.2: stop56_qa16.md, Stop 56 promptbound)."""
    perf = _serve("llama-3.1-8b", "h100-sxm", Layout(gpus=1), prompt=prompt, output=output, concurrency=concurrency)
    ttft, tpot, rate = (float(perf[k]) for k in ("ttft_s", "tpot_s", "output_tokens_per_s"))  # type: ignore[arg-type]
    step = concurrency / rate  # one replica: the rate is B over the mean step
    assert ttft + (output - 1) * tpot == pytest.approx(output * step, rel=1e-9)
    ttft_top, tpot_top = (float(perf[k]) for k in ("ttft_s_ceiling", "tpot_s_ceiling"))  # type: ignore[arg-type]
    assert ttft_top + (output - 1) * tpot_top == pytest.approx(  # the ceilings by the same rule
        output * concurrency / float(perf["output_tokens_per_s_ceiling"]), rel=1e-9)  # type: ignore[arg-type]


def test_the_prompt_bound_regime_joins_the_steady_state_at_the_budget() -> None:
    """20 users of 4,000 / 10 carry 20 x 401 = 8,020 tokens a step (within 8,192), 21 carry 8,421 (past it). The
    rate, the time per output token and the time to first token run on (each step a little fuller): on both sides
    the time to first token is the request's ``O`` mean steps less its 9 gaps (Little's law). Before stop 57 it rose
    by about one step there, 0.092 -> 0.268 s with a TPOT of 0.18 s (stop56_qa16.md, Stop 56 promptbound: below the
    budget it was the prompt's own chunks alone, one step short of the request's time); now 0.259 -> 0.268 s."""
    below, above = _prompt_bound(20), _prompt_bound(21)
    for key in ("tpot_s", "output_tokens_per_s"):
        assert float(above[key]) == pytest.approx(float(below[key]), rel=0.06)  # type: ignore[arg-type]
    ttft_below, ttft_above, tpot = (float(x) for x in (below["ttft_s"], above["ttft_s"], above["tpot_s"]))  # type: ignore[arg-type]
    assert ttft_below < ttft_above < ttft_below + 0.1 * tpot  # far less than one step
    # where the other users' prompts alone pass the budget (22 users: 22 + 21 x 400 = 8,422) the step between a
    # user's tokens is clamped to it: on from 21 users' unclamped step
    assert float(_prompt_bound(22)["tpot_s"]) == pytest.approx(tpot, rel=0.06)  # type: ignore[arg-type]
    for c in (20, 21, 22, 64):
        perf = _prompt_bound(c)
        assert all(0 < float(perf[k]) < float("inf") for k in ("ttft_s", "tpot_s", "output_tokens_per_s",  # type: ignore[arg-type]
                                                                  "ttft_s_ceiling", "tpot_s_ceiling"))
