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
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._memo import memo_with_lines
from anchorgpu.planner.formats import (
    WeightFormat,
    format_for_model,
    get_format,
    qlora_default_format,
    shipped_format,
)
from anchorgpu.planner.inputs import KV_CACHE_AUTO, KV_CACHE_DTYPES, EngineSource, PrecisionPlan, Workload
from anchorgpu.planner.layout_checks import check_layout_counts, check_layout_for_model
from anchorgpu.planner.layout_resolution import GPUS_PER_SERVER, check_tp, default_tp, resolve_layout, tp_is_valid
from anchorgpu.planner.workload_checks import (
    check_activation_offload_layout,
    check_kv_cache_task,
    check_positive,
    check_task_options,
    planned_task,
    validate_workload,
)

__all__ = ["GPUS_PER_SERVER", "TRAIN_FORMATS", "check_activation_offload_layout", "check_kv_cache_task", "check_layout_counts",
           "check_layout_for_model",
           "check_positive", "check_task_options", "planned_task",
           "check_tp", "default_tp",
           "default_kv_cache", "kv_cache_refusal", "kv_cache_runs_on", "nvfp4_kv_line", "nvfp4_kv_refusal",
           "resolve_format", "resolve_kv_cache", "serving_engine_named", "vllm_nvfp4_refusal",
           "shipped_kv_cache", "resolve_layout", "tp_is_valid", "validate_workload"]

TRAIN_FORMATS = ("bf16", "fp16", "fp32")

_FORMATS: dict[tuple[int, str, str | None, str, str], tuple[object, WeightFormat, tuple[str, ...]]] = {}


def resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    """The weight format planned (the checkpoint's, the task's default, or ``precision.weights``), its
    assumption appended. It depends on the (frozen) model, the task and the two dtypes only: memoised on them,
    so the plans of a sweep or a layout search resolve it once (a refusal is raised each time, never kept)."""
    key = (id(model), workload.task, precision.weights, precision.kv_cache, workload.train_precision)  # FP8's line
    fmt: WeightFormat = memo_with_lines(_FORMATS, key, model, assumptions, _resolve_format, model, workload, precision)
    return fmt


def _resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    if precision.kv_cache not in KV_CACHE_DTYPES and precision.kv_cache != KV_CACHE_AUTO:
        raise InvalidWorkload(said("unknown kv-cache dtype {kv_cache!r}; valid: {KV_CACHE_DTYPES}",
                                   kv_cache=precision.kv_cache, KV_CACHE_DTYPES=', '.join(KV_CACHE_DTYPES)))
    shipped = shipped_format(model) if isinstance(model, ModelSpec) else get_format("bf16")
    ships = shipped.name if shipped.shipped is not None else "16-bit weights"
    if precision.weights is None:
        if workload.task == "qlora":
            fmt = qlora_default_format(model) if isinstance(model, ModelSpec) else get_format("nf4-dq")
            bnb_4bit = fmt.name == shipped.name
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
        elif workload.task == "train" and workload.train_precision == "fp8":  # not "stored as bf16" (stop60_qa26)
            fmt = shipped
            assumptions.append(f"Weights: the {fmt.name} checkpoint (default for task train), held in FP8 with their "
                               "transposes under FP8 training (below).")
        else:
            fmt = shipped
            assumptions.append(said("Weights stored as {weights} (default for task {task}).", weights=fmt.name,
                                    task=workload.task))
    else:
        fmt = format_for_model(model, precision.weights) if isinstance(model, ModelSpec) else get_format(
            precision.weights)
        if fmt.name != shipped.name:
            assumptions.append(f"Weights: {fmt.name} (override; the checkpoint ships {ships}).")
        elif shipped.shipped is not None:
            assumptions.append(f"Weights: {describe_shipped(shipped.shipped)}, as the checkpoint ships them.")
    if workload.task == "train" and fmt.name not in TRAIN_FORMATS:
        raise InvalidWorkload(
            said("--weights {fmt_name}: full training keeps 16-bit weights ({TRAIN_FORMATS}); for a quantized "
                 "frozen base use --task qlora", fmt_name=fmt.name, TRAIN_FORMATS=', '.join(TRAIN_FORMATS)))
    if workload.task == "qlora" and not fmt.quantized:
        raise InvalidWorkload(
            said("--weights {fmt_name}: QLoRA trains adapters on a quantized frozen base (nf4-dq by default); for "
                 "a 16-bit base use --task lora", fmt_name=fmt.name))
    return fmt




def shipped_kv_cache(model: ModelSpec | DiffusionPipelineSpec) -> str | None:
    """The KV-cache dtype the checkpoint ships (its ``quantization_config``'s FP8 or NVFP4 KV scheme: ``"fp8"``,
    ``"nvfp4"``), or None."""
    q = model.quantization if isinstance(model, ModelSpec) else None
    return None if q is None else q.kv_cache


_FA2_FAMILIES = (8, 9, 12)
"""CUDA major versions on which vLLM 0.33.0 reads an NVFP4 KV cache with FlashInfer's FA2 kernels
(``vllm/v1/attention/backends/flashinfer.py`` ``_nvfp4_kv_on_fa2``: device families 80, 90 and 120: Ampere, Ada,
Hopper and the SM120 Blackwells); on family 100 (B200, B300, GB200, GB300) it uses the trtllm-gen kernels."""


def _cc_major(gpu: GpuSpec) -> int | None:
    cc = gpu.compute_capability
    return int(cc.split(".")[0]) if gpu.vendor == "NVIDIA" and cc else None


def _vllm_nvfp4_path(gpu: GpuSpec) -> str | None:
    """Which of vLLM 0.33.0's FlashInfer paths reads an NVFP4 KV cache on ``gpu``: ``"fa2"`` (families 80, 90, 120),
    ``"trtllm-gen"`` (family 100), or None (ROCm, whose backends list no nvfp4; compute capabilities FlashInfer's
    ``supports_compute_capability`` leaves out, below 8.0 or above 12.1)."""
    major = _cc_major(gpu)
    cc = tuple(int(part) for part in (gpu.compute_capability or "0.0").split("."))
    if major is None or not (8, 0) <= cc <= (12, 1):
        return None
    return "fa2" if major in _FA2_FAMILIES else "trtllm-gen" if major == 10 else None


def vllm_nvfp4_refusal(gpu: GpuSpec, model: ModelSpec | DiffusionPipelineSpec | None) -> str | None:
    """Why vLLM 0.33.0 cannot run an NVFP4 KV cache for ``model`` on ``gpu``, or None: only its FlashInfer backend
    lists ``nvfp4`` (``FlashInferBackend.supported_kv_cache_dtypes``; the CUDA backend selection takes it by itself,
    FLASH_ATTN refusing the dtype), on NVIDIA GPUs of compute capability 8.0 to 12.1; none of its ROCm backends lists
    it; ``VllmConfig.validate_nvfp4_kv_cache_with_mla`` refuses it for an MLA model; on the FA2 path (families 80, 90,
    120) ``FlashInferBackend.supports_combination`` refuses head size 64 ("fa2 prefill misreads an NVFP4 KV cache")
    and attention sinks (gpt-oss, whose heads are 64 wide).

    >>> from anchorgpu.hardware import get_gpu
    >>> [vllm_nvfp4_refusal(get_gpu(g), None) is None for g in ("a100", "h100", "l40s", "b200", "rtx-5090", "mi355x")]
    [True, True, True, True, True, False]
    """
    path = _vllm_nvfp4_path(gpu)
    if path is None:
        where = (f"{gpu.name} is an AMD GPU and none of vLLM's ROCm attention backends takes nvfp4"
                 if gpu.vendor != "NVIDIA" else
                 f"{gpu.name} (compute capability {gpu.compute_capability}) is outside FlashInfer's 8.0-12.1")
        return said("vLLM 0.33.0 reads an NVFP4 KV cache with its FlashInfer backend only, on NVIDIA GPUs; {where}",
                    where=where)
    if isinstance(model, ModelSpec) and model.mla is not None:
        return (said("{model_name} uses MLA, for which vLLM 0.33.0 refuses an NVFP4 KV cache "
                     "(validate_nvfp4_kv_cache_with_mla: its nvfp4 layout is for the FlashInfer backend, no MLA "
                     "backend)", model_name=model.name))
    if path == "fa2" and isinstance(model, ModelSpec) and model.head_dim == 64:
        return (said("on {gpu_name} vLLM 0.33.0 reads an NVFP4 KV cache with FlashInfer's FA2 kernels, which "
                     "misread {model_name}'s 64-wide heads (FlashInferBackend.supports_combination)",
                     gpu_name=gpu.name, model_name=model.name))
    return None


def kv_cache_runs_on(kv: str, gpu: GpuSpec, engine: str = "vllm",
                     model: ModelSpec | DiffusionPipelineSpec | None = None) -> bool:
    """Whether a KV-cache dtype is planned on ``gpu`` for ``engine``: FP8 units for ``fp8``; for ``nvfp4``, where
    the serving engine runs it (:func:`nvfp4_kv_refusal`); 16-bit runs everywhere.

    >>> from anchorgpu.hardware import get_gpu
    >>> [kv_cache_runs_on("nvfp4", get_gpu(g)) for g in ("h100", "b200", "mi355x")]
    [True, True, False]
    >>> [kv_cache_runs_on("nvfp4", get_gpu(g), "trtllm") for g in ("h100", "b200", "mi355x")]
    [False, True, False]
    >>> [kv_cache_runs_on("nvfp4", get_gpu(g), "sglang") for g in ("h100", "b200", "mi355x")]
    [False, True, False]
    """
    if kv == "fp8":
        return gpu.fp8_hardware
    if kv == "nvfp4":
        return nvfp4_kv_refusal(gpu, engine, model) is None
    return True


def nvfp4_kv_refusal(gpu: GpuSpec, engine: str, model: ModelSpec | DiffusionPipelineSpec | None = None) -> str | None:
    """Why an NVFP4 KV cache is not planned on ``gpu`` for ``engine``, or None.

    ``trtllm``: Blackwell (NVFP4 among the GPU's FP4 formats) only. ``vllm``: where vLLM 0.33.0 runs it
    (:func:`vllm_nvfp4_refusal`: FlashInfer's FA2 kernels on Ampere, Ada, Hopper and SM120, trtllm-gen on SM100; not
    for MLA), and also on any Blackwell GPU (MLA models included), since the vLLM sizing is the one the SGLang launch
    (``--recipe sglang``) uses and SGLang runs it on SM100 and SM120 (``kv_cache_hook.handle_kv4_compatibility``);
    the vLLM launch then refuses what vLLM does not run."""
    blackwell = "NVFP4" in gpu.fp4_formats
    if engine == "trtllm":
        return None if blackwell else said("TensorRT-LLM runs an NVFP4 KV cache on Blackwell GPUs only (NVFP4 "
                                           "hardware); {gpu} has none", gpu=gpu.name)
    if engine == "sglang":
        return None if blackwell else said("SGLang runs an NVFP4 KV cache on Blackwell SM100 or SM120 only "
                                           "(kv_cache_hook.handle_kv4_compatibility); {gpu} is neither", gpu=gpu.name)
    vllm = vllm_nvfp4_refusal(gpu, model)
    if vllm is None or blackwell:
        return None
    return said("{vllm}, and SGLang and TensorRT-LLM need Blackwell for it", vllm=vllm)


def default_kv_cache(shipped: str | None, gpu: GpuSpec | None, engine: str = "vllm",
                     model: ModelSpec | DiffusionPipelineSpec | None = None) -> str:
    """The KV-cache dtype planned when none is asked for: the checkpoint's (``shipped``) where ``engine`` runs it on
    ``gpu`` (or no GPU is named): vLLM's ``auto`` takes a ModelOpt NVFP4 KV cache on any GPU
    (``get_kv_cache_quant_algo_string``, ``MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP``) and its FlashInfer backend runs it
    off Blackwell too; TensorRT-LLM's runs the checkpoint's algorithm (Blackwell for NVFP4). Where the engine does not,
    an NVFP4 one falls back to FP8 on a GPU with FP8 hardware (the one other quantized cache TensorRT-LLM can be told
    to run over the checkpoint's, ``kv_cache_config.dtype: fp8``, whose FP8 and NVFP4 KV scales are both amax/448),
    else bf16; bf16 for a checkpoint that ships none. With vLLM the default is what vLLM itself runs
    (:func:`vllm_nvfp4_refusal`): an MLA model's NVFP4 cache falls back to FP8 on Blackwell too, where vLLM refuses it
    at start-up; ``--kv-cache nvfp4`` still plans it there for an SGLang or TensorRT-LLM launch.

    >>> from anchorgpu.hardware import get_gpu
    >>> from anchorgpu.architectures import load_model
    >>> [default_kv_cache("nvfp4", get_gpu(g)) for g in ("b200", "h100", "a100", "mi300x")]
    ['nvfp4', 'nvfp4', 'nvfp4', 'fp8']
    >>> [default_kv_cache("nvfp4", get_gpu(g), "trtllm") for g in ("b200", "h100", "a100")]
    ['nvfp4', 'fp8', 'bf16']
    >>> r1 = load_model("deepseek-r1")
    >>> default_kv_cache("nvfp4", get_gpu("b200"), "vllm", r1), default_kv_cache("nvfp4", get_gpu("b200"), "trtllm", r1)
    ('fp8', 'nvfp4')
    """
    if shipped is None:
        return "bf16"
    if gpu is None:
        return shipped
    chain = (shipped, "fp8", "bf16") if shipped == "nvfp4" else (shipped, "bf16")
    return next(k for k in chain if _default_runs(k, gpu, engine, model))


def _default_runs(kv: str, gpu: GpuSpec, engine: str, model: ModelSpec | DiffusionPipelineSpec | None) -> bool:
    """Whether ``engine``'s own default (its ``auto``) would run the KV-cache dtype ``kv`` on ``gpu``."""
    if kv == "nvfp4":
        return _nvfp4_default_refusal(gpu, engine, model) is None
    return kv_cache_runs_on(kv, gpu, engine, model)


_ENGINE_NAMES = {"vllm": "vLLM", "trtllm": "TensorRT-LLM", "sglang": "SGLang"}


def serving_engine_named(engine: str, source: EngineSource = "given") -> str:
    """The serving engine as a refusal names it: the option the user gave, or the engine and why it was chosen, so a
    message never names an ``--engine`` nobody gave.

    >>> serving_engine_named("vllm"), serving_engine_named("vllm", "default"), serving_engine_named("trtllm", "recipe")
    ('--engine vllm', 'vLLM, the default engine', 'TensorRT-LLM, the engine of --recipe trtllm')
    """
    if source == "default":
        return f"{_ENGINE_NAMES.get(engine, engine)}, the default engine"
    if source == "recipe":
        return f"{_ENGINE_NAMES.get(engine, engine)}, the engine of --recipe {engine}"
    return f"--engine {engine}"


def kv_cache_refusal(kv: str, gpu: GpuSpec, engine: str = "vllm",
                     model: ModelSpec | DiffusionPipelineSpec | None = None,
                     source: EngineSource = "given") -> str | None:
    """The one-line refusal of a KV-cache dtype asked for on a GPU where ``engine`` does not run it, or None: only
    ``nvfp4`` is refused (an FP8 cache on a GPU without FP8 is planned with a warning, as before). ``source`` says
    how the engine was chosen (:func:`serving_engine_named`); where vLLM runs the cache and TensorRT-LLM does not,
    the way to size for vLLM is offered too (no other engine runs one where vLLM does not: they need Blackwell, where
    vLLM's sizing plans it)."""
    if kv != "nvfp4":
        return None
    why = nvfp4_kv_refusal(gpu, engine, model)
    if why is None:
        return None
    other = "fp8" if gpu.fp8_hardware else "bf16"
    switch = ""
    if engine in ("trtllm", "sglang") and nvfp4_kv_refusal(gpu, "vllm", model) is None:
        switch = f", or {'--recipe vllm' if source == 'recipe' else '--engine vllm'} (vLLM runs it on {gpu.name})"
    return said("--kv-cache nvfp4 with {engine}: {why}; use --kv-cache {other}{switch}",
                engine=serving_engine_named(engine, source), why=why, other=other, switch=switch)


def nvfp4_kv_line(gpu: GpuSpec | None, engine: str, model: ModelSpec | DiffusionPipelineSpec | None) -> str | None:
    """The assumption saying which engine path runs a planned NVFP4 KV cache, or None where there is nothing to add
    (no GPU named; TensorRT-LLM on Blackwell)."""
    if gpu is None or engine in ("trtllm", "sglang"):  # planned only where they run it (Blackwell)
        return None
    vllm = vllm_nvfp4_refusal(gpu, model)
    if vllm is not None:  # Blackwell, the model being MLA or vLLM's FA2 path refusing it
        return (f"NVFP4 KV cache on {gpu.name}: {vllm}; planned as SGLang (--kv-cache-dtype nvfp4, SM100/SM120) "
                "and TensorRT-LLM (--engine trtllm) run it, and the vLLM launch is refused.")
    if _vllm_nvfp4_path(gpu) == "fa2":
        sglang = ("SGLang runs it too (SM120)" if "NVFP4" in gpu.fp4_formats else
                  "SGLang and TensorRT-LLM need Blackwell for it (--recipe sglang is refused here)")
        return (f"NVFP4 KV cache on {gpu.name}: vLLM 0.33.0 runs it through FlashInfer's FA2 kernels (its FlashInfer "
                "backend, the one CUDA backend taking --kv-cache-dtype nvfp4, chosen by itself), the pages "
                f"dequantized to 16 bit inside attention; {sglang}.")
    return (f"NVFP4 KV cache on {gpu.name}: vLLM 0.33.0 runs it through FlashInfer's trtllm-gen kernels (SM100); "
            "SGLang and TensorRT-LLM run it too.")


def resolve_kv_cache(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                     gpu: GpuSpec | None, assumptions: list[str]) -> str:
    """The KV-cache dtype planned, its assumption appended where the checkpoint ships one or the cache is NVFP4.

    Not asked for (:data:`~anchorgpu.planner.inputs.KV_CACHE_AUTO`): the checkpoint's quantized KV cache when it
    ships one, as the serving engine's ``auto`` runs it, where ``workload.engine`` runs it on the GPU (or none named;
    :func:`default_kv_cache`: vLLM's NVFP4 path reaches Ampere, Ada and Hopper, TensorRT-LLM's needs Blackwell);
    elsewhere :func:`default_kv_cache`'s fallback (an FP8 cache needs the FP8 kernels; the serving recipes refuse it
    there as they refuse ``--kv-cache fp8``), and bf16 for a checkpoint that ships none (and for training, which keeps
    no KV cache). Asked for: that dtype, said to override the checkpoint's where it differs; ``nvfp4`` where the
    engine does not run it is refused (:func:`kv_cache_refusal`). A planned NVFP4 cache's engine path is stated
    (:func:`nvfp4_kv_line`)."""
    kv = precision.kv_cache
    if kv == KV_CACHE_AUTO and getattr(model, "quantization", None) is None:  # the usual case: nothing asked for and
        return "bf16"  # nothing shipped (what _resolve_kv_cache gives it, with no assumption)
    engine = workload.engine
    if kv != KV_CACHE_AUTO and gpu is not None and workload.task == "inference":
        refused = kv_cache_refusal(kv, gpu, engine, model, workload.engine_source)
        if refused:
            raise InvalidWorkload(refused)
    chosen = _resolve_kv_cache(model, workload, kv, gpu, assumptions)
    if chosen == "nvfp4" and workload.task == "inference":
        line = nvfp4_kv_line(gpu, engine, model)
        if line is not None:
            assumptions.append(line)
    return chosen


def _nvfp4_default_refusal(gpu: GpuSpec, engine: str, model: ModelSpec | DiffusionPipelineSpec | None) -> str | None:
    """Why ``engine``'s default does not plan the checkpoint's NVFP4 KV cache on ``gpu``."""
    return vllm_nvfp4_refusal(gpu, model) if engine == "vllm" else nvfp4_kv_refusal(gpu, engine, model)


def _resolve_kv_cache(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, kv: str, gpu: GpuSpec | None,
                      assumptions: list[str]) -> str:
    shipped = shipped_kv_cache(model) if workload.task == "inference" else None
    if shipped is None:
        if workload.task == "inference" and isinstance(model, ModelSpec) and model.quantization is not None:
            assumptions.extend(model.quantization.notes)  # a KV cache it ships that the planner has no dtype for
        return "bf16" if kv == KV_CACHE_AUTO else kv
    assert isinstance(model, ModelSpec) and model.quantization is not None
    where = f"quantization_config {model.quantization.method} {model.quantization.kv_cache_field}"
    engine = workload.engine
    if kv == KV_CACHE_AUTO:
        chosen = default_kv_cache(shipped, gpu, engine, model)
        if chosen != shipped:
            assert gpu is not None
            why = (f"{gpu.name} has no {shipped.upper()} hardware" if shipped != "nvfp4" else
                   f"{_nvfp4_default_refusal(gpu, engine, model)} "
                   f"({serving_engine_named(engine, workload.engine_source)})")
            if chosen == "fp8":
                assumptions.append(
                    f"KV cache: fp8. The checkpoint ships an {shipped.upper()} KV cache ({where}), but {why}: "
                    "planned as FP8, the cache TensorRT-LLM can be told to run "
                    "instead (kv_cache_config.dtype fp8; its FP8 and NVFP4 KV scales are both amax/448), vLLM and "
                    "SGLang with --kv-cache-dtype fp8 / fp8_e4m3; --kv-cache overrides.")
            else:
                assumptions.append(
                    f"KV cache: bf16. The checkpoint ships an {shipped.upper()} KV cache ({where}), but {why}: "
                    "planned 16-bit (pass the engine a 16-bit KV-cache dtype"
                    + (f"; --kv-cache {shipped} sizes the checkpoint's)." if shipped == "fp8" else ")."))
            return chosen
        if shipped == "nvfp4":
            runs = ("vLLM's auto maps ModelOpt's NVFP4 to --kv-cache-dtype nvfp4, get_kv_cache_quant_algo_string"
                    if engine == "vllm" else "TensorRT-LLM runs the checkpoint's kv_cache_quant_algo")
            assumptions.append(f"KV cache: nvfp4, as the checkpoint ships it ({where}: calibrated scales; {runs}; "
                               "SGLang's auto would take 16 bit, its launch names nvfp4); --kv-cache overrides.")
        else:
            assumptions.append(f"KV cache: {shipped}, as the checkpoint ships it ({where}: calibrated scales, which "
                               "vLLM and TensorRT-LLM use by default); --kv-cache overrides.")
        return shipped
    if kv != shipped:
        assumptions.append(f"KV cache: {kv} (override; the checkpoint ships an {shipped.upper()} KV cache, {where}).")
    return kv
