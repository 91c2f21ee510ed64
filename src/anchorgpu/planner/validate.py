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
           "default_kv_cache", "kv_cache_refusal", "kv_cache_runs_on", "resolve_format", "resolve_kv_cache",
           "shipped_kv_cache", "resolve_layout", "tp_is_valid", "validate_workload"]

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
    """The KV-cache dtype the checkpoint ships (its ``quantization_config``'s FP8 or NVFP4 KV scheme: ``"fp8"``,
    ``"nvfp4"``), or None."""
    q = model.quantization if isinstance(model, ModelSpec) else None
    return None if q is None else q.kv_cache


def kv_cache_runs_on(kv: str, gpu: GpuSpec) -> bool:
    """Whether ``gpu`` has the hardware a KV-cache dtype is planned on: FP8 units for ``fp8``, NVFP4 among its FP4
    formats for ``nvfp4`` (Blackwell; the MI355X's FP4 units take MXFP4, not NVFP4); 16-bit runs everywhere.

    >>> from anchorgpu.hardware import get_gpu
    >>> [kv_cache_runs_on("nvfp4", get_gpu(g)) for g in ("h100", "b200", "mi355x")]
    [False, True, False]
    """
    if kv == "fp8":
        return gpu.fp8_hardware
    if kv == "nvfp4":
        return "NVFP4" in gpu.fp4_formats
    return True


def default_kv_cache(shipped: str | None, gpu: GpuSpec | None) -> str:
    """The KV-cache dtype planned when none is asked for: the checkpoint's (``shipped``) on a GPU that runs it (or
    none named); where the GPU does not, an NVFP4 one falls back to FP8 on a GPU with FP8 hardware (the one other
    quantized cache TensorRT-LLM can be told to run over the checkpoint's, ``kv_cache_config.dtype: fp8``, whose
    FP8 and NVFP4 KV scales are both amax/448), else bf16; bf16 for a checkpoint that ships none.

    >>> from anchorgpu.hardware import get_gpu
    >>> [default_kv_cache("nvfp4", get_gpu(g)) for g in ("b200", "h100", "a100")]
    ['nvfp4', 'fp8', 'bf16']
    """
    if shipped is None:
        return "bf16"
    if gpu is None:
        return shipped
    chain = (shipped, "fp8", "bf16") if shipped == "nvfp4" else (shipped, "bf16")
    return next(k for k in chain if kv_cache_runs_on(k, gpu))


def kv_cache_refusal(kv: str, gpu: GpuSpec) -> str | None:
    """The one-line refusal of a KV-cache dtype asked for on a GPU without the hardware for it, or None: only
    ``nvfp4`` is refused (an FP8 cache on a GPU without FP8 is planned with a warning, as before)."""
    if kv != "nvfp4" or kv_cache_runs_on(kv, gpu):
        return None
    other = "fp8" if gpu.fp8_hardware else "bf16"
    return (f"--kv-cache nvfp4: {gpu.name} has no NVFP4 hardware (the NVFP4 KV cache is planned on Blackwell GPUs "
            f"only); use --kv-cache {other}")


def resolve_kv_cache(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                     gpu: GpuSpec | None, assumptions: list[str]) -> str:
    """The KV-cache dtype planned, its assumption appended where the checkpoint ships one.

    Not asked for (:data:`~anchorgpu.planner.inputs.KV_CACHE_AUTO`): the checkpoint's quantized KV cache when it
    ships one, as vLLM's and TensorRT-LLM's ``auto`` run it, on a GPU with the hardware for it (or none named); on a
    GPU without, :func:`default_kv_cache`'s fallback (an FP8 cache needs the FP8 kernels; the serving recipes
    refuse it there as they refuse ``--kv-cache fp8``), and bf16 for a checkpoint that ships none (and for
    training, which keeps no KV cache). Asked for: that dtype, said to override the checkpoint's where it differs;
    ``nvfp4`` on a GPU without NVFP4 hardware is refused (:func:`kv_cache_refusal`)."""
    kv = precision.kv_cache
    if kv != KV_CACHE_AUTO and gpu is not None and workload.task == "inference":
        refused = kv_cache_refusal(kv, gpu)
        if refused:
            raise InvalidWorkload(refused)
    shipped = shipped_kv_cache(model) if workload.task == "inference" else None
    if shipped is None:
        return "bf16" if kv == KV_CACHE_AUTO else kv
    assert isinstance(model, ModelSpec) and model.quantization is not None
    where = f"quantization_config {model.quantization.method} {model.quantization.kv_cache_field}"
    if kv == KV_CACHE_AUTO:
        chosen = default_kv_cache(shipped, gpu)
        if chosen != shipped:
            assert gpu is not None
            if chosen == "fp8":
                assumptions.append(
                    f"KV cache: fp8. The checkpoint ships an {shipped.upper()} KV cache ({where}), but {gpu.name} has "
                    f"no {shipped.upper()} hardware: planned as FP8, the cache TensorRT-LLM can be told to run "
                    "instead (kv_cache_config.dtype fp8; its FP8 and NVFP4 KV scales are both amax/448), vLLM and "
                    "SGLang with --kv-cache-dtype fp8 / fp8_e4m3; --kv-cache overrides.")
            else:
                assumptions.append(
                    f"KV cache: bf16. The checkpoint ships an {shipped.upper()} KV cache ({where}), but {gpu.name} "
                    f"has no {shipped.upper()} hardware: planned 16-bit (pass the engine a 16-bit KV-cache dtype"
                    + (f"; --kv-cache {shipped} sizes the checkpoint's)." if shipped == "fp8" else ")."))
            return chosen
        assumptions.append(f"KV cache: {shipped}, as the checkpoint ships it ({where}: calibrated scales, which "
                           "vLLM and TensorRT-LLM use by default); --kv-cache overrides.")
        return shipped
    if kv != shipped:
        assumptions.append(f"KV cache: {kv} (override; the checkpoint ships an {shipped.upper()} KV cache, {where}).")
    return kv
