"""``--recompute moe``: a mixture of experts' MoE blocks keep their input only and run again in the backward pass
(Megatron-Core's ``--recompute-granularity selective --recompute-modules moe``).

The Megatron-MoE model zoo trains Qwen3-235B-A22B on 256 H100 at 16k-131k-token sequences with TP 4, PP 8 x VP 4,
EP 8 and micro-batch 1, recomputing its norms and MoE layers (yanring/Megatron-MoE-ModelZoo
best_practice/Qwen3/readme.md, commit c1ad0b5; rows MZ-Q235-H100-LC*). Without a MoE recompute that layout needs more
than an 80 GB H100 holds; full recompute was the only way to plan it.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.speed.experts import expert_gemms_per_layer
from anchorgpu.planner.speed.flops import moe_block_params, training_flops_per_token
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run

ZOO_LAYOUT = Layout(gpus=256, tp=4, pp=8, dp=8, ep=8, zero=1, virtual_stages=4)


def _zoo(recompute: str | None):  # type: ignore[no-untyped-def]
    return plan(load_model("qwen3-235b-a22b"), Workload(task="train", seq_tokens=16384, micro_batch=1,
                                                        recompute=recompute),  # type: ignore[arg-type]
                gpu=get_gpu("h100"), layout=ZOO_LAYOUT)


def test_the_model_zoos_long_context_layout_fits_with_its_moe_blocks_recomputed() -> None:
    none, moe, full = _zoo("none"), _zoo("moe"), _zoo("full")
    assert not none.fits and moe.fits and full.fits
    assert full.per_gpu.activations_bytes < moe.per_gpu.activations_bytes < none.per_gpu.activations_bytes
    # left to choose, the least recompute that fits this layout is the MoE blocks', not whole layers
    assert _zoo(None).workload.recompute == "moe"


def test_it_drops_exactly_the_expert_intermediates() -> None:
    """Per layer: the ``6 * f * (k + shared) / h`` values a token keeps in a MoE layer's experts (TP-split)."""
    model = load_model("qwen3-30b-a3b")
    s, b, t = 4096, 1, 2
    kept = {rc: mm.layer_activation_bytes(model, s=s, b=b, t=t, sp=True, recompute=rc)  # type: ignore[arg-type]
            for rc in ("none", "moe", "full")}
    share = mm.moe_block_activation_share(model)
    assert share == pytest.approx(6 * 768 * 8 / 2048)
    assert kept["none"] - kept["moe"] == pytest.approx(s * b * model.hidden_size * share / t)
    assert kept["full"] < kept["moe"]


def test_it_runs_the_moe_blocks_forward_again() -> None:
    model, gpu = load_model("qwen3-235b-a22b"), get_gpu("h100")
    model_f, hw_f = training_flops_per_token(model, 4096, recompute="moe")
    assert hw_f - model_f == pytest.approx(2 * moe_block_params(model))
    assert training_flops_per_token(model, 4096)[0] == model_f  # MFU counts the model's FLOPs either way
    assert expert_gemms_per_layer(recompute="moe") == expert_gemms_per_layer() + 2
    lay = TrainLayout(gpus=64, tp=1, pp=1, dp=64, ep=8, zero=1)
    steps = {rc: training_step(model, gpu, lay, seq_tokens=4096, global_batch_tokens=64 * 4096,
                               recompute=rc) for rc in ("none", "moe", "full")}  # type: ignore[arg-type]
    # dispatch and combine forward again: six all-to-alls a MoE layer instead of four, for whole layers too
    assert steps["moe"].breakdown_s["ep_alltoall"] == pytest.approx(steps["none"].breakdown_s["ep_alltoall"] * 1.5)
    assert steps["full"].breakdown_s["ep_alltoall"] == pytest.approx(steps["moe"].breakdown_s["ep_alltoall"])
    assert steps["none"].step_s < steps["moe"].step_s < steps["full"].step_s


def test_a_dense_model_has_no_moe_blocks_to_recompute(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(InvalidWorkload, match="--recompute moe"):
        plan(load_model("llama-3.1-8b"), Workload(task="train", recompute="moe"), gpu=get_gpu("h100"),
             layout=Layout(gpus=1))
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--recompute", "moe")
    assert code == 2 and "has none" in err and len(err.strip().splitlines()) == 1


def test_moe_recompute_for_a_dense_model_is_refused_after_the_same_layout_was_planned() -> None:
    # the layout memo was keyed without the recompute: a hit from an earlier plan of that layout skipped the refusal
    model, layout = load_model("llama-3.1-8b", offline=True), Layout(gpus=8, tp=1, pp=1, dp=8)
    plan(model, Workload(task="train", recompute="full"), gpu=get_gpu("h100"), layout=layout)
    with pytest.raises(InvalidWorkload, match="--recompute moe recomputes a mixture of experts' MoE blocks"):
        plan(model, Workload(task="train", recompute="moe"), gpu=get_gpu("h100"), layout=layout)
