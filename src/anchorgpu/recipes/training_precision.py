"""What a training recipe's precision asks of its framework: the ZeRO stage a DeepSpeed config states, its ``bf16``
section and what a bf16 optimizer state needs beyond it, bf16-true outside DeepSpeed, and the FP8/FP4 refusals
(split from ``recipes/training.py`` along the domain)."""

from __future__ import annotations

from anchorgpu.errors import said
from anchorgpu.planner.plan import Plan
from anchorgpu.recipes._common import not_expressible

__all__ = ["OFFLOAD_ZERO_STAGE", "accelerate_runs_deepspeed", "bf16_section", "bf16_state_in_deepspeed",
           "bf16_state_notes", "bf16_true_weights", "config_states_bf16", "training_precision", "zero_stage"]

OFFLOAD_ZERO_STAGE = 2
"""The ZeRO stage a DeepSpeed launch runs an optimizer offload planned without sharding at: ``offload_optimizer`` is
read only under ZeRO (stages 1-3; at stage 0 DeepSpeed builds its plain bf16 optimizer on the GPU and the state stays
there), and ZeRO-Offload is ZeRO-2's optimizer with its state on the host (DeepSpeed's ZeRO-Offload tutorial, its
``zero_optimization.stage`` 2). At DP 1 it shards nothing; over more ranks it shards the gradients and the host's state
among them: no more memory than planned."""


def bf16_state_in_deepspeed(plan: Plan) -> bool:
    """Whether ``plan``'s optimizer state is bf16 as DeepSpeed's ``bf16`` section states it: bf16-true (bf16
    weights, gradients and moments) or mixed precision with ``--optimizer-state bf16`` (a bf16 master and moments).

    DeepSpeed 0.19.8 keeps the partition a ZeRO rank updates (its "master") and that partition's gradient in bf16
    under ``"bf16": {"bf16_master_weights_and_grads": true}`` (``runtime/base_optimizer.py``
    ``_configure_master_weights`` returns ``torch.bfloat16``; ``zero/stage_1_and_2.py`` clones
    ``single_partition_of_fp32_groups`` in that dtype, ``zero/stage3.py`` ``fp32_partitioned_groups_flat`` alike) and
    the moments in bf16 only with ``"bf16_optimizer_states": true`` as well: the GPU optimizer's moments are
    ``zeros_like`` the bf16 partition (``ops/adam/fused_adam.py``; ``torch.optim`` alike), the CPU one's are bf16 when
    built with ``fp32_optimizer_states=False`` (``ops/adam/cpu_adam.py``), which ``engine.get_optimizer_configuration``
    passes under ``bf16_optimizer_states``. The master key alone keeps fp32 moments, and 0.19.8 allows that only under
    ZeRO-Offload with DeepSpeedCPUAdam (``_configure_master_weights``' offload validator). Both keys need ZeRO stage
    1-3 (``runtime/config.py`` ``_do_error_check``). Added in 0.18.3 (deepspeedai/DeepSpeed PR 7700; absent in
    0.18.2); bf16 states with ``offload_optimizer`` in 0.19.1+ (PR 8010). FP8 is refused for DeepSpeed, and
    ``bf16-moments`` (an fp32 master with bf16 moments) has no DeepSpeed switch (``bf16_optimizer_states`` requires the
    bf16 master)."""
    w = plan.workload
    return w.train_precision == "bf16-true" or (w.train_precision == "mixed" and w.optimizer_state == "bf16")


def bf16_section(plan: Plan) -> dict[str, object]:
    """ds_config.json's ``bf16`` section for ``plan`` (see :func:`bf16_state_in_deepspeed`)."""
    if bf16_state_in_deepspeed(plan):
        return {"enabled": True, "bf16_master_weights_and_grads": True, "bf16_optimizer_states": True}
    return {"enabled": True}


def zero_stage(plan: Plan, assumptions: list[str]) -> int:
    """The ZeRO stage a DeepSpeed config states for ``plan``: 3 for FSDP, the plan's, else :data:`OFFLOAD_ZERO_STAGE`
    where the optimizer is offloaded without sharding, or 1 where a bf16 optimizer state was planned without sharding
    (its keys need ZeRO 1-3; at stage 0 DeepSpeed's bf16 optimizer keeps an fp32 master), said in ``assumptions``."""
    lay = plan.layout
    stage = 3 if lay.fsdp else lay.zero
    if stage == 0 and lay.offload != "none":
        assumptions.append(f"Offload without sharding was planned: DeepSpeed reads offload_optimizer only under ZeRO, "
                           f"so stage {OFFLOAD_ZERO_STAGE} (ZeRO-Offload) with the optimizer state on the CPU; over "
                           f"DP {lay.dp} it holds no more than planned.")
        return OFFLOAD_ZERO_STAGE
    if stage == 0 and bf16_state_in_deepspeed(plan):
        assumptions.append(f"A bf16 optimizer state without sharding was planned: DeepSpeed keeps it in bf16 only under "
                           f"ZeRO (at stage 0 its bf16 optimizer holds an fp32 master), so stage 1; over DP {lay.dp} it "
                           "holds no more than planned.")
        return 1
    return stage


def bf16_state_notes(plan: Plan, stage: int, kind: str, assumptions: list[str], cannot: list[str]) -> None:
    """What a bf16 optimizer state asks of a DeepSpeed launch beyond its config (see
    :func:`bf16_state_in_deepspeed`); refuses what DeepSpeed 0.19.8 cannot run."""
    if not bf16_state_in_deepspeed(plan):
        return
    w, lay = plan.workload, plan.layout
    if lay.offload != "none":
        if w.optimizer != "adamw":
            raise not_expressible(kind, said("a bf16 optimizer state with offload runs only DeepSpeedCPUAdam in "
                                             "DeepSpeed (not {optimizer}); plan --optimizer adamw or use --recipe "
                                             "torchrun-fsdp", optimizer=w.optimizer))
        cannot.append("With offload the optimizer must be DeepSpeedCPUAdam(..., fp32_optimizer_states=False), else "
                      "DeepSpeed refuses bf16_optimizer_states; an \"optimizer\" section of type AdamW is built so.")
    if w.train_precision == "bf16-true" and lay.offload == "none" and plan.breakdown.get("master_weights_bytes", 0):
        assumptions.append(f"bf16-true under DeepSpeed: ZeRO-{stage} updates its own bf16 copy of each rank's partition "
                           "beside the model's bf16 weights, as planned (the plan's master weights).")
    elif w.train_precision == "bf16-true" and lay.offload == "none":  # offloaded, the plan counts it on the host
        assumptions.append(f"bf16-true under DeepSpeed: ZeRO-{stage} updates its own bf16 copy of each rank's partition "
                           f"(and that copy's bf16 gradient) beside the model's bf16 weights: 2 bytes a parameter over its "
                           f"{lay.dp} data-parallel rank(s) more than planned (the plan counts no master in bf16-true).")


def training_precision(plan: Plan, kind: str) -> str:
    """bf16 or fp8 (Transformer Engine); FP4 training is refused everywhere."""
    p = plan.workload.train_precision
    if p == "fp4":
        raise not_expressible(kind, said("FP4 training has no switch in this framework's launch or config"))
    if p == "fp8":
        if kind == "deepspeed":
            raise not_expressible(kind, said("ds_config.json has no FP8 training switch (Transformer Engine is "
                                             "set up in the model code); use --recipe accelerate or plan "
                                             "--train-precision mixed"))
        return "fp8"
    return "bf16"


def accelerate_runs_deepspeed(plan: Plan) -> bool:
    """Whether the accelerate recipe launches ``plan`` with its DeepSpeed plugin (ZeRO 1-2 or offload, no TP/CP)."""
    lay = plan.layout
    if lay.fsdp or lay.zero == 3 or lay.tp > 1 or lay.cp > 1:
        return False
    return lay.zero in (1, 2) or lay.offload != "none"


def config_states_bf16(plan: Plan, kind: str) -> bool:
    """Whether ``kind``'s config itself keeps ``plan``'s bf16 optimizer state (a DeepSpeed config with
    :func:`bf16_state_in_deepspeed`'s keys, the deepspeed recipe's or accelerate's DeepSpeed plugin's)."""
    return bf16_state_in_deepspeed(plan) and (kind == "deepspeed"
                                              or (kind == "accelerate" and accelerate_runs_deepspeed(plan)))


def bf16_true_weights(plan: Plan, kind: str, cannot: list[str]) -> None:
    """bf16-true outside DeepSpeed: the parameters themselves are bf16, so their gradients and the optimizer's moments
    (``torch.optim`` allocates them like the parameter) are bf16 with no master, as planned."""
    if plan.workload.train_precision != "bf16-true" or config_states_bf16(plan, kind):
        return
    why = (" (accelerate's mixed_precision no: under bf16 its FSDP2 preparation upcasts the trainable parameters to an "
           "fp32 master, accelerate utils/fsdp_utils.py fsdp2_prepare_model)" if kind == "accelerate" else "")
    cannot.append("bf16-true: the script loads the model in bfloat16 (e.g. from_pretrained(..., torch_dtype="
                  f"torch.bfloat16)) and builds {plan.workload.optimizer} on those parameters, so its state is bf16{why}.")
