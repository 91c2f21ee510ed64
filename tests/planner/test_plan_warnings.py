"""``checks.plan_warnings`` (one memo lookup a plan) gives what ``layout_warnings`` then ``precision_warnings`` give."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.checks import layout_warnings, plan_warnings, precision_warnings


@pytest.mark.parametrize(("model", "gpu", "work", "layout", "weights"), [
    ("llama-3.1-70b", "h100", Workload(context_tokens=8192, concurrency=32), Layout(gpus=8, tp=4, dp=2), "fp8"),
    ("llama-3.1-70b", "mi300x", Workload(task="train", seq_tokens=4096), Layout(gpus=16, tp=8, pp=2, zero=1), None),
    ("qwen3-235b-a22b", "h100", Workload(context_tokens=4096, concurrency=8), Layout(gpus=16, tp=16, ep=16), None),
    ("llama-3.1-8b", None, Workload(context_tokens=4096), Layout(gpus=2, tp=2), "nf4"),
])
def test_plan_warnings_are_the_layouts_then_the_precisions(model: str, gpu: str | None, work: Workload,
                                                           layout: Layout, weights: str | None) -> None:
    p = plan(load_model(model), work, layout=layout, gpu=get_gpu(gpu) if gpu else None,
             precision=PrecisionPlan(weights=weights))
    from anchorgpu.planner.checks import is_shipped
    from anchorgpu.planner.validate import resolve_format

    fmt = resolve_format(p.model, p.workload, p.precision, [])  # type: ignore[arg-type]
    shipped = fmt.quantized and is_shipped(fmt, p.model)  # type: ignore[arg-type]
    both = plan_warnings(p.workload, p.layout, fmt, p.precision, p.gpu, p.model)
    assert both == (*layout_warnings(p.workload, p.layout, p.gpu),
                    *precision_warnings(fmt, p.precision, p.gpu, shipped=shipped))
    assert both and all(w in p.warnings for w in both)
