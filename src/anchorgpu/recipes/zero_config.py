"""``ds_config.json``'s ``zero_optimization`` section: the stage and the buffer sizes, the values the plan counts
(:mod:`~anchorgpu.planner.deepspeed_zero`, ``planner/data/deepspeed_zero.json``) or, at stage 3, bounds that keep
DeepSpeed within the plan's gather buffer."""

from __future__ import annotations

from anchorgpu.planner.deepspeed_zero import reduce_bucket_numel, zero_settings
from anchorgpu.planner.plan import Plan
from anchorgpu.units import fmt_bytes

__all__ = ["plugin_bucket_line", "zero_optimization"]


def zero_optimization(plan: Plan, stage: int, assumptions: list[str]) -> dict[str, object]:
    """``zero_optimization``'s stage and buffer sizes. ZeRO-1/2: the values the plan counts
    (``planner/data/deepspeed_zero.json``, :mod:`~anchorgpu.planner.deepspeed_zero`). ZeRO-3, where the plan counts
    FSDP's largest two gathered units (``gather_buffer_bytes``; ``u`` elements of 16-bit storage, half of it: a
    block, or the mean of the embedding/head and a block, :mod:`~anchorgpu.planner.memory.fsdp_units`; DeepSpeed
    fetches the module computing whatever its size, so the embedding alone is within it) and no DeepSpeed buffer
    (a ZeRO-3 plan is FSDP's as well), bounds DeepSpeed to it: ``stage3_prefetch_bucket_size`` and
    ``stage3_max_live_parameters`` u (``partitioned_param_coordinator.py`` ``fetch_sub_module`` prefetches at most
    min(max_live - available, prefetch bucket) beyond the current submodule) and ``stage3_max_reuse_distance`` u
    (``__params_to_release`` keeps a parameter reused within that many elements), where the defaults (1e9 live, 1e9
    reuse) keep up to 2 GB of gathered weights; ``sub_group_size`` u (``stage3.py`` ``_prepare_fp32_grad_for_sub_group``
    makes one sub-group's flat gradient and its fp32 copy at a time in the step, 6 bytes an element, after the
    activations are freed). ``reduce_bucket_size`` is hidden² at every stage (transformers' ``"auto"`` value,
    :func:`~anchorgpu.planner.deepspeed_zero.reduce_bucket_numel`); at stage 3 ``stage3.py`` ``__init__`` holds one
    such bucket for the whole run, which a plan for this launch counts
    (:func:`~anchorgpu.planner.deepspeed_terms.zero3_bucket_bytes`)."""
    s = zero_settings()
    hidden = getattr(plan.model, "hidden_size", 0) or 1
    bucket = reduce_bucket_numel(hidden)
    zero: dict[str, object] = {"stage": stage, "overlap_comm": s.overlap_comm,
                               "contiguous_gradients": s.contiguous_gradients, "reduce_bucket_size": bucket}
    if stage in (1, 2):
        zero["allgather_bucket_size"] = s.allgather_bucket_size
        return zero
    if stage == 3:
        unit = max(1, plan.breakdown.get("gather_buffer_bytes", 0) // 4)
        zero.update(stage3_prefetch_bucket_size=unit, stage3_max_live_parameters=unit,
                    stage3_max_reuse_distance=unit, sub_group_size=unit)
        step = 6 * unit
        covered = step <= plan.per_gpu.activations_bytes
        assumptions.append(
            f"ZeRO-3 bounded to half the plan's gather buffer ({unit:,} elements: stage3_prefetch_bucket_size, "
            "stage3_max_live_parameters, stage3_max_reuse_distance) and the step to sub-groups of one unit "
            f"(sub_group_size; its flat gradient and fp32 copy, {fmt_bytes(step)}, "
            + ("fit in the activations freed before the step" if covered else
               f"exceed the activations freed before the step by {fmt_bytes(step - plan.per_gpu.activations_bytes)}")
            + f"); ZeRO-3's reduce bucket of hidden² = {bucket:,} values ({fmt_bytes(2 * bucket)}, held for the whole "
            "run) " + ("as planned." if plan.breakdown.get("zero3_reduce_bucket_bytes", 0) >= 2 * bucket else
                       "is more than planned (plan with --recipe deepspeed to count it)."))
    return zero


def plugin_bucket_line(plan: Plan) -> str:
    """What accelerate's DeepSpeed plugin keys leave at DeepSpeed's default (an FP8 plan: its ``mixed_precision: fp8``
    is a YAML key, which accelerate refuses beside a ``deepspeed_config_file``): one ``reduce_bucket_size`` bucket of
    5e8 values (:func:`~anchorgpu.planner.deepspeed_zero.plugin_reduce_buckets_bytes`), which a plan for this launch
    (``--recipe accelerate``) counts."""
    from anchorgpu.planner.deepspeed_zero import plugin_reduce_buckets_bytes

    default = plugin_reduce_buckets_bytes()
    planned = plan.breakdown.get("zero_reduce_buckets_bytes", 0)
    line = (f"FP8 under accelerate's DeepSpeed plugin: its keys set no reduce_bucket_size, so DeepSpeed's default "
            f"bucket of 5e8 values ({fmt_bytes(default)} in bf16, overlap_comm off) is held through the backward")
    if planned >= default:
        return line + ", as planned."
    return line + f": {fmt_bytes(default - planned)} more than planned (plan with --recipe accelerate to count it)."
