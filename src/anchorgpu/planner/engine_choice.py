"""Which serving engine and training stack a request is sized and timed for, as every face resolves them, and the
refusals that follow from them (an engine on GPUs it does not run on, a sequence cap its scheduler refuses). Pure;
stdlib only beside the planner's inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, cast

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.inputs import Engine, EngineSource, TrainStack

if TYPE_CHECKING:
    from collections.abc import Iterable

    from anchorgpu.hardware.spec import GpuSpec

__all__ = ["TRAINING_RECIPES", "check_engine_caps", "engine_refusal", "engine_source", "engine_weights_refusal",
           "launch_reach", "launches_accelerate", "launches_stages", "launches_torchrun_fsdp",
           "launches_tp_cp", "resolve_engine",
           "resolve_train_stack"]


def engine_refusal(engine: str, gpus: Iterable[GpuSpec], source: EngineSource = "given") -> str | None:
    """The one-line refusal of a serving engine on GPUs it does not run on, or None: TensorRT-LLM runs on NVIDIA
    GPUs only, SGLang on NVIDIA GPUs and AMD's with ROCm (its platforms: CUDA and HIP; Intel's, Ascend's and Apple's
    backends are not GPUs of the catalog's vendors) (``plan``, the sweep and ``recommend``'s rejections all say it this
    way), named by the option that chose it (``source``: ``--recipe trtllm`` where that launch chose the engine).

    >>> from anchorgpu.hardware import get_gpu
    >>> engine_refusal("trtllm", [get_gpu("h100"), get_gpu("mi300x")]), engine_refusal("vllm", [get_gpu("mi300x")])
    ('--engine trtllm: TensorRT-LLM runs on NVIDIA GPUs only, not mi300x', None)
    >>> engine_refusal("trtllm", [get_gpu("mi300x")], "recipe")
    '--recipe trtllm: TensorRT-LLM runs on NVIDIA GPUs only, not mi300x'
    >>> engine_refusal("sglang", [get_gpu("h100"), get_gpu("mi300x")]) is None  # CUDA and ROCm: every catalog GPU
    True
    """
    runs_on = {"trtllm": ("NVIDIA",), "sglang": ("NVIDIA", "AMD")}.get(engine)
    if runs_on is None:
        return None
    other = sorted({gpu.name for gpu in gpus if gpu.vendor not in runs_on})
    option = "--recipe" if source == "recipe" else "--engine"
    if not other:
        return None
    if engine == "trtllm":
        return said("{option} {engine}: TensorRT-LLM runs on NVIDIA GPUs only, not {other}", option=option,
                    engine=engine, other=", ".join(other))
    return said("{option} {engine}: SGLang runs on NVIDIA and AMD GPUs only, not {other}", option=option,
                engine=engine, other=", ".join(other))


def engine_weights_refusal(engine: str, weights: str, native: str | None, gpu: GpuSpec,
                           source: EngineSource = "given", *, moe: bool = False) -> str | None:
    """The one-line refusal of a weight format ``engine`` has no kernels for on ``gpu``, or None: TensorRT-LLM runs
    FP8 weights only where the GPU has FP8 tensor cores (its support matrix lists FP32, FP16, BF16, INT8 and INT4 for
    Ampere, FP8 from Ada; nvidia.github.io/TensorRT-LLM/0.18.2/reference/support-matrix.html, and its quantization
    page: "The default PyTorch backend supports FP4 and FP8 quantization on the latest Blackwell and Hopper GPUs"),
    MXFP4 weights on Hopper (its Triton MoE backend) and Blackwell (the gpt-oss deployment guide's MoE backend support
    matrix lists no other GPU), NVFP4 on Blackwell only; and it loads no GGUF file or bitsandbytes NF4 checkpoint on
    any GPU (its quantization page's recipes: FP4, FP8, W4A16/W4A8 AWQ and GPTQ, W8A16, W8A8 SmoothQuant;
    nvidia.github.io/TensorRT-LLM/features/quantization.html). vLLM and SGLang fall back to weight-only kernels (vLLM's
    Marlin for FP8 and FP4 below their tensor cores), which the plan times and warns of; ``native``: the format's
    hardware math (``WeightFormat.native``).

    On AMD GPUs vLLM and SGLang read an NVFP4 (ModelOpt) checkpoint through Petit (``override_quantization_method``
    turns ``modelopt`` into ``petit_nvfp4`` on ROCm), whose ``get_quant_method`` quantizes linear layers only and
    returns nothing for a fused mixture-of-experts layer, so an NVFP4 MoE (``moe``) does not load there
    (vllm-project/vllm ``vllm/model_executor/layers/quantization/petit.py``; sgl-project/sglang
    ``python/sglang/srt/layers/quantization/petit.py``; ``vllm/platforms/rocm.py`` lists ``petit_nvfp4``, not
    ``modelopt``, among ROCm's quantizations).

    >>> from anchorgpu.hardware import get_gpu
    >>> engine_weights_refusal("trtllm", "mxfp4", "fp4", get_gpu("a100"))
    '--engine trtllm with mxfp4 weights: TensorRT-LLM runs MXFP4 weights on Hopper and Blackwell GPUs only, not a100-80gb-sxm'
    >>> [engine_weights_refusal("trtllm", w, n, get_gpu("h100")) is None for w, n in
    ...  (("fp8-block128x128", "fp8"), ("mxfp4", "fp4"), ("nvfp4", "fp4"))]
    [True, True, False]
    >>> engine_weights_refusal("vllm", "fp8", "fp8", get_gpu("a100")) is None
    True
    >>> [engine_weights_refusal(e, w, None, get_gpu("b200")) is None for e, w in
    ...  (("trtllm", "gguf-q4_k_m"), ("trtllm", "nf4"), ("trtllm", "int4-awq"), ("vllm", "gguf-q4_k_m"))]
    [False, False, True, True]
    >>> [engine_weights_refusal("vllm", "nvfp4", "fp4", get_gpu(g), moe=m) is None for g, m in
    ...  (("mi355x", True), ("mi355x", False), ("b200", True))]
    [False, True, True]
    >>> engine_weights_refusal("vllm", "nvfp4", "fp4", get_gpu("mi355x"), "default", moe=True).split(":")[0]
    'the default engine (vLLM) with nvfp4 weights on mi355x'
    """
    if engine in ("vllm", "sglang") and weights == "nvfp4" and moe and gpu.vendor == "AMD":
        named = "vLLM" if engine == "vllm" else "SGLang"
        chosen = (f"the default engine ({named})" if source == "default" else  # never an --engine nobody typed
                f"{'--recipe' if source == 'recipe' else '--engine'} {engine}")
        return (said("{chosen} with nvfp4 weights on {gpu_name}: on AMD GPUs {named} reads an NVFP4 checkpoint "
                     "through Petit, whose kernels take linear layers only, not a mixture of experts' fused layers",
                     chosen=chosen, gpu_name=gpu.name, named=named))
    option = "--recipe trtllm" if source == "recipe" else "--engine trtllm"
    if engine == "trtllm" and (weights.startswith("gguf-") or weights.startswith("nf4")):
        kind = "GGUF file" if weights.startswith("gguf-") else "bitsandbytes NF4 checkpoint"
        return (said("{option} with {weights} weights: TensorRT-LLM loads no {kind} (its quantization recipes are "
                     "FP8, FP4, INT4 AWQ and GPTQ, INT8 weight-only and SmoothQuant)", option=option, weights=weights,
                     kind=kind))
    if engine != "trtllm" or native is None:
        return None
    if native == "fp8":
        why = None if gpu.fp8_hardware else said("FP8 weights only on GPUs with FP8 tensor cores")
    elif weights == "nvfp4":
        why = None if "NVFP4" in gpu.fp4_formats else said("NVFP4 weights on Blackwell GPUs only")
    elif weights == "mxfp4":
        major = (gpu.compute_capability or "0").split(".")[0]
        why = None if "MXFP4" in gpu.fp4_formats or (major.isdigit() and int(major) >= 9) else (
            said("MXFP4 weights on Hopper and Blackwell GPUs only"))
    else:
        why = None
    return None if why is None else said("{option} with {weights} weights: TensorRT-LLM runs {why}, not {gpu}",
                                         option=option, weights=weights, why=why, gpu=gpu.name)


def resolve_engine(engine: str | None, recipe: str | None = None) -> Engine:
    """The serving engine to size for: the one given (an unknown one is refused by the planner's validation with
    one line), else the engine of the launch asked for (``--recipe trtllm``, ``--recipe sglang``), else vLLM's (every
    face resolves it the same way).

    >>> resolve_engine(None), resolve_engine(None, "trtllm"), resolve_engine("vllm", "trtllm"), resolve_engine(None, "sglang")
    ('vllm', 'trtllm', 'vllm', 'sglang')
    """
    if engine is not None:
        return cast(Engine, engine)
    return _recipe_engine(recipe) or "vllm"


def _recipe_engine(recipe: str | None) -> Engine | None:
    """The serving engine a launch recipe runs (``trtllm``, ``sglang``), None for the others (vLLM's is the default)."""
    key = recipe.strip().lower() if recipe is not None else None
    return "trtllm" if key == "trtllm" else "sglang" if key == "sglang" else None


def engine_source(engine: str | None, recipe: str | None = None) -> EngineSource:
    """How :func:`resolve_engine` chose the engine for these options (the workload's ``engine_source``).

    >>> engine_source("vllm"), engine_source(None), engine_source(None, "trtllm"), engine_source(None, "sglang")
    ('given', 'default', 'recipe', 'recipe')
    """
    if engine is not None:
        return "given"
    return "recipe" if _recipe_engine(recipe) is not None else "default"


TRAINING_RECIPES: tuple[str, ...] = ("torchrun-fsdp", "deepspeed", "accelerate")
"""The training launch recipes (``anchorgpu.recipes`` writes these kinds): each runs on a PyTorch-native stack (FSDP,
DeepSpeed ZeRO, accelerate), so a plan that asks for one is timed as such (:func:`resolve_train_stack`)."""


def resolve_train_stack(stack: str | None, recipe: str | None = None, task: str | None = None) -> TrainStack:
    """The training stack to time: the one given (an unknown one is refused by the planner's validation with one
    line), else PyTorch-native when the launch asked for is one (``--recipe torchrun-fsdp``, ``deepspeed`` or
    ``accelerate``) or the task is QLoRA (its bitsandbytes 4-bit layers run in PyTorch, through PEFT), else
    Megatron-Core, what the constants are fitted on (every face resolves it the same way).

    >>> resolve_train_stack(None), resolve_train_stack(None, "torchrun-fsdp"), resolve_train_stack("megatron", "deepspeed")
    ('megatron', 'pytorch', 'megatron')
    >>> resolve_train_stack(None, task="qlora"), resolve_train_stack(None, task="lora")
    ('pytorch', 'megatron')
    """
    if stack is not None:
        return cast(TrainStack, stack)
    pytorch = (recipe is not None and recipe.strip().lower() in TRAINING_RECIPES) or task == "qlora"
    return "pytorch" if pytorch else "megatron"


def launches_stages(recipe: str | None) -> bool:
    """Whether the launch asked for can run pipeline stages: not the training recipes (``torchrun-fsdp``, ``deepspeed``,
    ``accelerate``), whose configs have no pipeline setting (:mod:`anchorgpu.recipes.training` refuses PP > 1), so a
    plan asking for one chooses its layout with PP 1 (``Workload.launch_stages``).

    >>> launches_stages(None), launches_stages("deepspeed"), launches_stages("Accelerate"), launches_stages("skypilot")
    (True, False, False, True)
    """
    return recipe is None or recipe.strip().lower() not in TRAINING_RECIPES


def launches_tp_cp(recipe: str | None) -> bool:
    """Whether the launch asked for can run tensor and context parallelism: not ``deepspeed`` (``ds_config.json`` has
    no such size; :mod:`anchorgpu.recipes.training` refuses TP or CP > 1 there), so a plan asking for it chooses its
    layout with TP 1 and CP 1 (``Workload.launch_tp_cp``).

    >>> launches_tp_cp(None), launches_tp_cp("deepspeed"), launches_tp_cp("accelerate"), launches_tp_cp("torchrun-fsdp")
    (True, False, True, True)
    """
    return recipe is None or recipe.strip().lower() != "deepspeed"


def launches_accelerate(recipe: str | None) -> bool:
    """Whether the launch asked for is accelerate's (``Workload.launch_accelerate``), whose memory differs from the
    other launches' where its DeepSpeed plugin runs FP8: the plugin's keys leave ``reduce_bucket_size`` at DeepSpeed's
    default. Its FSDP2 units are torchtitan's ``apply_fsdp`` units, as for every launch: ``--recipe accelerate`` writes
    ``fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP`` (:mod:`anchorgpu.recipes.training`), and accelerate 1.15.0's
    ``utils/fsdp_utils.py`` ``fsdp2_prepare_model`` calls ``fully_shard`` on each ``_no_split_modules`` block, on the
    embedding and on [final norm, head] (not resharded after forward), then on the model.

    >>> launches_accelerate(None), launches_accelerate("torchrun-fsdp"), launches_accelerate("Accelerate")
    (False, False, True)
    """
    return recipe is not None and recipe.strip().lower() == "accelerate"


def launches_deepspeed(recipe: str | None) -> bool:
    """Whether the launch asked for is the deepspeed recipe's (``Workload.launch_deepspeed``), whose ZeRO-3 holds a
    reduce bucket FSDP2 has not: DeepSpeed 0.19.8 ``runtime/zero/stage3.py`` ``DeepSpeedZeroOptimizer_Stage3.__init__``
    ("# IPG") allocates ``torch.empty(self.reduce_bucket_size, dtype=dtype)`` per communication dtype for the whole run
    when ``contiguous_gradients`` is on (the recipe's ``ds_config.json``). Accelerate's ZeRO-3 launches run FSDP2.

    >>> launches_deepspeed(None), launches_deepspeed("accelerate"), launches_deepspeed("DeepSpeed")
    (False, False, True)
    """
    return recipe is not None and recipe.strip().lower() == "deepspeed"


def launches_torchrun_fsdp(recipe: str | None) -> bool:
    """Whether the launch asked for is the torchrun-fsdp recipe's (``Workload.launch_torchrun_fsdp``), whose ZeRO-1/2 is
    FSDP2 without resharding after forward (``anchorgpu_train.json``'s ``fsdp.reshard_after_forward`` false, the
    parameters kept in fp32 under mixed precision): the sharded gradients in fp32 and every unit's 16-bit weights kept
    gathered from forward into backward (torch ``_fsdp_param_group.py`` ``FSDPParamGroup.reshard``: in the forward
    state it returns without resharding; ``post_backward`` reshards each unit, ``reshard_after_backward``), not the
    plan's DeepSpeed ZeRO-1/2.

    >>> launches_torchrun_fsdp(None), launches_torchrun_fsdp("accelerate"), launches_torchrun_fsdp("Torchrun-FSDP")
    (False, False, True)
    """
    return recipe is not None and recipe.strip().lower() == "torchrun-fsdp"


class LaunchReach(TypedDict):
    """What :func:`launch_reach` sets on a workload."""

    launch_stages: bool
    launch_tp_cp: bool
    launch_accelerate: bool
    launch_deepspeed: bool
    launch_torchrun_fsdp: bool


def launch_reach(recipe: str | None) -> LaunchReach:
    """The :class:`~anchorgpu.planner.inputs.Workload` fields that hold the layout to what the launch asked for can
    run (:func:`launches_stages`, :func:`launches_tp_cp`) and count what it holds (:func:`launches_accelerate`,
    :func:`launches_deepspeed`, :func:`launches_torchrun_fsdp`), for every face that builds a workload from a
    ``recipe``.

    >>> launch_reach("deepspeed")["launch_deepspeed"], launch_reach("torchrun-fsdp")["launch_torchrun_fsdp"]
    (True, True)
    """
    return LaunchReach(launch_stages=launches_stages(recipe), launch_tp_cp=launches_tp_cp(recipe),
                       launch_accelerate=launches_accelerate(recipe), launch_deepspeed=launches_deepspeed(recipe),
                       launch_torchrun_fsdp=launches_torchrun_fsdp(recipe))


def check_engine_caps(max_num_seqs: int | None, max_num_batched_tokens: int | None, engine: str = "vllm") -> None:
    """Refuse a sequence cap above the token budget a user gave with it: vLLM's scheduler refuses to start that way
    (``SchedulerConfig._verify_args``). Without a budget, :func:`engine_limits` raises the default one to the cap.

    >>> check_engine_caps(9000, 8192)
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: max-num-seqs 9,000 exceeds max-num-batched-tokens 8,192: vLLM refuses to start that way
    """
    if engine != "vllm":  # TensorRT-LLM's max_batch_size and max_num_tokens, SGLang's max_running_requests and
        return  # chunked_prefill_size, are independent
    if max_num_seqs is not None and max_num_batched_tokens is not None and max_num_seqs > max_num_batched_tokens:
        raise InvalidWorkload(said("max-num-seqs {max_num_seqs:,} exceeds max-num-batched-tokens "
                                   "{max_num_batched_tokens:,}: vLLM refuses to start that way",
                                   max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens))
