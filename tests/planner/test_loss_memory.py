"""The loss's memory by cross-entropy implementation (planner/data/loss_memory.json, planner.memory.loss): each stack's
default, a stated implementation, the plan's assumption line, and the Megatron-Bridge rows planned with the loss their
recipes ran (Transformer Engine's fused kernel, cross_entropy_fusion_impl 'te')."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.inputs import CROSS_ENTROPY_IMPLS, TRAIN_STACKS
from anchorgpu.planner.memory.loss import default_cross_entropy, loss_memory
from anchorgpu.planner.speed.runs import load_runs, training_plan_of

MODEL = load_model("llama-3.1-8b")
H100 = get_gpu("h100")


def _plan(**workload):  # type: ignore[no-untyped-def]
    w = Workload(task="train", seq_tokens=8192, micro_batch=1, recompute="none", **workload)
    return plan(MODEL, w, gpu=H100, suggest=False, choose_layout=False, layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=3))


def test_every_implementation_names_what_it_keeps_and_its_source() -> None:
    for name in CROSS_ENTROPY_IMPLS:
        entry = loss_memory(name)
        assert entry.bytes_per_logit > 0 and entry.keeps and entry.source
    assert {default_cross_entropy(stack) for stack in TRAIN_STACKS} == {"unfused", "eager"}


def test_a_stated_loss_is_planned_at_its_bytes_a_logit() -> None:
    unfused = _plan()
    fused = _plan(cross_entropy="te")
    ratio = loss_memory("te").bytes_per_logit / loss_memory("unfused").bytes_per_logit
    assert fused.breakdown["logits_bytes"] == pytest.approx(ratio * unfused.breakdown["logits_bytes"], abs=1)
    saved = unfused.breakdown["logits_bytes"] - fused.breakdown["logits_bytes"]
    assert unfused.per_gpu.activations_bytes - fused.per_gpu.activations_bytes == saved


def test_the_plan_says_what_the_loss_keeps() -> None:
    default = [line for line in _plan().assumptions if line.startswith("Loss (")]
    stated = [line for line in _plan(cross_entropy="te").assumptions if line.startswith("Loss (")]
    assert len(default) == 1 and "stack's default" in default[0] and "fp32 copy" in default[0]
    assert len(stated) == 1 and "as stated" in stated[0] and "Transformer Engine" in stated[0]


def test_fine_tuning_refuses_a_stated_loss() -> None:
    with pytest.raises(InvalidWorkload, match="--cross-entropy"):
        plan(MODEL, Workload(task="lora", cross_entropy="te"), gpu=H100, suggest=False)


def test_megatron_bridge_rows_are_planned_with_transformer_engine_loss() -> None:
    """Every Megatron-Bridge row says it ran TE's fused loss (its performance scripts set it, 25.11), and its plan holds
    the loss that kernel keeps: the Llama 3 70B run on GB200 (0.1 GiB spare with 4-byte logits) fits with room."""
    rows = [run.row for run in load_runs() if run.phase == "train" and run.id.startswith("MB-")]
    assert rows and all(row.get("cross_entropy") == "te" for row in rows)
    row = next(r for r in rows if r["id"] == "MB-GB200-L3-70B")
    as_run, unfused = training_plan_of(row), training_plan_of({**row, "cross_entropy": None})
    assert as_run.fits and not unfused.fits
