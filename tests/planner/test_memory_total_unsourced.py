"""A GPU whose runtime total is not sourced is planned on the vendor's figure, and the plan says so.

The CUDA runtime reports less than the vendor's figure where it is sourced (the catalog's H100 SXM: 79.18 GiB of its
"80 GB", ``src/anchorgpu/hardware/data/gpus.toml``); the H800 has the same memory and no sourced total, so its plan
budgets against 80.00 GiB and must carry the caveat (a hostile walk found nothing said it)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import WARNING_CODES, Layout, Workload, plan


def _codes(gpu: str, task: str = "inference") -> list[str]:
    result = plan(load_model("llama-3.1-8b"), Workload(task=task, context_tokens=4096), layout=Layout(gpus=1),
                  gpu=get_gpu(gpu))
    return [w.code for w in result.warnings]


@pytest.mark.parametrize("gpu", ["h800", "mi250x"])
def test_a_gpu_planned_on_the_vendors_figure_says_so(gpu: str) -> None:
    assert not get_gpu(gpu).memory_is_runtime
    assert "memory_total_unsourced" in _codes(gpu)
    assert "memory_total_unsourced" in _codes(gpu, task="train")


@pytest.mark.parametrize("gpu", ["h100-sxm", "h20", "mi300x"])
def test_a_gpu_with_a_sourced_runtime_total_does_not(gpu: str) -> None:
    assert get_gpu(gpu).memory_is_runtime
    assert "memory_total_unsourced" not in _codes(gpu)


def test_the_message_names_the_gpu_and_the_figure_planned_on() -> None:
    result = plan(load_model("llama-3.1-8b"), Workload(context_tokens=4096), layout=Layout(gpus=1), gpu=get_gpu("h800"))
    (warning,) = [w for w in result.warnings if w.code == "memory_total_unsourced"]
    assert "NVIDIA H800" in warning.message and "80.00 GiB" in warning.message and "CUDA runtime" in warning.message
    assert WARNING_CODES["memory_total_unsourced"].concept == "vram"
