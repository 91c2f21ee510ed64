"""Full training's model states on one GPU: the weights, gradients, fp32 (or bf16) master weights and optimizer
moments a layout leaves each GPU under its ZeRO stage, counted from the parameters the GPU holds (the routed experts'
sharded over their own data-parallel group), the checkpoint's size, and the assumption lines naming the optimizer
state's precision. Memoised on the frozen model and format and the layout's counts. Pure."""

from __future__ import annotations

import math
from functools import partial

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.formats import WeightFormat
from anchorgpu.planner.terms import layout_weights_bytes
from anchorgpu.planner.weight_parts import model_param_parts

__all__ = ["BF16_TRUE_LINE", "FP8_STATE_WEIGHTS", "OPTIMIZER_STATE_LINES", "STATE_WORDS", "expert_params_per_gpu", "ZERO_BF16_COPY_LINE", "full_training_states",
           "params_per_gpu", "update_partition_bytes", "zero_runs_deepspeed"]


OPTIMIZER_STATE_LINES: dict[str, str] = {
    "fp32": said("Mixed precision: 16-bit weights and gradients, fp32 master weights and optimizer moments "
                 "(ZeRO's 2 + 2 + 12 bytes per parameter with AdamW)."),
    "bf16-moments": ("Mixed precision with bf16 optimizer moments (--optimizer-state bf16-moments: Megatron-Core's "
                     "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16, DeepSeek-V3): "
                     "16-bit weights and gradients, fp32 master weights, AdamW's two moments in bf16 "
                     "(2 + 2 + 4 + 4 bytes per parameter)."),
    "bf16": ("Mixed precision with the optimizer state in bf16 (--optimizer-state bf16: Apex's distributed_fused_adam "
             "with dtype bf16, as NeMo's SFT configs run it): 16-bit weights and gradients, a bf16 master copy and "
             "AdamW's two moments in bf16 (2 + 2 + 2 + 4 bytes per parameter)."),
}
"""The assumption line for a mixed-precision (mixed, FP8, FP4) run's optimizer state, by ``--optimizer-state``."""
FP8_STATE_WEIGHTS = "2-byte weights (FP8 with their transposes under FP8 training, below) and 16-bit gradients"
"""What :data:`OPTIMIZER_STATE_LINES`' "16-bit weights and gradients" reads under FP8 training, whose weights are held
in FP8 with their transposes (Megatron-Core ``--fp8-param-gather``), not in 16 bit (stop60_qa26, left 2)."""
STATE_WORDS = {"fp32": "fp32 master weights and moments", "bf16-moments": "fp32 master weights and bf16 moments",
                "bf16": "bf16 master weights and moments"}
BF16_TRUE_LINE = "bf16-true training: no fp32 master copy; optimizer moments kept in bf16."


@partial(memo_on_frozen, frozen=2)
def full_training_states(model: ModelSpec, fmt: WeightFormat, tp: int, pp: int, ep: int, dp: int, cp: int, zero: int,
                         offload: str, optimizer: str, mixed: bool, grad_bytes_per_value: int,
                         stated: int | None = None, optimizer_state: str = "fp32",
                         ) -> tuple[int, dict[str, int], int, int, int, int, float, float, int, int]:
    """Full training's model states on one GPU of a layout (weights, the breakdown's weight terms, gradients, master
    weights, optimizer moments) and the checkpoint's bytes, then the parameters they are counted from (the rest's and
    the routed experts' on the GPU, and the GPUs each is sharded over); ``stated`` is the busiest rank's layers of an
    explicit pipeline layout (None: ceil(L/p)); ``optimizer_state`` the precision of a mixed-precision run's master
    weights and moments (:data:`~anchorgpu.planner.memory.OPTIMIZER_STATE_BYTES`). They depend on the (frozen) model and weight
    format, the layout's counts and the optimizer's settings only: memoised on them, so every plan of that layout (a
    sweep over batch sizes, a layout search) reuses them. The terms are shared: read them, never change them."""
    weights, terms = layout_weights_bytes(model, fmt, tp, pp, ep, dp, cp, zero, offload, stated)
    params_gpu = params_per_gpu(model, tp, pp, ep, stated)
    params_total = model.params_total  # a sum over the breakdown: read once
    # under EP a GPU's routed experts are held by only tp x cp x dp / ep GPUs of its stage: ZeRO shards their states
    # over that group, the rest over the data-parallel ranks
    expert_gpu = expert_params_per_gpu(model, tp, pp, ep, stated) if ep > 1 else 0.0
    expert_dp = mm.expert_data_parallel(tp=tp, dp=dp, cp=cp, ep=ep)
    shards = dp * cp  # the rest's ZeRO states split over DP x CP (context-parallel ranks hold the same weights)
    rest_gpu = params_gpu - expert_gpu
    master_bytes, moment_scale = mm.OPTIMIZER_STATE_BYTES[optimizer_state]
    if not mixed and optimizer != "adamw-8bit":  # bf16-true: moments in the parameters' bf16
        moment_scale = 0.5
    shapes: list[tuple[int, int, int]] = []  # only Adafactor reads them: it factors every 2-D tensor
    if optimizer == "adafactor":
        shapes = [(g.count, g.d_in, g.d_out) for g in model.linear_groups]
        shapes += [(1, model.vocab_size, model.hidden_size)] * ((model.params.embeddings > 0) + (model.params.head > 0))
    grads = (mm.gradient_bytes(rest_gpu, bytes_per_value=grad_bytes_per_value, zero=zero, dp=shards)
             + mm.gradient_bytes(expert_gpu, bytes_per_value=grad_bytes_per_value, zero=zero, dp=expert_dp))
    master = (mm.master_weight_bytes(rest_gpu, mixed_precision=mixed, zero=zero, dp=shards, bytes_per_value=master_bytes)
              + mm.master_weight_bytes(expert_gpu, mixed_precision=mixed, zero=zero, dp=expert_dp,
                                       bytes_per_value=master_bytes))
    moments = math.ceil(sum(
        held / max(1, params_total) * mm.optimizer_moment_bytes(
            params_total, optimizer=optimizer, zero=zero, dp=group, moment_scale=moment_scale, matrix_shapes=shapes)
        for held, group in ((rest_gpu, shards), (expert_gpu, expert_dp)) if held))
    checkpoint = params_total * 2 + (master_bytes * params_total if mixed else 0) + mm.optimizer_moment_bytes(
        params_total, optimizer=optimizer, zero=0, dp=1, moment_scale=moment_scale, matrix_shapes=shapes)
    return weights, terms, grads, master, moments, checkpoint, rest_gpu, expert_gpu, shards, expert_dp


@memo_on_frozen
def params_per_gpu(model: ModelSpec, tp: int, pp: int, ep: int, stated: int | None = None) -> int:
    """The parameters one GPU holds (most-loaded stage), memoised on the (frozen) model and the split."""
    return mm.shard_share(model_param_parts(model), tp=tp, pp=pp, ep=ep, stated=stated)


@memo_on_frozen
def expert_params_per_gpu(model: ModelSpec, tp: int, pp: int, ep: int, stated: int | None = None) -> float:
    """The routed experts' parameters among :func:`params_per_gpu`'s, memoised alike."""
    return mm.routed_expert_share(model_param_parts(model), tp=tp, pp=pp, ep=ep, stated=stated)


def update_partition_bytes(rest_gpu: float, expert_gpu: float, zero: int, shards: int, expert_dp: int,
                           bytes_per_value: int) -> int:
    """A GPU's partition of the values an offloaded optimizer updates on the host, in the update's dtype
    (``bytes_per_value``): the host keeps this copy and, beside it, the partition's gradient in the same dtype, so
    an offloaded GPU's host bytes are 2 x this + the moments (plan's ``offloaded_optimizer_bytes`` = this + moments,
    ``offloaded_gradients_bytes`` = this).

    Mixed precision: the fp32 master (4; 2 with ``--optimizer-state bf16``), which :func:`full_training_states`
    counts already. bf16-true has no master, yet the host's update still holds its own copy of the bf16 partition
    and a bf16 gradient (2 + 2 bytes a parameter): DeepSpeed's ZeRO-Offload clones the partition to the CPU in the
    master dtype (``stage_1_and_2.py``: ``single_partition_of_fp32_groups`` on ``self.device`` = cpu under
    ``cpu_offload``) and allocates its gradient with that partition's size and dtype
    (``initialize_optimizer_states``), the dtype ``base_optimizer._configure_master_weights`` sets to bf16 under
    ``"bf16": {"bf16_master_weights_and_grads": true}`` (written by the deepspeed recipe for bf16-true, with
    ``bf16_optimizer_states``);
    torch FSDP's ``CPUOffload(offload_params=True)`` likewise moves the parameter shards and their gradients to the
    CPU, in the parameters' dtype, for the optimizer's step there (FullyShardedDataParallel docs). The LoRA
    adapters' partition is counted alike in their own dtype. Sharded as the master is (ZeRO >= 1).

    >>> update_partition_bytes(1_000, 0.0, 1, 4, 4, 2)  # bf16-true, ZeRO-1 over 4 ranks
    500
    >>> update_partition_bytes(1_000, 0.0, 0, 4, 4, 4)  # unsharded fp32 master
    4000
    """
    return (mm.master_weight_bytes(rest_gpu, mixed_precision=True, zero=zero, dp=shards, bytes_per_value=bytes_per_value)
            + mm.master_weight_bytes(expert_gpu, mixed_precision=True, zero=zero, dp=expert_dp,
                                     bytes_per_value=bytes_per_value))


ZERO_BF16_COPY_LINE = ("bf16-true under DeepSpeed ZeRO (ZeRO-1/2 on the PyTorch stack): ZeRO updates its own bf16 copy of "
                       "each rank's partition beside the model's bf16 weights, 2 bytes a parameter over the "
                       "data-parallel ranks, counted as the master weights.")


def zero_runs_deepspeed(train_stack: str, zero: int, fsdp: bool) -> bool:
    """Whether a layout's sharded optimizer is DeepSpeed ZeRO stage 1-2 (``stage_1_and_2.py``): ZeRO 0-2 without FSDP
    on the PyTorch-native stack, the layouts the deepspeed recipe and accelerate's DeepSpeed plugin launch (ZeRO-0 with
    offload runs as ZeRO-Offload). Megatron's distributed optimizer, torch FSDP/DDP and ZeRO-3 are not counted so.
    There DeepSpeed 0.19.8 clones the rank's bf16 partition in the master dtype (``single_partition_of_fp32_groups``, bf16
    under ``bf16_master_weights_and_grads``: bf16-true's own copy on the GPU without offload) and, with
    ``offload_optimizer``, keeps a pinned bf16 buffer of that partition on the host
    (``param_buffer_of_bit16_for_cpu_offload_groups``, in the model's bf16 dtype, mixed precision or not). The
    torchrun-fsdp recipe's FSDP2 for such a layout keeps neither: it holds no more than this counts.

    >>> zero_runs_deepspeed("pytorch", 1, False), zero_runs_deepspeed("megatron", 1, False)
    (True, False)
    >>> zero_runs_deepspeed("pytorch", 3, False), zero_runs_deepspeed("pytorch", 0, True)
    (False, False)
    """
    return train_stack == "pytorch" and zero in (0, 1, 2) and not fsdp
