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
from anchorgpu.planner.speed.training import TrainLayout, slowest_stage_layers, training_step


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
    with pytest.raises(InvalidWorkload, match=r"--virtual-stages 2: pp 8 x 2 does not divide the 126 layers"):
        plan(load_model("llama-3.1-405b"), Workload(task="train", seq_tokens=8192),
             layout=Layout(gpus=512, tp=8, pp=8, dp=8, virtual_stages=2), gpu=get_gpu("h100"))
