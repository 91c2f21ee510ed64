"""recommend reads each shown row's ceilings from the parts ``plan_performance`` computes its serving figures from
(``serving_plan.serving_core``; ``batching.saturated_rates`` where only the rate at saturation is read), without the
rest of the performance section. Those parts must give, to the bit, the figures ``plan_performance`` reports: dense
and mixture-of-experts models, attention data parallelism, each engine, below and past saturation."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.batching import saturated_rates
from anchorgpu.planner.speed.estimate import (
    engine_reservation,
    performance_calibration,
    plan_performance,
    request_tokens,
)
from anchorgpu.planner.speed.serving_plan import serving_core, serving_saturation
from anchorgpu.planner.speed.serving_setup import serving_setup

CASES = [  # (model, gpu, layout, weights, engine, concurrency)
    ("llama-3.1-70b", "h100", Layout(gpus=4, tp=4), "fp8", "vllm", 32),
    ("llama-3.2-1b", "h200", Layout(gpus=1), "bf16", "vllm", 1500),  # past the engine's 1,024 sequences: queued
    ("llama-3.1-70b", "l40s", Layout(gpus=4, tp=2, pp=2), "int4-awq", "vllm", 7),  # two stages, uneven split
    ("llama-3.1-8b", "h200", Layout(gpus=3, tp=1, dp=3), "bf16", "trtllm", 10),  # replicas unevenly loaded
    ("llama-3.1-8b", "mi300x", Layout(gpus=1), "bf16", "sglang", 64),
    ("qwen3-30b-a3b", "h100", Layout(gpus=4, tp=4), "bf16", "vllm", 64),
    ("qwen3-235b-a22b", "h200", Layout(gpus=8, tp=8), "fp8", "sglang", 256),
    ("deepseek-v3", "h200", Layout(gpus=8, tp=1, dp=8, ep=8), "fp8-block128x128", "vllm", 64),  # attention DP
]


@pytest.mark.parametrize(("name", "gpu", "layout", "weights", "engine", "conc"), CASES)
def test_the_parts_give_plan_performances_figures(name: str, gpu: str, layout: Layout, weights: str, engine: str,
                                                  conc: int) -> None:
    model = load_model(name)
    context = 2048 if conc > 1024 else 8192
    p = plan(model, Workload(task="inference", context_tokens=context, concurrency=conc, engine=engine),
             precision=PrecisionPlan(weights=weights), layout=layout, gpu=get_gpu(gpu), suggest=False,
             choose_layout=False)
    assert p.fits, name
    perf = plan_performance(p, prompt_tokens=1024, output_tokens=256)
    prompt, output = request_tokens(p, 1024, 256)
    cal = performance_calibration(None, None, None)
    setup, limits, sat, est = serving_core(p, model, prompt, output, cal, engine_reservation(engine))
    assert (setup, limits, sat) == serving_saturation(p, prompt, output, cal, engine_reservation(engine))
    # the setup recommend re-times on a shape's servers: serving_setup of the plan with its own defaults
    assert setup == serving_setup(p, prompt_tokens=prompt, output_tokens=output)
    assert sat == perf["saturation_concurrency"]
    if conc > 1024:  # the queued case is what it says
        assert sat < conc
    for key, value in (("ttft_s_ceiling", est.ttft_s_ceiling), ("tpot_s_ceiling", est.tpot_s_ceiling),
                       ("output_tokens_per_s_ceiling", est.output_tokens_per_s_ceiling),
                       ("decode_tokens_per_s_per_user_ceiling", 1.0 / est.tpot_s_ceiling),
                       ("max_output_tokens_per_s", est.max_output_tokens_per_s),
                       ("max_output_tokens_per_s_ceiling", est.max_output_tokens_per_s_ceiling),
                       ("ttft_s", est.ttft_s), ("tpot_s", est.tpot_s)):
        assert perf[key] == value, key  # the same float, not a close one
    assert saturated_rates(model, p.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                           saturation_concurrency=max(sat, 1), cal=cal) == (
        est.max_output_tokens_per_s, est.max_output_tokens_per_s_ceiling)
