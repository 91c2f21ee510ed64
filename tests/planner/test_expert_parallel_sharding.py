"""ZeRO under expert parallelism: a GPU's routed experts are held by only ``tp x cp x dp / ep`` GPUs of its pipeline
stage (Megatron's expert data-parallel group), so that is all their optimizer state, gradients and (ZeRO-3) weights can
be sharded over; the rest of the model is sharded over the data-parallel ranks as before.

Found on DeepSeek-V3's own layout (arXiv:2412.19437 section 3.2: 2,048 H800, PP 16, EP 64 over 8 servers, ZeRO-1 DP,
no TP): the plan said 0.23 GiB of optimizer state per GPU, every parameter's state sharded over all 128 GPUs of a
stage, though each expert is held by 2 of them; the stage's 128 GPUs together held a fifteenth of its state.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner import memory as mm

ADAMW_MIXED_STATE_BYTES = 12  # fp32 master + two fp32 moments per parameter (ZeRO paper, section 3.1)


@pytest.mark.parametrize(("name", "gpus", "tp", "pp", "ep", "zero"), [
    ("deepseek-v3", 2048, 1, 16, 64, 1),  # the published layout
    ("qwen3-235b-a22b", 256, 2, 8, 32, 1),  # Megatron-MoE model zoo, MZ-Q235-H100-EP32
    ("gpt-oss-120b", 64, 1, 4, 8, 1),  # ZeRO-1: Megatron's ZeRO-2 is Megatron-FSDP, which runs no pipeline stages
    ("qwen3-235b-a22b", 256, 2, 1, 8, 3),  # MZ-Q235-H100-EP8-FSDP's split
])
def test_every_parameter_of_a_stage_keeps_its_optimizer_state_on_some_gpu(name: str, gpus: int, tp: int, pp: int,
                                                                          ep: int, zero: int) -> None:
    """Summed over the GPUs of one stage, the optimizer state covers at least the stage's parameters (an even
    stage's, ``total / pp``: the most-loaded stage a GPU is planned for holds no fewer)."""
    model = load_model(name)
    dp = gpus // (tp * pp)
    result = plan(model, Workload(task="train", seq_tokens=4096, recompute="full"), gpu=get_gpu("h100"),
                  layout=Layout(gpus=gpus, tp=tp, pp=pp, dp=dp, ep=ep, zero=zero))
    stage_gpus = gpus // pp
    covered = stage_gpus * result.per_gpu.optimizer_bytes
    assert covered >= ADAMW_MIXED_STATE_BYTES * model.params_total / pp * 0.999
    # and not more than every GPU of the stage holding its whole share unsharded
    assert result.per_gpu.optimizer_bytes < ADAMW_MIXED_STATE_BYTES * model.params_total / pp


def test_zero3_shards_experts_over_the_gpus_that_hold_them() -> None:
    """Qwen3-235B-A22B with TP 2, EP 8 and FSDP on 256 GPUs: each expert lives on 2 x 128 / 8 = 32 GPUs, the rest on
    256 / 2 = 128 data-parallel ranks; the weights one GPU keeps between gathers are the two shards."""
    model = load_model("qwen3-235b-a22b")
    result = plan(model, Workload(task="train", seq_tokens=4096, recompute="full"), gpu=get_gpu("h100"),
                  layout=Layout(gpus=256, tp=2, pp=1, dp=128, ep=8, zero=3))
    assert mm.expert_data_parallel(tp=2, dp=128, cp=1, ep=8) == 32
    experts_bytes = 2 * model.params.experts / 8  # bf16, a GPU's eighth of the experts
    rest_bytes = 2 * (model.params_total - model.params.experts) / 2  # the rest split by TP 2
    gather = result.breakdown["gather_buffer_bytes"]
    assert result.per_gpu.weights_bytes - gather == pytest.approx(experts_bytes / 32 + rest_bytes / 128, rel=0.02)


def test_without_expert_parallelism_the_experts_shard_with_the_rest() -> None:
    assert mm.expert_data_parallel(tp=8, dp=16, cp=2, ep=1) == 16
    model = load_model("mixtral-8x7b-v0.1")
    result = plan(model, Workload(task="train", seq_tokens=4096, recompute="full"), gpu=get_gpu("h100"),
                  layout=Layout(gpus=64, tp=8, pp=1, dp=8, zero=1))
    assert result.per_gpu.optimizer_bytes == pytest.approx(ADAMW_MIXED_STATE_BYTES * model.params_total / 8 / 8,
                                                           rel=0.01)


def test_expert_parallelism_folds_over_the_context_parallel_ranks_too() -> None:
    """Megatron-Core's MoE parallel folding (NVIDIA/Megatron-LM megatron/core/transformer/moe/README.md, "Advantages
    of MoE Parallel Folding": CP 8 with EP 8 needs 8 GPUs, not 64): the model zoo's Qwen3-235B-A22B runs at 131,072
    tokens use TP 4, CP 8, EP 8 and one data-parallel rank a stage. EP divides tp x cp x dp, not tp x dp."""
    model = load_model("qwen3-235b-a22b")
    w = Workload(task="train", seq_tokens=131072, recompute="full", allow_long_context=True)
    folded = plan(model, w, gpu=get_gpu("h100"), layout=Layout(gpus=256, tp=4, pp=8, cp=8, dp=1, ep=8, zero=1))
    assert folded.layout.ep == 8 and folded.layout.cp == 8
    # each expert's copies: tp x cp x dp / ep = 4 of the stage's 32 GPUs
    assert mm.expert_data_parallel(tp=4, dp=1, cp=8, ep=8) == 4
    with pytest.raises(InvalidWorkload, match=r"tp·cp·dp = 32"):
        plan(model, w, gpu=get_gpu("h100"), layout=Layout(gpus=256, tp=4, pp=8, cp=8, dp=1, ep=64, zero=1))
