"""A LoRA or QLoRA plan with no --global-batch is timed at the fine-tuning default of 32 sequences (torchtune's
single-GPU Llama 3.1 8B QLoRA recipe: batch_size 2 x gradient_accumulation_steps 16, pytorch/torchtune@0b3e04ad
recipes/configs/llama3_1/8B_qlora_single_device.yaml), not pretraining's 4M tokens (2,048 sequences of 2,048: minutes
a step on one GPU); pretraining keeps 4M; a stated batch is kept; recommend times the same batch."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Plan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec


def _plan(task: str, **kw: object) -> Plan:
    return plan(load_model("llama-3.1-8b"), Workload(task=task, **kw), gpu=get_gpu("h100"))


def _performance(task: str, **kw: object) -> dict[str, object]:
    return plan_performance(_plan(task, **kw))


def _batch_line(perf: dict[str, object]) -> str:
    return next(a for a in perf["assumptions"] if a.startswith("global batch timed"))  # type: ignore[attr-defined]


@pytest.mark.parametrize("task", ["lora", "qlora"])
def test_fine_tuning_is_timed_at_32_sequences_and_says_so(task: str) -> None:
    p = _plan(task)
    perf = plan_performance(p)
    assert perf["global_batch_tokens"] == 32 * 2048  # the default 2,048-token sequence
    # DP 1: 32 micro-batches of 1 (LoRA), or 8 of 4 (QLoRA: the chooser's micro-batch amortises the dequantization
    # each micro-batch pays, speed.dequant, since stop 58)
    assert p.layout.dp == 1 and perf["microbatches"] * (p.workload.micro_batch or 1) == 32
    assert "the default for fine-tuning, 32 sequences (--global-batch not given)" in _batch_line(perf)
    assert perf["step_time_s"] < 60  # type: ignore[operator]  # seconds, not the 4M batch's minutes


def test_the_fine_tuning_default_follows_the_sequence_length() -> None:
    assert _performance("lora", seq_tokens=4096)["global_batch_tokens"] == 32 * 4096


def test_pretraining_keeps_the_4m_default() -> None:
    perf = plan_performance(plan(load_model("llama-3.1-8b"), Workload(task="train"), gpu=get_gpu("h100"),
                                 layout=Layout(gpus=8)))
    assert perf["global_batch_tokens"] == 4 * 2**20
    assert "the default (--global-batch not given)" in _batch_line(perf)


def test_a_stated_batch_is_timed_as_given_for_lora() -> None:
    perf = _performance("lora", global_batch_tokens=4 * 2**20)
    assert perf["global_batch_tokens"] == 4 * 2**20
    assert "as --global-batch gives it" in _batch_line(perf)


def test_recommend_times_the_fine_tuning_default_as_plan_does() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    shape = HardwareShape(id="one-h100", gpu=gpu, gpus_per_server=1, max_servers=1)
    w = Workload(task="qlora", micro_batch=1, recompute="full")
    result = sweep(model, (shape,), SweepSpec(workload=w))
    row = next(r for r in map(result.row, range(result.evaluated)) if r["fits"] and r["gpus"] == 1)
    perf = plan_performance(plan(model, w, gpu=gpu, choose_layout=False, layout=Layout(gpus=1)))
    assert perf["global_batch_tokens"] == 32 * 2048
    assert row["train_tokens_per_s"] == pytest.approx(perf["train_tokens_per_s"], rel=1e-9)
