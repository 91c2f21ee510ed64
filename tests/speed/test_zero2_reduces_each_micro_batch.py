"""ZeRO-2 keeps a 1/DP shard of the gradients, so every micro-batch's backward reduces its own gradients
(:mod:`anchorgpu.planner.speed.zero2`): DeepSpeed's stage 2 all-reduces each bucket in every backward and waits for the
last one (microsoft/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py at 022f223, ``reduce_ready_partitions_and_remove_
grads`` and ``average_tensor``), Megatron-FSDP's ``optim_grads`` reduce-scatters into its distributed gradient buffer.
Before, the step time counted ZeRO-2's sync once a step, exactly as ZeRO-1's. With pipeline stages the PyTorch stack
plans ZeRO-2 as Llama 3's FSDP (arXiv:2407.21783 section 3.3.2; row L3-405B): a reduce-scatter a layer every backward,
not DeepSpeed's (whose pipeline engine refuses stage 2: deepspeed/runtime/pipe/engine.py at 0050fda)."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.cli import main
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step

MODEL, H100 = load_model("llama-3.1-70b"), get_gpu("h100")
SLOW_NIC = 100e9 / 8  # 100 Gb/s a GPU: the gradients' traffic outruns a micro-batch's backward


def _step(zero: int, stack: str, gpus: int = 64, pp: int = 1, batch: int = 4 * 2**20):  # type: ignore[no-untyped-def]
    lay = TrainLayout(gpus=gpus, tp=8, pp=pp, dp=gpus // (8 * pp), zero=zero)
    return training_step(MODEL, H100, lay, seq_tokens=8192, global_batch_tokens=batch, train_stack=stack,
                         network_bytes_per_s=SLOW_NIC)


@pytest.mark.parametrize("stack", ["megatron", "pytorch"])
def test_zero_2_pays_a_reduce_every_micro_batch_and_zero_1_once_a_step(stack: str) -> None:
    one, two = _step(1, stack), _step(2, stack)
    assert two.microbatches == one.microbatches == 64
    assert two.breakdown_s["dp_sync"] > 5 * one.breakdown_s["dp_sync"]  # was equal: once a step both
    assert two.tokens_per_s < one.tokens_per_s
    assert two.breakdown_s["fsdp_comm"] == 0.0  # no parameter gathers


def test_the_per_micro_batch_reduce_grows_with_the_micro_batches() -> None:
    few, many = _step(2, "megatron", batch=2**20), _step(2, "megatron", batch=4 * 2**20)
    assert many.microbatches == 4 * few.microbatches
    assert many.breakdown_s["dp_sync"] > 3 * few.breakdown_s["dp_sync"]


def test_deepspeed_all_reduces_where_megatron_fsdp_reduce_scatters() -> None:
    assert _step(2, "pytorch").breakdown_s["dp_sync"] > _step(2, "megatron").breakdown_s["dp_sync"]


def test_pytorch_stack_times_zero_2_with_stages_as_llama_3s_fsdp() -> None:
    """With stages the PyTorch stack reduce-scatters a layer at a time (the last beside the next micro-batch), where
    without them DeepSpeed all-reduces 5e8-element buckets and waits for the last one: less exposed a micro-batch."""
    staged = _step(2, "pytorch", gpus=128, pp=2)
    assert staged.tokens_per_s > 0
    assert staged.breakdown_s["dp_sync"] < _step(2, "pytorch", gpus=64).breakdown_s["dp_sync"]
    assert staged.breakdown_s["dp_sync"] > _step(1, "pytorch", gpus=128, pp=2).breakdown_s["dp_sync"]


def test_the_cli_plans_it_on_pytorch_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "llama-3.1-8b", "--task", "train", "--gpus", "16", "--pp", "2", "--zero", "2", "--gpu", "h100"]
    assert main([*argv, "--train-stack", "pytorch"]) == 0
    out = capsys.readouterr().out
    assert "Llama 3's FSDP" in out and "torchtitan" in out
    assert main(argv) == 2  # Megatron's ZeRO-2 is Megatron-FSDP: no stages
    out = capsys.readouterr()
    assert "Megatron-FSDP (optim_grads), which runs no pipeline stages" in out.out + out.err
