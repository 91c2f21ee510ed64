"""A weights format the task cannot use is refused before any layout is searched for it.

The planner page lists every weights format beside a plan, one plan each. For a training plan without a layout the
chooser ranked every candidate layout (24,128 for Mixtral-8x7B on H100s) and planned each, and each plan refused
the format; only then did the refusal reach the user: about 2 s per format, 45 s for the page of
``/plan?model=mixtral-8x7b&task=train&gpu=h100-sxm&seq=4096``. The refusal does not depend on the layout, so it
comes first.
"""

from __future__ import annotations

from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import PrecisionPlan, Workload, plan
from anchorgpu.planner.speed import layouts, serving_layouts


@pytest.fixture
def no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    def searched(*_args: Any, **_kwargs: Any) -> None:
        raise AssertionError("a layout was searched for a format the task refuses")

    for module, name in ((layouts, "choose_training_layout"), (serving_layouts, "choose_serving_layout"),
                         (serving_layouts, "choose_serving_layout_on")):
        monkeypatch.setattr(module, name, searched)


@pytest.mark.parametrize(("task", "weights", "refusal"), [
    ("train", "fp8", "full training keeps 16-bit weights"),
    ("train", "gguf-q4_k_m", "full training keeps 16-bit weights"),
    ("qlora", "bf16", "QLoRA trains adapters on a quantized frozen base"),
])
def test_the_refusal_comes_before_the_layout_search(no_search: None, task: str, weights: str, refusal: str) -> None:
    with pytest.raises(InvalidWorkload, match=refusal):
        plan(load_model("mixtral-8x7b"), Workload(task=task, seq_tokens=4096), precision=PrecisionPlan(weights=weights),
             gpu=get_gpu("h100-sxm"))


def test_a_format_the_task_takes_is_still_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = layouts.choose_training_layout

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(layouts, "choose_training_layout", counted)
    p = plan(load_model("llama-3.1-8b"), Workload(task="train", seq_tokens=4096), precision=PrecisionPlan(weights="bf16"),
             gpu=get_gpu("h100-sxm"))
    assert calls and p.fits is True
