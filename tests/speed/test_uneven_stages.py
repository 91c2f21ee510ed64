"""Pipeline stages that do not divide the layers: modelled for published runs, refused as input.

torchtitan splits Llama 3.1 405B's 126 layers into 16 chunks of 7 or 8 (benchmarks/llama3_h100_202412_torchtitan.md,
generate_split_points), and the Llama 3 paper takes one layer off its first and last stage; the planner's own
layouts divide evenly, as Megatron-LM requires, and ``plan`` says so in one line.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import slowest_stage_layers, training_step


def test_the_busiest_rank_sets_the_pace() -> None:
    assert slowest_stage_layers(126, 8, 2) == 16 and slowest_stage_layers(126, 16) == 8
    model, gpu = load_model("llama-3.1-405b"), get_gpu("h100")
    even = training_step(model, gpu, TrainLayout(gpus=1024, tp=8, pp=2, dp=64), seq_tokens=8192, micro_batch=1,
                         global_batch_tokens=2**24)
    uneven = training_step(model, gpu, TrainLayout(gpus=2048, tp=8, pp=4, dp=64), seq_tokens=8192, micro_batch=1,
                           global_batch_tokens=2**24)
    # 126 over 4 ranks: the busiest holds 32 of an even 31.5, so its share of the compute is 32/31.5 of a quarter
    assert uneven.breakdown_s["compute"] / even.breakdown_s["compute"] == pytest.approx(0.5 * 32 / 31.5, rel=0.02)


def test_uneven_interleaving_is_modelled_but_more_chunks_than_layers_is_not() -> None:
    model, gpu = load_model("llama-3.1-405b"), get_gpu("h100")
    lay = TrainLayout(gpus=512, tp=8, pp=8, dp=8, zero=3, virtual_stages=2)
    assert training_step(model, gpu, lay, seq_tokens=8192, micro_batch=4, global_batch_tokens=256 * 8192).step_s > 0
    with pytest.raises(InvalidWorkload, match="more than the 126 layers"):
        training_step(model, gpu, TrainLayout(gpus=512, tp=8, pp=8, dp=8, virtual_stages=16), seq_tokens=8192)


def test_plan_refuses_virtual_stages_that_do_not_divide_the_layers() -> None:
    with pytest.raises(InvalidWorkload, match=r"--virtual-stages 2: --pp 5 x 2 does not divide the 126 layers .*, nor "
                                              r"128 with the embedding and the loss counted as layers"):
        plan(load_model("llama-3.1-405b"), Workload(task="train", seq_tokens=8192),
             layout=Layout(gpus=640, tp=8, pp=5, dp=16, virtual_stages=2), gpu=get_gpu("h100"))


def test_plan_takes_a_split_that_counts_the_embedding_and_the_loss_as_layers() -> None:
    """The Megatron-MoE model zoo runs Qwen3-235B-A22B's 94 layers as PP 8 x VP 4 (yanring/Megatron-MoE-ModelZoo
    best_practice/Qwen3/readme.md, commit c1ad0b5; rows MZ-Q235-H100-LC*): 32 chunks of 3 with the embedding and the
    loss each counted as a layer (Megatron-Core's --account-for-embedding-in-pipeline-split
    --account-for-loss-in-pipeline-split). It was refused; a published layout plans, and says how it was split."""
    p = plan(load_model("qwen3-235b-a22b"), Workload(task="train", seq_tokens=16384, micro_batch=1, recompute="full"),
             layout=Layout(gpus=256, tp=4, pp=8, dp=8, ep=8, zero=1, virtual_stages=4), gpu=get_gpu("h100"))
    assert p.layout.virtual_stages == 4 and p.fits
    from anchorgpu.planner.speed.estimate import plan_performance

    line = next(a for a in plan_performance(p)["assumptions"] if "embedding and the loss" in a)
    assert "96" in line and "3 a chunk" in line
