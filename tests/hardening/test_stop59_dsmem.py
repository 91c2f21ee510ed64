"""DeepSpeed memory that stop 58 left out of the plan (benchmarks/hardening/stop59_dsmem.md), each figure from
DeepSpeed 0.19.8's source (the version the recipes name):

- ``deepspeed/runtime/zero/stage_1_and_2.py`` ``setup_buckets``: with ``contiguous_gradients`` a reduce bucket of
  ``reduce_bucket_size`` values in the communication dtype (bf16), a second one with ``overlap_comm``, held through
  the backward pass; ``config.py``: ``reduce_bucket_size`` 5e8, ``allgather_bucket_size`` 5e8 (the recipe writes
  hidden² for the first, transformers' "auto" value).
- ``stage_1_and_2.py`` ``__init__`` under ``cpu_offload``: ``temp_grad_buffer_for_gpu_offload`` (GPU) and
  ``temp_grad_buffer_for_cpu_offload`` (pinned host), ``largest_param_numel`` values each; and
  ``param_buffer_of_bit16_for_cpu_offload_groups`` (pinned bf16 partition) for LoRA's adapters too.
- ``stage_1_and_2.py`` ``step`` without offload: ``self.flatten(self.averaged_gradients[i])`` and its ``.to()`` the
  master's dtype, both alive at once, after the activations are freed.
- ``partitioned_param_coordinator.py`` (``fetch_sub_module``, ``__params_to_release``): the ZeRO-3 bounds the recipe
  writes so DeepSpeed's gathered weights stay within the plan's gather buffer.
- QLoRA under ZeRO-3: the gather buffer holds gathered codes only; bitsandbytes' constants are no parameter."""

from __future__ import annotations

import json
from typing import Any

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner import memory as mm
from anchorgpu.planner.deepspeed_zero import zero_settings
from anchorgpu.planner.formats import bnb_code_format, get_format
from anchorgpu.planner.training_states import params_per_gpu
from anchorgpu.planner.weight_parts import model_weight_parts
from anchorgpu.recipes import build_recipe
from anchorgpu.recommend.offload import host_bytes_per_gpu

_MODEL = load_model("llama-3.1-8b")
_P = params_per_gpu(_MODEL, 1, 1, 1)
_EMBED = 128_256 * 4_096  # Llama-3.1-8B's embedding (vocab x hidden, config.json): its largest parameter
_HIDDEN = 4_096  # Llama-3.1-8B's hidden_size (config.json)
# two bf16 buckets of hidden² values: the reduce_bucket_size transformers' Trainer fills for "auto"
# (integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_finalize), which the recipe writes
_BUCKETS = 2 * _HIDDEN * _HIDDEN * 2


def _plan(stack: str, zero: int, dp: int, *, task: str = "train", offload: str = "none", precision: str = "mixed",
          gpu: str = "h100-sxm", fsdp: bool = False) -> Any:
    w = Workload(task=task, seq_tokens=4096, recompute="full", train_stack=stack, train_precision=precision)  # type: ignore[arg-type]
    return plan(_MODEL, w, layout=Layout(gpus=dp, zero=zero, offload=offload, fsdp=fsdp), gpu=get_gpu(gpu),
                suggest=False, choose_layout=False)


def _ds_config(p: Any) -> dict[str, Any]:
    return json.loads(dict(build_recipe(p, "deepspeed").files)["ds_config.json"])  # type: ignore[no-any-return]


def test_settings_are_deepspeeds_defaults() -> None:
    """config.py (0.19.8): reduce_bucket_size and allgather_bucket_size pp_int(5e8), stage3_prefetch_bucket_size 5e7,
    stage3_max_live_parameters and stage3_max_reuse_distance 1e9, sub_group_size 1e9; contiguous_gradients True."""
    s = zero_settings()
    assert (s.reduce_bucket_size, s.allgather_bucket_size, s.stage3_prefetch_bucket_size) == (5 * 10**8, 5 * 10**8, 5 * 10**7)
    assert (s.stage3_max_live_parameters, s.stage3_max_reuse_distance, s.sub_group_size) == (10**9, 10**9, 10**9)
    assert s.contiguous_gradients and s.overlap_comm


@pytest.mark.parametrize("zero", [1, 2])
def test_zero12_counts_two_reduce_buckets_with_the_gradients(zero: int) -> None:
    """stage_1_and_2.py setup_buckets: 2 x hidden² bf16 values (overlap_comm, contiguous_gradients) = 64 MiB on each
    GPU through the backward pass, in the gradients; the Megatron stack's distributed optimizer has none."""
    p = _plan("pytorch", zero, 8)
    assert p.breakdown["zero_reduce_buckets_bytes"] == _BUCKETS
    grads = mm.gradient_bytes(_P, bytes_per_value=2, zero=zero, dp=8)
    # stage 2 holds the edge parameters whole in grads_in_partition too (stop 60 mem60, test_stop60_mem60.py)
    overhang = p.breakdown["zero_boundary_overhang_bytes"] if zero == 2 else 0
    assert p.per_gpu.gradients_bytes == grads + _BUCKETS + overhang
    assert "zero_reduce_buckets_bytes" not in _plan("megatron", zero, 8).breakdown
    assert any("reduce bucket" in a and "stage_1_and_2.py" in a for a in p.assumptions)


def test_tensor_or_context_parallel_zero1_is_not_deepspeeds() -> None:
    """ds_config.json has no TP/CP size (the deepspeed recipe refuses them; accelerate runs FSDP2): no buckets."""
    w = Workload(task="train", seq_tokens=4096, recompute="full", train_stack="pytorch")
    for lay in (Layout(gpus=8, tp=2, zero=1), Layout(gpus=8, cp=2, zero=1)):
        p = plan(_MODEL, w, layout=lay, gpu=get_gpu("h100-sxm"), suggest=False, choose_layout=False)
        assert "zero_reduce_buckets_bytes" not in p.breakdown


def test_pipeline_stages_hold_one_bucket() -> None:
    """engine.py _configure_zero_optimizer turns overlap_comm off for a PipelineModule: one bucket."""
    w = Workload(task="train", seq_tokens=4096, recompute="full", train_stack="pytorch")
    p = plan(_MODEL, w, layout=Layout(gpus=8, pp=2, zero=1), gpu=get_gpu("h100-sxm"), suggest=False,
             choose_layout=False)
    assert p.breakdown["zero_reduce_buckets_bytes"] == _BUCKETS // 2


def test_the_recipe_writes_what_the_plan_counts() -> None:
    """ds_config.json states the bucket sizes the plan counted (the same rule), so launch and plan agree."""
    p = _plan("pytorch", 2, 8)
    zero = _ds_config(p)["zero_optimization"]
    assert (zero["reduce_bucket_size"], zero["allgather_bucket_size"]) == (_HIDDEN * _HIDDEN, 5 * 10**8)
    assert p.breakdown["zero_reduce_buckets_bytes"] == 2 * zero["reduce_bucket_size"] * 2
    assert zero["overlap_comm"] is True and zero["contiguous_gradients"] is True


def test_plain_stage0_keeps_no_zero_buffers() -> None:
    """Stage 0 without offload or a bf16 state builds no DeepSpeedZeroOptimizer: no buckets counted."""
    assert "zero_reduce_buckets_bytes" not in _plan("pytorch", 0, 1).breakdown


def test_offload_counts_the_gradient_staging_buffers() -> None:
    """stage_1_and_2.py __init__ under cpu_offload: largest_param_numel bf16 values on the GPU and as many pinned on
    the host (Llama-3.1-8B's embedding, 128,256 x 4,096); recommend's host bytes include the host's."""
    p = _plan("pytorch", 2, 4, offload="optimizer", gpu="l40s")
    b = p.breakdown
    assert b["zero_offload_staging_bytes"] == b["offloaded_gradient_staging_bytes"] == 2 * _EMBED
    assert p.per_gpu.gradients_bytes == mm.gradient_bytes(_P, bytes_per_value=2, zero=2, dp=4) + _BUCKETS + 2 * _EMBED
    assert host_bytes_per_gpu(b) == (b["offloaded_optimizer_bytes"] + b["offloaded_gradients_bytes"]
                                     + b["offloaded_bf16_buffer_bytes"] + 2 * _EMBED)


def test_the_step_gradient_partition_is_counted_where_it_outlasts_the_backward_pass() -> None:
    """stage_1_and_2.py step, no offload, mixed precision at ZeRO-2 over 2 GPUs: the flat bf16 partition (2 B x P/2)
    and its fp32 copy (4 B x P/2) beside the partition's gradients (2 B x P/2), after the activations and buckets are
    gone: counted in the optimizer bytes by what they exceed the backward pass's gradients + activations + buckets."""
    p = _plan("pytorch", 2, 2, gpu="h200")
    b = p.breakdown
    half = _P / 2
    assert b["zero_step_gradient_bytes"] == round(6 * half)
    grads = mm.gradient_bytes(_P, bytes_per_value=2, zero=2, dp=2)
    excess = round(6 * half) + round(2 * half) - grads - p.per_gpu.activations_bytes - _BUCKETS
    assert excess > 0 and b["zero_step_excess_bytes"] == pytest.approx(excess, abs=2)
    assert p.per_gpu.optimizer_bytes == b["master_weights_bytes"] + b["optimizer_moments_bytes"] + b["zero_step_excess_bytes"]


def test_bf16_true_step_copies_only_the_flat_partition() -> None:
    """Under bf16-true the master is bf16, so ``.to()`` the master's dtype is the same tensor: 2 B x P / DP."""
    p = _plan("pytorch", 1, 8, precision="bf16-true")
    assert p.breakdown["zero_step_gradient_bytes"] == round(2 * _P / 8)


def test_lora_offload_counts_the_adapters_pinned_bf16_buffer() -> None:
    """param_buffer_of_bit16_for_cpu_offload_groups for LoRA under ZeRO-Offload: 2 B x the adapters (DP 1)."""
    p = _plan("pytorch", 0, 1, task="lora", offload="optimizer", gpu="l4")
    assert p.breakdown["offloaded_bf16_buffer_bytes"] == 2 * p.breakdown["lora_adapter_params"]
    assert host_bytes_per_gpu(p.breakdown) > p.breakdown["offloaded_optimizer_bytes"] + p.breakdown["offloaded_gradients_bytes"] + p.breakdown["offloaded_bf16_buffer_bytes"]


def test_zero3_recipe_bounds_gathered_weights_to_the_plans_units() -> None:
    """partitioned_param_coordinator.py: the current submodule + at most min(max_live - available, prefetch bucket)
    prefetched, and reuse kept within max_reuse_distance: each set to one of the plan's two gather units."""
    p = _plan("pytorch", 3, 8)
    zero = _ds_config(p)["zero_optimization"]
    unit = p.breakdown["gather_buffer_bytes"] // 4
    assert unit == mm.gather_buffer_bytes(model_weight_parts(_MODEL, get_format("bf16")), tp=1) // 4
    assert zero["stage3_prefetch_bucket_size"] == zero["stage3_max_live_parameters"] == unit
    assert zero["stage3_max_reuse_distance"] == unit


def test_qlora_zero3_gather_buffer_holds_codes_only() -> None:
    """The gather buffer is the gathered packed codes; the constants (not a parameter) are counted once, whole
    (stop58_qloraconst left the full 4.127 bits in the buffer). Since stop59 fsdpunits the buffer's largest pair is
    the 16-bit embedding and one block (torchtitan apply_fsdp's units), so one block's constants, ~13.6 MB on a 70B
    (856M linear weights x 0.127 bits), separate the two."""
    model = load_model("llama-3.1-70b")
    fmt = get_format("nf4-dq")
    p = plan(model, Workload(task="qlora", train_stack="pytorch"), gpu=get_gpu("h100"),
             layout=Layout(gpus=8, dp=8, zero=3), precision=PrecisionPlan(weights="nf4-dq"))
    codes = mm.gather_buffer_bytes(model_weight_parts(model, bnb_code_format(fmt)), tp=1)  # type: ignore[arg-type]
    whole = mm.gather_buffer_bytes(model_weight_parts(model, fmt), tp=1)
    assert p.breakdown["gather_buffer_bytes"] == codes
    assert 10e6 < whole - codes < 17e6


def test_the_step_takes_one_parameter_group_at_a_time() -> None:
    """stage_1_and_2.py step loops over the optimizer's groups, the routed experts' after the rest's
    (deepspeed/moe/utils.py split_params_into_different_moe_groups_for_optimizer), freeing each group's gradients and
    copies before the next: the peak is the larger group's, with the experts' gradients still held while the rest's
    step runs. 1,000 rest values and 3,000 expert values a rank, bf16 gradients, fp32 master. Restated at stop 60
    (mem60): the partition gradients are views of one grads_in_partition buffer for all groups, so the rest's stay
    held while the experts' step runs."""
    from anchorgpu.planner.deepspeed_zero import step_held_bytes

    rest = 1_000 * 2 + 1_000 * (2 + 4) + 3_000 * 2  # the rest's partition, its flat and fp32 copies, experts' grads
    experts = 1_000 * 2 + 3_000 * 2 + 3_000 * (2 + 4)  # the rest's partition still in the shared buffer
    assert step_held_bytes(1_000, 3_000, 2, 4, 3_000 * 2) == max(rest, experts) == 26_000
