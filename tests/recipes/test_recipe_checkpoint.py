"""A launch recipe serves the checkpoint the plan was asked for: a registry row's other checkpoints named by their
Hub id or repository name (the row's aliases: ``meta-llama/Llama-3.1-8B-Instruct`` of ``llama-3.1-8b``, published
from ``meta-llama/Llama-3.1-8B``) were launched as the row's base repository (an instruct model served as its base);
a quantized row (NVIDIA's NVFP4 DeepSeek-R1-0528) serves its own repository, the row's name its published one."""

from __future__ import annotations

import shlex

import pytest

from anchorgpu.architectures import ModelSpec, load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.recipes import build_recipe


def _served(ref: str, gpu: str = "h100", gpus: int = 1, kind: str = "vllm") -> str:
    p = plan(load_model(ref), Workload(context_tokens=4096), layout=Layout(gpus=gpus), gpu=get_gpu(gpu))
    words = shlex.split(build_recipe(p, kind).command.replace("\\\n", " "))
    return words[words.index("serve") + 1]


@pytest.mark.parametrize(("ref", "served"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct"),  # the alias is that repository's name
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B"),
    ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"),
    ("mistralai/Mistral-Small-24B-Base-2501", "mistralai/Mistral-Small-24B-Base-2501"),
])
def test_vllm_serves_the_checkpoint_asked_for(ref: str, served: str) -> None:
    assert _served(ref) == served


def test_sglang_serves_it_too_and_the_plan_is_the_rows() -> None:
    spec = load_model("meta-llama/Llama-3.1-8B-Instruct")
    assert isinstance(spec, ModelSpec) and spec.name == "llama-3.1-8b"
    assert spec.params_total == load_model("llama-3.1-8b").params_total  # type: ignore[union-attr]
    cmd = build_recipe(plan(spec, Workload(context_tokens=4096), gpu=get_gpu("h100")), "sglang").command
    assert "meta-llama/Llama-3.1-8B-Instruct" in cmd


def test_a_quantized_row_serves_its_own_checkpoint() -> None:
    assert _served("deepseek-r1-0528-nvfp4", gpu="b200", gpus=8) == "nvidia/DeepSeek-R1-0528-FP4"
