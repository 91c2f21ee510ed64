"""The training chooser tries ZeRO-1, ZeRO-2 and FSDP (on Megatron ZeRO-2 and FSDP without pipeline stages: both are
Megatron-FSDP, which does not run them, layout_checks.sharded_pipeline_refusal; on the PyTorch-native stack
ZeRO-2 without them, DeepSpeed's pipeline engine refusing it, and FSDP with them too, as torchtitan runs FSDP2 under its pipeline schedules), and the sentence of the layout it chose says so.
ZeRO-2 is searched now that its step time counts what keeping a shard of the gradients costs: every micro-batch's
backward reduces its own gradients (:mod:`anchorgpu.planner.speed.zero2`), so it no longer wins ZeRO-1's layouts at
ZeRO-1's speed with less memory."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed import layouts


def _chosen_sentence(p) -> str:  # type: ignore[no-untyped-def]
    return next(a for a in p.assumptions if a.startswith("Layout chosen"))


def test_on_megatron_the_chooser_tries_zero_2_and_fsdp_only_without_pipeline_stages() -> None:
    model = load_model("llama-3.1-70b")
    pairs, _ = layouts._candidates(model, Workload(task="train"), Layout(gpus=32), 32, 2048, 4 * 2**20)
    stages = {(lay.zero, lay.pp > 1) for lay, _ in pairs if lay.dp > 1}  # one replica: nothing to shard
    assert stages == {(1, False), (1, True), (2, False), (3, False)}


def test_on_the_pytorch_stack_zero_2_is_tried_without_pipeline_stages_only_and_fsdp_with_them() -> None:
    model = load_model("llama-3.1-70b")
    pairs, _ = layouts._candidates(model, Workload(task="train", train_stack="pytorch"), Layout(gpus=32), 32, 2048,
                                   4 * 2**20)
    assert {(lay.zero, lay.pp > 1) for lay, _ in pairs if lay.dp > 1} == {(1, False), (1, True), (2, False),
                                                                         (3, False), (3, True)}


def test_the_chosen_layouts_sentence_states_the_zero_rule() -> None:
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    p = plan(model, Workload(task="train"), layout=Layout(gpus=32), gpu=gpu)
    sentence = _chosen_sentence(p)
    assert "ZeRO tried: 1, 2" in sentence and "every micro-batch" in sentence and "not ZeRO-2" not in sentence


def test_the_rule_is_left_out_where_the_stage_was_given_or_nothing_shards() -> None:
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    given = plan(model, Workload(task="train"), layout=Layout(gpus=32, tp=8, pp=1, zero=2), gpu=gpu)
    assert given.layout.zero == 2 and "ZeRO tried" not in _chosen_sentence(given)
    single = plan(load_model("llama-3.1-8b"), Workload(task="train"), layout=Layout(gpus=2, tp=2), gpu=gpu)
    assert single.layout.dp == 1 and "ZeRO tried" not in _chosen_sentence(single)


def test_zero_2_with_pipeline_stages_is_refused_on_megatron_and_zero_1_is_planned() -> None:
    """Megatron's ZeRO-2 is Megatron-FSDP's optim_grads, which runs no pipeline stages; with stages Megatron-Core runs
    the distributed optimizer (ZeRO-1). The README's 70B on 512 H100 had chosen PP 8 (v 10) x DP 64 with ZeRO-2."""
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    with pytest.raises(InvalidWorkload, match=r"--zero 2 with --pp 8: Megatron's ZeRO-2 is Megatron-FSDP"):
        plan(model, Workload(task="train"), layout=Layout(gpus=512, pp=8, zero=2), gpu=gpu)
    assert plan(model, Workload(task="train"), layout=Layout(gpus=512, pp=8, zero=1), gpu=gpu).layout.zero == 1
    chosen = plan(model, Workload(task="train"), layout=Layout(gpus=512), gpu=gpu).layout
    assert not (chosen.zero >= 2 and chosen.pp > 1)
