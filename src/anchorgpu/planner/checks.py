"""Warnings a plan carries about its layout and its precision, and the check every plan ends with. Pure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.formats import WeightFormat, shipped_format
from anchorgpu.planner.inputs import PrecisionPlan, Workload
from anchorgpu.planner.layout_resolution import GPUS_PER_SERVER
from anchorgpu.planner.result import ResolvedLayout
from anchorgpu.planner.speed.peaks import fp4_units_take
from anchorgpu.planner.validate import shipped_kv_cache
from anchorgpu.planner.warnings import PlanWarning, make_warning

__all__ = ["BASE_CHECK", "is_shipped", "layout_warnings", "package_devices_warning", "plan_warnings", "precision_warnings"]

BASE_CHECK = said("Confirm with a short run on the real engine and GPU: framework, kernel and allocator versions "
                  "move the measured peak by several percent.")


_MEMO: dict[tuple[object, ...], tuple[object, object, object, tuple[PlanWarning, ...]]] = {}


def _memo(key: tuple[object, ...], first: object, second: object, third: object,
          make: Callable[..., list[PlanWarning]], *args: Any) -> tuple[PlanWarning, ...]:
    """``make(*args)`` as a tuple (the two come apart, so a hit makes no closure), memoised on ``key``: plain values and the ``id`` of the frozen objects ``first``,
    ``second`` and ``third`` (the GPU, the weight format, the model; None where not asked), checked by identity. The
    warnings depend on nothing else, and every plan of that GPU, format or split in a sweep or a layout search asks for
    the same ones."""
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is first and hit[1] is second and hit[2] is third:
        return hit[3]
    out = tuple(make(*args))
    if len(_MEMO) >= 2048:
        _MEMO.clear()
    _MEMO[key] = (first, second, third, out)
    return out


def layout_warnings(w: Workload, lay: ResolvedLayout, gpu: GpuSpec | None) -> tuple[PlanWarning, ...]:
    """What the split means for memory and engines: replicas do not pool memory, ZeRO without data parallelism,
    TP/PP/EP needing engine support, TP across servers or over PCIe."""
    training = w.task in ("train", "lora", "qlora")
    return _memo(("layout", training, lay.dp, lay.cp, lay.zero, lay.tp, lay.pp, lay.ep, id(gpu)), gpu, None, None,
                 _layout_warnings, training, lay, gpu)


def _layout_warnings(training: bool, lay: ResolvedLayout, gpu: GpuSpec | None) -> list[PlanWarning]:
    out: list[PlanWarning] = []
    if lay.dp > 1 and not training and lay.attention_dp:  # the experts are split over the replicas
        out.append(make_warning("attention_dp_replicas",
                                f"{lay.dp} attention replicas: each holds the attention and dense layers and its own "
                                f"sequences' KV cache; the routed experts are split over EP {lay.ep}"
                                + (f", {lay.attention_dp_groups} independent engines of "
                                   f"{lay.gpus // lay.attention_dp_groups} GPUs"
                                   if lay.attention_dp_groups > 1 else "")))
    elif lay.dp > 1 and (not training or lay.zero == 0):
        out.append(make_warning("ddp_no_memory_pooling", said(
            "{dp} data-parallel replicas: each GPU holds its own full share; memory does not pool", dp=lay.dp)))
    if lay.zero and lay.shard_group == 1:
        out.append(make_warning("zero_without_data_parallel",
                                said("ZeRO stage {zero} with one data-parallel rank shards nothing", zero=lay.zero)))
    if lay.tp > 1:
        out.append(make_warning("tp_requires_engine_support", said("tensor parallelism over {tp} GPUs", tp=lay.tp)))
    if lay.pp > 1:
        out.append(make_warning("pp_requires_engine_support", said("pipeline parallelism over {pp} stages", pp=lay.pp)))
    if lay.ep > 1:
        out.append(make_warning("ep_requires_engine_support", said("expert parallelism over {ep} GPUs", ep=lay.ep)))
    if lay.tp > GPUS_PER_SERVER:
        out.append(make_warning("tp_across_nodes", f"TP {lay.tp} spans more than one {GPUS_PER_SERVER}-GPU server"))
    if gpu is not None and not gpu.memory_is_runtime:
        out.append(make_warning("memory_total_unsourced",
                                f"{gpu.display_name} is planned on the vendor's {gpu.memory_headline} "
                                f"({gpu.memory_bytes / 2**30:.2f} GiB): no total from the {gpu.runtime_name} runtime is "
                                "sourced for it (on the GPUs where it is, the runtime reports less than the vendor's figure)"))
    if gpu is not None and gpu.devices_per_package > 1:  # MI250X: two GCDs, each a device of its own
        out.append(package_devices_warning(gpu, lay.tp))
    if gpu is not None and lay.tp > 1:
        link = gpu.interconnect.lower()
        if link.startswith("none") or ("bridge" in link and lay.tp > 2):
            out.append(make_warning("tp_over_pcie", f"TP {lay.tp} on {gpu.name} ({gpu.interconnect}) all-reduces over PCIe"))
    return out


def package_devices_warning(gpu: GpuSpec, tp: int) -> PlanWarning:
    """``package_is_several_devices``: the plan counts a package its software sees as ``n`` devices (MI250X: 2 GCDs
    of 64 GB) as one GPU, so its layout runs with ``n`` times the TP, a rank a device, each device holding ``1 / n``
    of the per-GPU total (TP 1 as planned is one 64-GB device: a recipe's ``--tensor-parallel-size 1`` would see
    half the memory planned)."""
    n = gpu.devices_per_package
    return make_warning("package_is_several_devices",
                        f"{gpu.display_name} is {n} devices to {gpu.runtime_name} ({gpu.memory_bytes / n / 2**30:.2f} "
                        f"GiB each), planned here as one GPU: launch TP {tp * n} where this plan says TP {tp} (one "
                        f"rank a device, each holding 1/{n} of the per-GPU total; PP x {n} where the attention heads "
                        "do not divide by that TP), as the --recipe launches write it")


def precision_warnings(
    fmt: WeightFormat, precision: PrecisionPlan, gpu: GpuSpec | None, *, shipped: bool = False,
    kv_shipped: bool = False,
) -> tuple[PlanWarning, ...]:
    """``shipped``: the weights are the format the checkpoint is published in, so their quality is the
    model's own, not a conversion to check (engine kernels still are); ``kv_shipped``: so is the KV cache (the
    FP8 one the checkpoint was calibrated for)."""
    return _memo(("precision", id(fmt), precision.kv_cache, id(gpu), shipped, kv_shipped), fmt, gpu, None,
                 _precision_warnings, fmt, precision.kv_cache, gpu, shipped, kv_shipped)


def _precision_warnings(fmt: WeightFormat, kv_cache: str, gpu: GpuSpec | None, shipped: bool,
                        kv_shipped: bool = False) -> list[PlanWarning]:
    out: list[PlanWarning] = []
    fp8_used = fmt.native == "fp8" or kv_cache == "fp8"
    if gpu is not None and fp8_used and not gpu.fp8_hardware:
        out.append(make_warning("fp8_without_hardware", f"{gpu.name} has no FP8 tensor cores"))
    if gpu is not None and fmt.native == "fp4" and not gpu.fp4_hardware:
        out.append(make_warning("fp4_weight_only_emulation",
                                f"{fmt.name} on {gpu.name}: FP4 weights are dequantized to 16 bit for the math"))
    elif gpu is not None and fmt.native == "fp4" and not fp4_units_take(gpu, fmt.name):
        out.append(make_warning("fp4_weight_only_emulation",
                                f"{fmt.name} on {gpu.name}: its FP4 units take {' and '.join(gpu.fp4_formats)} only, "
                                "so these FP4 weights are dequantized to 16 bit for the math"))
    fp8_cache = kv_cache in ("fp8", "nvfp4")  # a quantized KV cache (nvfp4 only where the engine runs it)
    if fmt.quantized or fp8_cache:
        cache = f"{kv_cache} KV cache"
        what = f"{fmt.name}, {cache}" if fmt.quantized and fp8_cache else fmt.name if fmt.quantized else cache
        # a shipped quantized KV cache is calibrated, as shipped weights are: only what was not shipped is unchecked
        unchecked = [name for name, asked in ((fmt.name, fmt.quantized and not shipped),
                                              (cache, fp8_cache and not kv_shipped)) if asked]
        if unchecked:
            out.append(make_warning("quantization_quality_unchecked",
                                    f"{', '.join(unchecked)}: quality depends on the model and the task"))
        out.append(make_warning("kernel_support_unchecked", f"{what}: needs engine kernels for this format"
                                + (f" on {gpu.name}" if gpu is not None else "")))
    if gpu is not None and gpu.vendor == "AMD":
        out.append(make_warning("rocm_cuda_only_dependency",
                                f"{gpu.name} runs ROCm: check every dependency has a ROCm build"
                                + (f" ({fmt.name} kernels especially)" if fmt.quantized else "")))
    return out


def plan_warnings(w: Workload, lay: ResolvedLayout, fmt: WeightFormat, precision: PrecisionPlan,
                  gpu: GpuSpec | None, model: ModelSpec | DiffusionPipelineSpec) -> tuple[PlanWarning, ...]:
    """:func:`layout_warnings` followed by :func:`precision_warnings`, the two a plan carries, in one memo lookup
    (their keys together: every plan asks for both). What the ``model`` decides is formed on a miss only
    (:func:`_model_terms`): whether its checkpoint ships the weights' format and the KV cache's dtype, and whether it
    keeps a KV cache at all (a model with no attention layer, Mamba: the dtype asked for applies to nothing, so it
    raises no warning of a quantized cache)."""
    training = w.task in ("train", "lora", "qlora")
    return _memo(("plan", training, lay.dp, lay.cp, lay.zero, lay.tp, lay.pp, lay.ep, id(gpu), id(fmt),
                  precision.kv_cache, id(model)), gpu, fmt, model, _plan_warnings, training, lay, gpu, fmt,
                 precision.kv_cache, model)


def is_shipped(fmt: WeightFormat, model: ModelSpec) -> bool:
    """``fmt == shipped_format(model)``, deciding the usual cases (the same object, another name) without
    comparing every field."""
    shipped = shipped_format(model)
    return fmt is shipped or (fmt.name == shipped.name and fmt == shipped)


def _model_terms(model: ModelSpec | DiffusionPipelineSpec, fmt: WeightFormat,
                 kv_cache: str) -> tuple[str, bool, bool]:
    """(the KV-cache dtype the warnings read, "none" where the model keeps no KV cache; the weights as the checkpoint
    ships them; the KV cache as it ships it)."""
    lm = model if isinstance(model, ModelSpec) else None
    keeps_kv_cache = lm is None or lm.attention_layers > 0
    return (kv_cache if keeps_kv_cache else "none", lm is not None and fmt.quantized and is_shipped(fmt, lm),
            kv_cache == shipped_kv_cache(model))


def _plan_warnings(training: bool, lay: ResolvedLayout, gpu: GpuSpec | None, fmt: WeightFormat, kv_cache: str,
                   model: ModelSpec | DiffusionPipelineSpec) -> list[PlanWarning]:
    kv_read, shipped, kv_shipped = _model_terms(model, fmt, kv_cache)
    return [*_layout_warnings(training, lay, gpu), *_precision_warnings(fmt, kv_read, gpu, shipped, kv_shipped)]
