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


def test_uneven_replicas_count_only_the_users_there_are() -> None:
    # 31 users over 4 replicas: the busiest runs 8 and paces them all; the total is 31 users' tokens, not 32's
    perf = _serve("bloomz-560m", "h100-sxm", Layout(gpus=8, tp=2), prompt=1000, output=200, concurrency=31)
    assert perf["output_tokens_per_s"] <= 31 / perf["tpot_s"] * (1 + 1e-9)
    assert perf["output_tokens_per_s"] == pytest.approx(31 * perf["decode_tokens_per_s_per_user"], rel=1e-9)
