"""gpt-oss's biased experts and clamped GLU run outside Megatron-Core's fused kernels (``TEGroupedMLP._apply_bias``
adds the fc2 bias times the routing weight in an eager per-expert loop; ``weighted_bias_quick_geglu_impl`` clamps and
re-concatenates the fc1 output outside the fused GEGLU), so a training step on the Megatron-Core stack moves
``k x (28 h + 36 I)`` more bytes a token and MoE layer (benchmarks/moe_training_findings.md); models without them
(Qwen3, dense) and the PyTorch-native stack are unchanged."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model as _load
from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

GPU = get_gpu("b200")
LAYOUT = TrainLayout(gpus=8, dp=8, ep=8, zero=1)


def load_model(name: str) -> ModelSpec:
    model = _load(name)
    assert isinstance(model, ModelSpec)
    return model


def _plain(model: ModelSpec) -> ModelSpec:
    """The same model with experts that have no biases and a GLU without a clamp."""
    assert model.moe is not None
    groups = tuple(replace(g, bias=False) if g.component == "experts" else g for g in model.linear_groups)
    return replace(model, moe=replace(model.moe, glu_clamp=None), linear_groups=groups)


def _compute_s(model: ModelSpec, **kw: object) -> float:
    step = training_step(model, GPU, LAYOUT, seq_tokens=4096, micro_batch=1, global_batch_tokens=8 * 4096,
                         **kw)  # type: ignore[arg-type]
    return step.breakdown_s["compute"]


def test_the_stated_counts_are_the_code_readings() -> None:
    counts = read_calibration_doc()["stated"]["moe_unfused_expert_bytes"]["value"]
    assert counts == {"fc2_bias_per_hidden": 28, "fc2_bias_forward_per_hidden": 12,
                      "glu_clamp_per_intermediate": 36, "glu_clamp_forward_per_intermediate": 16}
    assert calibration().moe_unfused_expert_bytes["glu_clamp_per_intermediate"] == 36


def test_gpt_oss_reads_its_clamp_and_qwen3_has_none() -> None:
    clamps = {name: getattr(load_model(name).moe, "glu_clamp", "no moe")
              for name in ("gpt-oss-120b", "gpt-oss-20b", "qwen3-30b-a3b")}
    assert clamps == {"gpt-oss-120b": 7.0, "gpt-oss-20b": 7.0, "qwen3-30b-a3b": None}


@pytest.mark.parametrize(("recompute", "fc2", "clamp"), [("none", 28, 36), ("moe", 28 + 12, 36 + 16),
                                                         ("selective", 28, 36)])
def test_a_gpt_oss_step_moves_the_stated_bytes_at_bandwidth(recompute: str, fc2: int, clamp: int) -> None:
    model = load_model("gpt-oss-120b")
    moe = model.moe
    assert moe is not None
    extra = _compute_s(model, recompute=recompute) - _compute_s(_plain(model), recompute=recompute)
    # one micro-batch a GPU: 4,096 tokens through every MoE layer, each routed to k experts
    bytes_ = 4096 * moe.num_moe_layers * moe.experts_per_token * (
        fc2 * model.hidden_size + clamp * moe.expert_intermediate_size)
    assert extra == pytest.approx(bytes_ / GPU.memory_bandwidth_bytes_per_s, rel=1e-6)
    assert extra > 0


def test_models_without_biased_or_clamped_experts_and_the_pytorch_stack_are_unchanged() -> None:
    for name in ("qwen3-30b-a3b", "deepseek-v3"):
        model = load_model(name)
        assert _compute_s(model) == _compute_s(_plain(model))
    oss = load_model("gpt-oss-20b")
    assert _compute_s(oss, train_stack="pytorch") == _compute_s(_plain(oss), train_stack="pytorch")
    dense = load_model("llama-3.1-8b")
    assert dense.moe is None
    no_bytes = replace(calibration(), moe_unfused_expert_bytes={})
    assert _compute_s(dense) == _compute_s(dense, cal=no_bytes)
