"""Model states per GPU, in bytes: how TP, PP, EP and ZeRO/FSDP shard the parameters, and the gradients,
master weights, optimizer moments and LoRA adapters they hold (:mod:`anchorgpu.planner.memory`). Pure; stdlib only."""

from __future__ import annotations

import math
from collections.abc import Sequence

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.memory.fsdp_units import fsdp_gather_peak_bytes
from anchorgpu.planner.weight_parts import ModelParts
from anchorgpu.units import ceil_div

# --------------------------------------------------------------------------------------------------
# Sharding
# --------------------------------------------------------------------------------------------------

def stage_layers(num_layers: int, pp: int, stated: int | None = None) -> int:
    """Transformer layers on the most-loaded pipeline stage: ceil(L / p), or ``stated``, the busiest rank's layers of
    an explicit pipeline layout (:mod:`anchorgpu.planner.pipeline_layout`), when given.

    >>> stage_layers(80, 3), stage_layers(61, 2, stated=32)
    (27, 32)
    """
    return ceil_div(num_layers, pp) if stated is None else stated


def shard_share(parts: ModelParts, *, tp: int, pp: int, ep: int, dp_shard: int = 1, stated: int | None = None,
                expert_tp: int = 1) -> int:
    """Per-GPU share of a model split into :class:`ModelParts` (parameters or bytes), most-loaded stage.

    Formula (Megatron ``theoretical_memory_usage.py``, "most-loaded shard"):
    ``layers · ceil(L/p)/L + edge``, where layers = dense/t + experts/(EP · expert TP if EP > 1 else t) + layer_other
    (norms replicated across TP) and edge = (embed + head)/t when p = 1, else max(embed, head or a tied
    copy of embed)/t (first stage holds the embedding, last stage the head). Divided by ``dp_shard``
    under ZeRO-3/FSDP. ``stated``: the busiest rank's layers of an explicit layout in place of ceil(L/p).
    ``expert_tp``: the ways each expert's matrices are split under EP (1, Megatron's expert TP as training plans it;
    a serving EP smaller than TP splits them ``tp / ep`` ways: :func:`serving_expert_tp`).

    >>> from anchorgpu.planner.weight_parts import ModelParts
    >>> parts = ModelParts(dense=800, experts=0, layer_other=8, embed=100, head=100, num_layers=8, tied=False)
    >>> shard_share(parts, tp=2, pp=1, ep=1)
    508
    >>> shard_share(parts, tp=1, pp=2, ep=1)
    504
    """
    expert_split = ep * expert_tp if ep > 1 else tp
    per_layers = parts.dense / tp + parts.experts / expert_split + parts.layer_other
    layer_share = per_layers * stage_layers(parts.num_layers, pp, stated) / max(1, parts.num_layers)
    if pp == 1:
        edge = (parts.embed + parts.head) / tp
    else:
        edge = max(parts.embed, parts.head if not parts.tied else parts.embed) / tp
    return math.ceil((layer_share + edge) / dp_shard)


def routed_expert_share(parts: ModelParts, *, tp: int, pp: int, ep: int, stated: int | None = None,
                        expert_tp: int = 1) -> float:
    """The routed experts' part of :func:`shard_share` (most-loaded stage): under EP one GPU holds 1/ep of a
    stage's experts, each whole or ``1 / expert_tp`` of it (1/tp of each without EP, as the rest).

    >>> from anchorgpu.planner.weight_parts import ModelParts
    >>> routed_expert_share(ModelParts(dense=80, experts=800, layer_other=0, embed=0, head=0, num_layers=8,
    ...                                tied=False), tp=1, pp=2, ep=8)
    50.0
    """
    split = ep * expert_tp if ep > 1 else tp
    return parts.experts / split * stage_layers(parts.num_layers, pp, stated) / max(1, parts.num_layers)


def serving_expert_tp(tp: int, ep: int) -> int:
    """The ways a serving engine splits each routed expert's matrices when EP is smaller than TP: ``tp / ep``, so
    that EP x expert TP covers the TP group (TensorRT-LLM: ``tp_size must equal to moe_tp_size * moe_ep_size``, and
    ``moe_tp_size = tp_size // moe_ep_size`` when only the EP is given, NVIDIA/TensorRT-LLM@05ebebb
    tensorrt_llm/mapping.py ``Mapping.__init__``; SGLang: ``num_local_experts = num_experts // moe_ep_size`` and
    ``intermediate_size_per_partition = intermediate_size // moe_tp_size``, sgl-project/sglang@008d7d0
    python/sglang/srt/layers/moe/fused_moe_triton/layer.py ``FusedMoE.__init__``). 1 otherwise: EP equal to TP (the
    experts whole), EP wider than TP (attention data parallelism), or no EP (the experts sliced with TP).

    >>> serving_expert_tp(8, 4), serving_expert_tp(8, 8), serving_expert_tp(1, 8), serving_expert_tp(8, 1)
    (2, 1, 1, 1)
    """
    return tp // ep if 1 < ep < tp else 1


def expert_data_parallel(*, tp: int, dp: int, cp: int, ep: int) -> int:
    """The GPUs of one pipeline stage that hold the same routed experts under expert parallelism, what ZeRO can
    shard the experts' states over (Megatron's expert data-parallel group, tp x cp x dp / ep with expert tensor
    parallelism 1); ``dp`` without EP, where the experts are replicated over the data-parallel ranks as the rest.

    >>> expert_data_parallel(tp=1, dp=128, cp=1, ep=64), expert_data_parallel(tp=8, dp=4, cp=1, ep=1)
    (2, 4)
    """
    return max(1, tp * dp * cp // ep) if ep > 1 else dp


def gather_buffer_bytes(weight_parts: ModelParts, *, tp: int) -> int:
    """ZeRO-3/FSDP gather buffers, / t: the most parameters held gathered at once, the unit computing and the one
    prefetched, where the embedding and the untied head are units of their own and a tied one sits in the root, kept
    gathered (:func:`~anchorgpu.planner.memory.fsdp_units.fsdp_gather_peak_bytes`: torchtitan ``apply_fsdp``, FSDP2's
    root, accelerate 1.15.0's ``TRANSFORMER_BASED_WRAP``). Two transformer layers where those are the largest pair.

    >>> from anchorgpu.planner.weight_parts import ModelParts
    >>> gather_buffer_bytes(ModelParts(dense=800, experts=0, layer_other=0, embed=0, head=0, num_layers=8,
    ...                                tied=False), tp=1)
    200
    """
    return fsdp_gather_peak_bytes(weight_parts, tp=tp)


def zero_fraction(*, zero: int, stage_from: int, dp: int) -> float:
    """1/N when the ZeRO stage shards this state (stage >= ``stage_from``), else 1.

    ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states (master + moments), stage 2 also
    gradients, stage 3 also parameters.

    >>> zero_fraction(zero=2, stage_from=1, dp=64)
    0.015625
    >>> zero_fraction(zero=1, stage_from=2, dp=64)
    1.0
    """
    return 1 / dp if zero >= stage_from else 1.0


# --------------------------------------------------------------------------------------------------
# Model states (training)
# --------------------------------------------------------------------------------------------------

def gradient_bytes(params: float, *, bytes_per_value: int, zero: int, dp: int) -> int:
    """Gradient buffers: params · bytes (2 in ZeRO's accounting, 4 for fp32 grads) / N at ZeRO >= 2.

    >>> gradient_bytes(7_500_000_000, bytes_per_value=2, zero=0, dp=64)
    15000000000
    """
    return math.ceil(params * bytes_per_value * zero_fraction(zero=zero, stage_from=2, dp=dp))


def master_weight_bytes(params: float, *, mixed_precision: bool, zero: int, dp: int, bytes_per_value: int = 4) -> int:
    """Master copy in mixed precision: ``bytes_per_value`` (4: fp32; 2: a bf16 copy, see
    :data:`OPTIMIZER_STATE_BYTES`) · params / N at ZeRO >= 1; none in pure bf16 training.

    >>> master_weight_bytes(1_000, mixed_precision=True, zero=1, dp=4)
    1000
    >>> master_weight_bytes(1_000, mixed_precision=True, zero=1, dp=4, bytes_per_value=2)
    500
    """
    if not mixed_precision:
        return 0
    return math.ceil(bytes_per_value * params * zero_fraction(zero=zero, stage_from=1, dp=dp))


OPTIMIZER_STATE_BYTES: dict[str, tuple[int, float]] = {"fp32": (4, 1.0), "bf16-moments": (4, 0.5), "bf16": (2, 0.5)}
"""AdamW's state under mixed, FP8 or FP4 training by ``--optimizer-state``: (master-weight bytes a parameter, the
moments' share of :data:`OPTIMIZER_MOMENT_BYTES`, i.e. 1.0 for fp32 moments and 0.5 for 16-bit ones).

* ``fp32``: fp32 master weights and moments, 4 + 8 = 12 bytes a parameter (ZeRO, Rajbhandari et al. 2020).
* ``bf16-moments``: fp32 master weights, bf16 moments, 4 + 4 = 8. Megatron-Core's precision-aware optimizer
  (``--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16``, ``--main-params-dtype fp32``;
  NVIDIA/Megatron-LM ``megatron/core/optimizer/optimizer_config.py``, commit
  0075637cdbb05f45fe6f7a96e008d64237698907: ``main_params_dtype``, ``exp_avg_dtype``, ``exp_avg_sq_dtype``, Adam and
  the distributed optimizer only) and DeepSeek-V3 (arXiv:2412.19437 section 3.3.3: BF16 moments, FP32 master weights
  and gradients). Megatron-Core's ``store_param_remainders`` (on by default with Transformer Engine 2.1+ and BF16
  parameters) keeps only the 16 bits of the fp32 master the BF16 weight lacks; not modelled, so this counts 2 bytes a
  parameter more than such a run holds.
* ``bf16``: a bf16 master copy and bf16 moments, 2 + 4 = 6. Apex's ``DistributedFusedAdam`` with ``dtype`` bf16 keeps
  its parameter shard (``store_params``) and both moments in that dtype (NVIDIA/apex
  ``apex/contrib/optimizers/distributed_fused_adam.py``, commit d571f3ee2cda914d7048843c4ff4ef717d03ba35,
  ``StateBucket``); NeMo's SFT config runs it so (NVIDIA/NeMo-Framework-Launcher
  ``launcher_scripts/conf/peft/llama/sft.yaml``, commit 0da9ad9c5bf59eafdd2ba6eb4be1893a6f5ef947: ``optim.name:
  distributed_fused_adam``, ``dtype: bf16``).

>>> {state: master + OPTIMIZER_MOMENT_BYTES["adamw"] * scale for state, (master, scale) in OPTIMIZER_STATE_BYTES.items()}
{'fp32': 12.0, 'bf16-moments': 8.0, 'bf16': 6.0}
"""


OPTIMIZER_MOMENT_BYTES: dict[str, int] = {"adamw": 8, "adamw-8bit": 2, "sgd": 4, "lion": 4}


def optimizer_moment_bytes(
    params: int, *, optimizer: str, zero: int, dp: int, moment_scale: float = 1.0,
    matrix_shapes: Sequence[tuple[int, int, int]] = (),
) -> int:
    """Optimizer state (moments only, no master copy) per GPU.

    Bytes per parameter at fp32 moments: AdamW 8 (m, v), 8-bit AdamW 2 (bitsandbytes block-wise; its
    per-2048 fp32 absmax is ignored, 0.4 %), SGD with momentum 4, Lion 4 (one momentum). Adafactor keeps
    factored second moments: (d_in + d_out) · 4 per matrix and 4 per remaining parameter, no momentum.
    ``moment_scale`` = 0.5 when moments live in bf16 (``torch.optim`` keeps them in the parameter dtype).
    Sharded by ZeRO >= 1. Sources: EleutherAI "Transformer Math 101"; Shazeer & Stern 2018 (Adafactor);
    published_figures.md A (GPT-2 124M Adam state, moments in the parameter dtype).

    >>> optimizer_moment_bytes(124_439_808, optimizer="adamw", zero=0, dp=1)
    995518464
    """
    frac = zero_fraction(zero=zero, stage_from=1, dp=dp)
    if optimizer == "adafactor":
        matrix_params = sum(count * d_in * d_out for count, d_in, d_out in matrix_shapes)
        factored = sum(count * (d_in + d_out) for count, d_in, d_out in matrix_shapes)
        values = factored + max(0, params - matrix_params)
        return math.ceil(4 * values * moment_scale * frac)
    return math.ceil(params * OPTIMIZER_MOMENT_BYTES[optimizer] * moment_scale * frac)


def adapter_params(model: ModelSpec, *, rank: int, targets: Sequence[str]) -> int:
    """LoRA adapter parameters: r · (d_in + d_out) per targeted matrix (Hu et al. 2021, section 4).

    A target ``gate`` also matches ``shared_gate`` and ``expert_gate``. ``qkv`` stands for q, k, v and
    ``gate_up`` for gate, up. A fused module (``qkv``: Phi-3 qkv_proj, GPT-2 c_attn, Falcon/GPT-NeoX
    query_key_value; ``gate_up``: Phi-3, gpt-oss experts) gets one adapter whose B covers only the targeted
    output slices: r · (d_in + Σ d_out of the targeted parts). With every part targeted that is the
    adapter PEFT puts on the fused module, r · (d_in + d_out); with q, v only, the k rows get none.

    >>> from anchorgpu.planner._examples import tiny_model
    >>> adapter_params(tiny_model(), rank=4, targets=("q", "v"))  # 2 layers: 4·(64+64)·2 + 4·(64+32)·2
    1792
    """
    wanted = set(expand_lora_targets(targets))
    total = 0
    for group in model.linear_groups:
        prefix, _, rest = group.name.partition("_")
        prefixed = prefix in ("expert", "shared")
        base = rest if prefixed else group.name
        if group.name in wanted or (not group.parts and base in wanted):
            total += rank * (group.d_in + group.d_out) * group.count
        elif group.parts:
            d_out = sum(size for part, size in group.parts
                        if part in wanted or (prefixed and f"{prefix}_{part}" in wanted))
            if d_out:
                total += rank * (group.d_in + d_out) * group.count
    return total


# Fused module names a user may target, and the parts they stand for.
FUSED_LORA_TARGETS: dict[str, tuple[str, ...]] = {"qkv": ("q", "k", "v"), "gate_up": ("gate", "up")}

RECURRENT_LORA_TARGETS: tuple[str, ...] = ("in_proj", "x_proj", "dt_proj", "out_proj", "in_proj_qkvz", "in_proj_ba")
"""Projections of Mamba, Mamba-2 and gated-DeltaNet mixers a LoRA may target (the module names PEFT uses)."""

SSM_DEFAULT_LORA_TARGETS: tuple[str, ...] = ("in_proj", "x_proj", "out_proj")
"""What a LoRA adapts on a model without attention when no target is named: the mixer projections PEFT's Mamba
example targets (``in_proj``, ``x_proj``, ``out_proj``; Mamba-2 has no ``x_proj``)."""


def expand_lora_targets(targets: Sequence[str]) -> tuple[str, ...]:
    """``qkv`` → q, k, v and ``gate_up`` → gate, up; other names unchanged; duplicates dropped, order kept.

    >>> expand_lora_targets(("qkv", "o", "v"))
    ('q', 'k', 'v', 'o')
    """
    out: dict[str, None] = {}
    for target in targets:
        for name in FUSED_LORA_TARGETS.get(target, (target,)):
            out[name] = None
    return tuple(out)
