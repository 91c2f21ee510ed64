"""Validation and defaults for :func:`~anchorgpu.planner.plan.plan`: the workload's fields
(:mod:`~anchorgpu.planner.workload_checks`), the weight format actually planned (here) and the layout resolved to
whole counts, ``gpus == tp · cp · pp · dp`` (:mod:`~anchorgpu.planner.layout_resolution`), all re-exported here.
Pure.

Each refusal is one :class:`~anchorgpu.errors.InvalidWorkload` line naming the value; each default used is
appended to the caller's ``assumptions``.
"""

from __future__ import annotations

from anchorgpu.architectures.quantization import describe_shipped
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._memo import memo_with_lines
from anchorgpu.planner.formats import WeightFormat, format_for_model, get_format, shipped_format
from anchorgpu.planner.inputs import KV_CACHE_AUTO, KV_CACHE_DTYPES, PrecisionPlan, Workload
from anchorgpu.planner.layout_resolution import (
    GPUS_PER_SERVER,
    check_layout_counts,
    check_tp,
    default_tp,
    resolve_layout,
    tp_is_valid,
)
from anchorgpu.planner.workload_checks import check_activation_offload_layout, check_positive, validate_workload

__all__ = ["GPUS_PER_SERVER", "TRAIN_FORMATS", "check_activation_offload_layout", "check_layout_counts", "check_positive",
           "check_tp", "default_tp",
           "resolve_format", "resolve_kv_cache", "shipped_kv_cache", "resolve_layout", "tp_is_valid", "validate_workload"]

TRAIN_FORMATS = ("bf16", "fp16", "fp32")

_FORMATS: dict[tuple[int, str, str | None, str], tuple[object, WeightFormat, tuple[str, ...]]] = {}


def resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    """The weight format planned (the checkpoint's, the task's default, or ``precision.weights``), its
    assumption appended. It depends on the (frozen) model, the task and the two dtypes only: memoised on them,
    so the plans of a sweep or a layout search resolve it once (a refusal is raised each time, never kept)."""
    key = (id(model), workload.task, precision.weights, precision.kv_cache)
    fmt: WeightFormat = memo_with_lines(_FORMATS, key, model, assumptions,
                                        lambda lines: _resolve_format(model, workload, precision, lines))
    return fmt


def _resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    if precision.kv_cache not in KV_CACHE_DTYPES and precision.kv_cache != KV_CACHE_AUTO:
        raise InvalidWorkload(f"unknown kv-cache dtype {precision.kv_cache!r}; valid: {', '.join(KV_CACHE_DTYPES)}")
    shipped = shipped_format(model) if isinstance(model, ModelSpec) else get_format("bf16")
    ships = shipped.name if shipped.shipped is not None else "16-bit weights"
    if precision.weights is None:
        if workload.task == "qlora":
            bnb_4bit = shipped.storage is not None and shipped.storage.flat_block > 0
            fmt = shipped if bnb_4bit else get_format("nf4-dq")
            assumptions.append(f"Weights stored as {fmt.name} (default for task qlora"
                               + ("; the checkpoint ships them so)." if bnb_4bit else
                                  f"; the checkpoint ships {ships}, quantized on load)."))
        elif workload.task in ("train", "lora") and shipped.shipped is not None:
            fmt = get_format("bf16")
            assumptions.append(f"Weights stored as bf16 for task {workload.task}: the checkpoint ships {ships}, "
                               "dequantized to 16 bit on load for training.")
        elif shipped.shipped is not None:
            fmt = shipped
            assumptions.append(f"Weights: {describe_shipped(shipped.shipped)}, as the checkpoint ships them "
                               f"(quantization_config {shipped.shipped.method}; --weights overrides).")
        else:
            fmt = shipped
            assumptions.append(f"Weights stored as {fmt.name} (default for task {workload.task}).")
    else:
        fmt = format_for_model(model, precision.weights) if isinstance(model, ModelSpec) else get_format(
            precision.weights)
        if fmt.name != shipped.name:
            assumptions.append(f"Weights: {fmt.name} (override; the checkpoint ships {ships}).")
        elif shipped.shipped is not None:
            assumptions.append(f"Weights: {describe_shipped(shipped.shipped)}, as the checkpoint ships them.")
    if workload.task == "train" and fmt.name not in TRAIN_FORMATS:
        raise InvalidWorkload(
            f"weights {fmt.name}: full training keeps 16-bit weights ({', '.join(TRAIN_FORMATS)}); "
            "for a quantized frozen base use --task qlora")
    if workload.task == "qlora" and not fmt.quantized:
        raise InvalidWorkload(
            f"weights {fmt.name}: QLoRA trains adapters on a quantized frozen base (nf4-dq by default); "
            "for a 16-bit base use --task lora")
    return fmt




def shipped_kv_cache(model: ModelSpec | DiffusionPipelineSpec) -> str | None:
    """The KV-cache dtype the checkpoint ships (its ``quantization_config``'s FP8 KV scheme: ``"fp8"``), or None."""
    q = model.quantization if isinstance(model, ModelSpec) else None
    return None if q is None else q.kv_cache


def resolve_kv_cache(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                     gpu: GpuSpec | None, assumptions: list[str]) -> str:
    """The KV-cache dtype planned, its assumption appended where the checkpoint ships one.

    Not asked for (:data:`~anchorgpu.planner.inputs.KV_CACHE_AUTO`): the checkpoint's FP8 KV cache when it ships
    one, as vLLM's and TensorRT-LLM's ``auto`` run it, on a GPU with FP8 hardware (or none named); on a GPU
    without, bf16 (the FP8 cache needs the FP8 kernels; the serving recipes refuse it there as they refuse
    ``--kv-cache fp8``), and bf16 for a checkpoint that ships none (and for training, which keeps no KV cache).
    Asked for: that dtype, said to override the checkpoint's where it differs."""
    kv = precision.kv_cache
    shipped = shipped_kv_cache(model) if workload.task == "inference" else None
    if shipped is None:
        return "bf16" if kv == KV_CACHE_AUTO else kv
    assert isinstance(model, ModelSpec) and model.quantization is not None
    where = f"quantization_config {model.quantization.method} {model.quantization.kv_cache_field}"
    if kv == KV_CACHE_AUTO:
        if gpu is not None and not gpu.computes_in(shipped):
            assumptions.append(f"KV cache: bf16. The checkpoint ships an {shipped.upper()} KV cache ({where}), but "
                               f"{gpu.name} has no {shipped.upper()} hardware: planned 16-bit (pass the engine a "
                               f"16-bit KV-cache dtype; --kv-cache {shipped} sizes the checkpoint's).")
            return "bf16"
        assumptions.append(f"KV cache: {shipped}, as the checkpoint ships it ({where}: calibrated scales, which "
                           "vLLM and TensorRT-LLM use by default); --kv-cache overrides.")
        return shipped
    if kv != shipped:
        assumptions.append(f"KV cache: {kv} (override; the checkpoint ships an {shipped.upper()} KV cache, {where}).")
    return kv
