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
                                                               (32, 1000, 1000), (8, 8000, 200)])
def test_a_users_tokens_over_its_request_time_are_the_output_rate(concurrency: int, prompt: int, output: int) -> None:
    """Each user's request takes its TTFT and then ``O - 1`` gaps of one TPOT (vLLM's benchmark: TPOT excludes the
    first token), so ``C x O / (TTFT + (O - 1) x TPOT)`` is the output tokens/s in all. A user's own prompt is
    prefilled before its first token, so only the other users' prompts land between its tokens
    (speed.batching.others_output_tokens); counted twice (stop56_qa16.md L1) one user with a 120,000-token prompt
    came out at 31.6 tok/s by this sum against the plan's 46.2 (15.0 against 26.7 at 20,000 / 20)."""
    perf = _serve("llama-3.1-8b", "h100-sxm", Layout(gpus=1), prompt=prompt, output=output, concurrency=concurrency)
    ttft, tpot, rate = (float(perf[k]) for k in ("ttft_s", "tpot_s", "output_tokens_per_s"))  # type: ignore[arg-type]
    assert rate == pytest.approx(concurrency * output / (ttft + (output - 1) * tpot), rel=0.03)
    assert 0 < tpot < concurrency / rate  # the other users' prompts only: shorter than the mean step of them all
