"""DeepSpeed ZeRO-1/2's own bf16 copies (stop58 dsbf16, "Where the plan is wrong"), from DeepSpeed's source
(deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py``, ``DeepSpeedZeroOptimizer.__init__``):

1. ``weights_partition = parallel_partitioned_bit16_groups[i][partition_id].detach().clone().to(device=self.device,
   dtype=self.master_weights_and_grads_dtype)`` -> ``single_partition_of_fp32_groups``: under bf16-true
   (``bf16_master_weights_and_grads``) a bf16 copy of the rank's partition on the GPU (no offload), 2 B/param / DP.
2. ``if self.cpu_offload:`` a ``torch.full(weights_partition.shape, dtype=<the bit16 dtype>)`` pinned buffer ->
   ``param_buffer_of_bit16_for_cpu_offload_groups``: 2 B/param / DP of host memory, mixed precision or bf16-true.

Counted where the plan's layout is DeepSpeed ZeRO (``training_states.zero_runs_deepspeed``: PyTorch stack, ZeRO 0-2,
no FSDP); Megatron's distributed optimizer and FSDP keep neither and are unchanged."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.training_states import params_per_gpu
from anchorgpu.recipes import build_recipe
from anchorgpu.recommend.offload import host_bytes_per_gpu

_MODEL = load_model("llama-3.1-8b")


def _plan(stack: str, precision: str, zero: int, dp: int, offload: str = "none", fsdp: bool = False):  # type: ignore[no-untyped-def]
    w = Workload(task="train", seq_tokens=4096, recompute="full", train_stack=stack, train_precision=precision)
    return plan(_MODEL, w, layout=Layout(gpus=dp, zero=zero, offload=offload, fsdp=fsdp), gpu=get_gpu("h100-sxm"),
                suggest=False, choose_layout=False)


def test_bf16_true_zero1_counts_deepspeeds_bf16_partition_copy() -> None:
    """ZeRO-1 over 8 GPUs, bf16-true: the master term is the bf16 partition, 2 B x params / 8 (about 1.87 GiB)."""
    p = _plan("pytorch", "bf16-true", 1, 8)
    expected = -(-2 * params_per_gpu(_MODEL, 1, 1, 1) // 8)
    assert p.breakdown["master_weights_bytes"] == pytest.approx(expected, abs=1)
    assert 1.8 < p.breakdown["master_weights_bytes"] / 2**30 < 1.95
    megatron = _plan("megatron", "bf16-true", 1, 8)
    assert megatron.breakdown["master_weights_bytes"] == 0
    assert p.per_gpu.optimizer_bytes - megatron.per_gpu.optimizer_bytes == p.breakdown["master_weights_bytes"]


@pytest.mark.parametrize(("stack", "zero", "fsdp"), [("megatron", 1, False), ("pytorch", 0, False),
                                                     ("pytorch", 3, True)])
def test_no_copy_where_not_deepspeed_zero(stack: str, zero: int, fsdp: bool) -> None:
    """Megatron's distributed optimizer, DDP and FSDP keep no bf16 copy: master stays 0 under bf16-true."""
    assert _plan(stack, "bf16-true", zero, 8, fsdp=fsdp).breakdown["master_weights_bytes"] == 0


@pytest.mark.parametrize("precision", ["mixed", "bf16-true"])
def test_offload_counts_pinned_bf16_buffer_on_host(precision: str) -> None:
    """ZeRO-2 with the optimizer offloaded: the host keeps a pinned bf16 copy of the partition, 2 B x params / DP,
    and recommend's host bytes include it; the Megatron stack's plan has no such term."""
    p = _plan("pytorch", precision, 2, 4, offload="optimizer")
    expected = -(-2 * params_per_gpu(_MODEL, 1, 1, 1) // 4)
    assert p.breakdown["offloaded_bf16_buffer_bytes"] == pytest.approx(expected, abs=1)
    assert host_bytes_per_gpu(p.breakdown) == (p.breakdown["offloaded_optimizer_bytes"]
                                               + p.breakdown["offloaded_gradients_bytes"]
                                               + p.breakdown["offloaded_bf16_buffer_bytes"]
                                               # stop59 dsmem: ZeRO-Offload's pinned gradient staging buffer
                                               + p.breakdown["offloaded_gradient_staging_bytes"])
    assert "offloaded_bf16_buffer_bytes" not in _plan("megatron", precision, 2, 4, offload="optimizer").breakdown


def test_deepspeed_recipe_says_the_copy_is_planned_only_where_the_plan_counts_it() -> None:
    """The deepspeed recipe's bf16-true line: 'as planned' for a PyTorch-stack ZeRO-1 plan (the copy is its master
    term), 'more than planned' for a Megatron-stack plan launched by DeepSpeed (no copy counted)."""
    counted = build_recipe(_plan("pytorch", "bf16-true", 1, 8), "deepspeed").assumptions
    assert any("own bf16 copy" in a and "as planned" in a for a in counted)
    uncounted = build_recipe(_plan("megatron", "bf16-true", 1, 8), "deepspeed").assumptions
    assert any("own bf16 copy" in a and "more than planned" in a for a in uncounted)
