"""The FP8 training assumption names the framework the GPU trains FP8 with (gpus.toml training_stacks), as the FP4
line does: ROCm Transformer Engine on the MI300X, MI325X and MI355X (S33, ROCm/TransformerEngine@030b7921
transformer_engine/pytorch/quantization.py check_fp8_support: FP8 on gfx942/gfx950), NVIDIA's Transformer Engine on
Hopper (S32, NVIDIA/TransformerEngine@001597e9: FP8 from compute capability 8.9), in plan and in recommend. Wording
only: the memory planned is the same (FP8 parameters, two bytes a parameter)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Workload, plan
from anchorgpu.planner.inputs import Layout
from cli_runner import run_json

FP8_TRAIN = Workload(task="train", seq_tokens=4096, train_precision="fp8")


def _fp8_line(assumptions: list[str]) -> str:
    (said,) = [a for a in assumptions if a.startswith("FP8 training as")]
    return said


@pytest.mark.parametrize(("gpu", "stack"), [("mi300x", "ROCm Transformer Engine"), ("mi325x", "ROCm Transformer Engine"),
                                            ("mi355x", "ROCm Transformer Engine"), ("h100", "Transformer Engine")])
def test_plan_names_the_gpus_own_fp8_training_stack(gpu: str, stack: str) -> None:
    result = plan(load_model("llama-3.1-8b"), FP8_TRAIN, gpu=get_gpu(gpu), suggest=False)
    said = _fp8_line(list(result.assumptions))
    assert said.startswith(f"FP8 training as Megatron-Core runs it on {stack} with FP8 parameters "
                           "(--fp8-param-gather"), said


def test_the_fp8_stack_changes_no_memory() -> None:
    """The MI300X and the H100 plan the same weights and optimizer bytes a GPU for FP8 training on one layout (only
    the words differ); a control that the line is wording."""
    model, layout = load_model("llama-3.1-8b"), Layout(gpus=8, tp=2, dp=4)
    amd = plan(model, FP8_TRAIN, layout=layout, gpu=get_gpu("mi300x"), suggest=False).per_gpu
    nvidia = plan(model, FP8_TRAIN, layout=layout, gpu=get_gpu("h100"), suggest=False).per_gpu
    assert (amd.weights_bytes, amd.optimizer_bytes) == (nvidia.weights_bytes, nvidia.optimizer_bytes)


def _recommend_fp8_line(capsys: pytest.CaptureFixture[str], *gpu: str) -> str:
    answer = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp8", "--top",
                      "2", *gpu)
    return _fp8_line(answer["assumptions"])


def test_recommend_fp8_on_mi300x_names_rocm_te(capsys: pytest.CaptureFixture[str]) -> None:
    said = _recommend_fp8_line(capsys, "--gpu", "mi300x")
    assert said.startswith("FP8 training as Megatron-Core runs it on ROCm Transformer Engine with FP8 parameters"), said


def test_recommend_fp8_on_h100_names_transformer_engine(capsys: pytest.CaptureFixture[str]) -> None:
    said = _recommend_fp8_line(capsys, "--gpu", "h100")
    assert said.startswith("FP8 training as Megatron-Core runs it on Transformer Engine with FP8 parameters"), said


def test_recommend_fp8_over_the_catalog_names_each_gpus_framework(capsys: pytest.CaptureFixture[str]) -> None:
    said = _recommend_fp8_line(capsys)
    assert said.startswith("FP8 training as Megatron-Core runs it on each GPU's framework ("), said
    assert "mi300x" in said and ": ROCm Transformer Engine" in said and "h100-sxm" in said, said
    assert ") with FP8 parameters (--fp8-param-gather" in said, said
