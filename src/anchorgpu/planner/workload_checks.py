"""The workload's fields checked for :func:`~anchorgpu.planner.plan.plan`: counts, task, engine, precision,
optimizer and its state, activation offload, LoRA targets, media. Pure.

Each refusal is one :class:`~anchorgpu.errors.InvalidWorkload` line naming the value.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner import memory as mm
from anchorgpu.planner._frozen import field_getter
from anchorgpu.planner.inputs import (
    ALL_LORA_TARGETS,
    CROSS_ENTROPY_IMPLS,
    ENGINES,
    KV_CACHE_AUTO,
    OPTIMIZER_STATES,
    OPTIMIZERS,
    RECOMPUTES,
    TASKS,
    TRAIN_PRECISIONS,
    TRAIN_STACKS,
    TRAINING_TASKS,
    Workload,
    task_hint,
)
from anchorgpu.planner.media import validate_media
from anchorgpu.units import fmt_given

__all__ = ["LORA_OPTIONS", "MAX_NETWORK_GBIT_PER_S_PER_GPU", "SERVING_OPTIONS", "TRAINING_OPTIONS",
           "check_activation_offload_layout", "check_counts", "check_diffusion_options", "counts_checker",
           "check_kv_cache_task", "check_network", "check_positive", "check_task_options", "planned_task",
           "validate_workload"]


def check_positive(name: str, value: int | None) -> None:
    """Refuse anything but a whole number >= 1; ``name`` is the field (micro_batch), shown as the CLI's flag
    (``--micro-batch``; ``seq_tokens`` is ``--seq``), which the API's words turn back into its field.

    >>> check_positive("virtual_stages", 0)
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --virtual-stages 0: must be a whole number of at least 1
    """
    if value is None or (type(value) is int and value >= 1):  # the usual case, decided without isinstance
        return
    if (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        flag = _COUNT_FLAGS.get(name) or "--" + name.replace("_", "-")
        raise InvalidWorkload(said("{flag} {value!r}: must be a whole number of at least 1", flag=flag, value=value))


_COUNT_FLAGS = {"context_tokens": "--context", "seq_tokens": "--seq", "global_batch_tokens": "--global-batch",
                "prompt_tokens": "--prompt"}
"""The counts whose CLI flag is not the field's name with dashes (the others are: ``--micro-batch``, ``--cp``)."""


_WORKLOAD_COUNTS = ("context_tokens", "concurrency", "micro_batch", "seq_tokens", "lora_rank", "images",
                    "max_num_batched_tokens", "max_num_seqs", "block_size_tokens", "global_batch_tokens",
                    "prompt_tokens", "output_tokens")

_workload_counts = field_getter(*_WORKLOAD_COUNTS)


def counts_checker(*names: str) -> Callable[[object], bool]:
    """``ok(obj)``: whether each field ``names`` of ``obj`` is None or a whole number of at least 1 (exactly an int: a
    bool is not), :func:`check_counts`'s usual case, as straight-line attribute reads and tests (no tuple of the
    values, no loop); where it says False, :func:`check_counts` finds and names the value to refuse.

    >>> from anchorgpu.planner.inputs import Layout
    >>> ok = counts_checker("tp", "pp")
    >>> ok(Layout(tp=2)), ok(Layout(tp=0)), ok(Layout(pp=True)), ok(Layout(tp=2.0))
    (True, False, False, False)
    """
    if not names or not all(name.isidentifier() and name not in ("obj", "v") for name in names):
        raise ValueError(f"field names expected, not {names!r}")
    lines = ["def ok(obj):"]
    for name in names:
        lines += [f"    v = obj.{name}", "    if v is not None and (type(v) is not int or v < 1):", "        return False"]
    namespace: dict[str, object] = {}
    exec("\n".join([*lines, "    return True"]), namespace)  # generated code, as field_getter's
    ok: Callable[[object], bool] = namespace["ok"]  # type: ignore[assignment]
    return ok


_workload_counts_ok = counts_checker(*_WORKLOAD_COUNTS)

_LORA_TARGETS = frozenset((*ALL_LORA_TARGETS, *mm.FUSED_LORA_TARGETS, *mm.RECURRENT_LORA_TARGETS))


def check_counts(names: tuple[str, ...], values: tuple[int | None, ...]) -> None:
    """:func:`check_positive` on each (name, value); the usual case (each None or an int >= 1) is decided by one
    plain loop before any value is looked at by name."""
    for value in values:
        if value is not None and (type(value) is not int or value < 1):  # exactly int: a bool is refused
            break
    else:
        return
    for name, value in zip(names, values, strict=False):
        check_positive(name, value)


MAX_NETWORK_GBIT_PER_S_PER_GPU = 100_000.0
"""The most server-to-server bandwidth a GPU may be stated to have (``--network-gbit-per-gpu``), Gb/s one direction:
a bound on what is typed, not a figure of any network (one GPU's NIC carries 400-800 Gb/s in 2025-26 clusters)."""


def check_network(gbit_per_s: object, task: str) -> None:
    """Refuse a stated server-to-server bandwidth (``--network-gbit-per-gpu``, Gb/s a GPU, one direction) that is not
    a finite number above 0 and at most :data:`MAX_NETWORK_GBIT_PER_S_PER_GPU`, or that is given for a task without a
    training step (serving and diffusion are timed at the calibration's network).

    >>> check_network(12.5, "train")
    >>> check_network(0.0, "train")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --network-gbit-per-gpu 0: expected a finite number of Gb/s above 0 and at most 100,000
    """
    if isinstance(gbit_per_s, bool) or not isinstance(gbit_per_s, int | float) or not math.isfinite(gbit_per_s) \
            or not 0 < gbit_per_s <= MAX_NETWORK_GBIT_PER_S_PER_GPU:
        raise InvalidWorkload(said("--network-gbit-per-gpu {gbit_per_s}: expected a finite number of Gb/s above 0 "
                                   "and at most {MAX_NETWORK_GBIT_PER_S_PER_GPU:,.0f}",
                                   gbit_per_s=fmt_given(gbit_per_s),
                                   MAX_NETWORK_GBIT_PER_S_PER_GPU=MAX_NETWORK_GBIT_PER_S_PER_GPU))
    if task not in TRAINING_TASKS:
        raise InvalidWorkload(said("--network-gbit-per-gpu {gbit_per_s} times a training step across servers "
                                   "(task train, lora or qlora); task {task} has no training step",
                                   gbit_per_s=fmt_given(gbit_per_s), task=task))


def validate_workload(workload: Workload) -> None:
    if workload.task not in TASKS:
        hint = task_hint(workload.task)  # "serve": did you mean 'inference'? (a synonym is named, not taken)
        if hint:
            raise InvalidWorkload(said("unknown task {task!r}{hint} valid: {TASKS}", task=workload.task, hint=hint,
                                       TASKS=", ".join(TASKS)))
        raise InvalidWorkload(said("unknown task {task!r}; valid: {TASKS}", task=workload.task, TASKS=", ".join(TASKS)))
    if not _workload_counts_ok(workload):  # the usual case passes without a tuple of the values
        check_counts(_WORKLOAD_COUNTS, _workload_counts(workload))
    if workload.gpu_memory_utilization is not None and not 0 < workload.gpu_memory_utilization <= 1:
        fraction = workload.gpu_memory_utilization
        what = (said("a fraction above 0 and at most 1") if math.isfinite(fraction)
                else said("a finite number above 0 and at most 1"))
        raise InvalidWorkload(said("--gpu-memory-utilization {fraction!r}: expected {what}", fraction=fraction,
                                   what=what))
    if workload.network_gbit_per_s_per_gpu is not None:
        check_network(workload.network_gbit_per_s_per_gpu, workload.task)
    if workload.engine != "vllm":  # the default decided by one comparison
        if workload.engine not in ENGINES:
            raise InvalidWorkload(said("--engine {engine!r}: choose {join} or {value}", engine=workload.engine,
                                       join=', '.join(ENGINES[:-1]), value=ENGINES[-1]))
        if workload.task != "inference":  # named by the option that chose it (--recipe sglang on an allocation)
            option = "--recipe" if workload.engine_source == "recipe" else "--engine"
            raise InvalidWorkload(said("{option} {engine} sizes a serving engine (task inference), not task {task}",
                                       option=option, engine=workload.engine, task=workload.task))
    if workload.recompute is not None and workload.recompute not in RECOMPUTES:
        raise InvalidWorkload(said("unknown recompute {recompute!r}; valid: {RECOMPUTES}",
                                   recompute=workload.recompute, RECOMPUTES=', '.join(RECOMPUTES)))
    if workload.train_precision not in TRAIN_PRECISIONS:
        raise InvalidWorkload(said("--train-precision {train_precision!r}: choose {TRAIN_PRECISIONS}",
                                   train_precision=workload.train_precision,
                                   TRAIN_PRECISIONS=', '.join(TRAIN_PRECISIONS)))
    if workload.task == "qlora" and workload.train_precision in ("fp8", "fp4"):
        # bitsandbytes' Linear4bit casts its input to the compute dtype and runs bnb.matmul_4bit, which dequantizes the
        # NF4 weights to that 16/32-bit dtype (bitsandbytes-foundation/bitsandbytes@005a63c2 bitsandbytes/nn/modules.py,
        # Linear4bit.forward): no FP8 or FP4 matmul of a QLoRA base exists to plan
        raise InvalidWorkload(f"--train-precision {workload.train_precision} with --task qlora: QLoRA's 4-bit base "
                              "weights are dequantized to 16-bit for every matmul (bitsandbytes Linear4bit), so nothing "
                              "runs them in " + workload.train_precision.upper() + "; use mixed or bf16-true, or "
                              "--task lora for " + workload.train_precision.upper())
    if workload.train_stack != "megatron" and workload.train_stack not in TRAIN_STACKS:
        raise InvalidWorkload(said("--train-stack {train_stack!r}: choose {TRAIN_STACKS}",
                                   train_stack=workload.train_stack, TRAIN_STACKS=' or '.join(TRAIN_STACKS)))
    if workload.cross_entropy is not None and workload.cross_entropy not in CROSS_ENTROPY_IMPLS:
        raise InvalidWorkload(said("--cross-entropy {cross_entropy!r}: choose {CROSS_ENTROPY_IMPLS}",
                                   cross_entropy=workload.cross_entropy,
                                   CROSS_ENTROPY_IMPLS=', '.join(CROSS_ENTROPY_IMPLS)))
    if workload.cross_entropy is not None and workload.task != "train":
        raise InvalidWorkload(f"--cross-entropy {workload.cross_entropy} sets full training's loss (--task train), not "
                              f"task {workload.task}" + ("; fine-tuning keeps its measured loss terms"
                                                         if workload.task in ("lora", "qlora") else ""))
    _check_activation_offload(workload)
    if workload.optimizer not in OPTIMIZERS:
        raise InvalidWorkload(said("unknown optimizer {optimizer!r}; valid: {OPTIMIZERS}",
                                   optimizer=workload.optimizer, OPTIMIZERS=', '.join(OPTIMIZERS)))
    if workload.optimizer_state != "fp32":
        _check_optimizer_state(workload)
    targets = workload.lora_targets
    if targets is not ALL_LORA_TARGETS and (not targets or not _LORA_TARGETS.issuperset(targets)):  # the default: valid
        raise InvalidWorkload(
            said("--lora-targets {value}: choose from {join}", value=','.join(workload.lora_targets) or '(none)',
                 join=','.join((*ALL_LORA_TARGETS, *mm.FUSED_LORA_TARGETS, *mm.RECURRENT_LORA_TARGETS))))
    if workload.resolution is not None and (len(workload.resolution) != 2 or min(workload.resolution) < 8):
        shown = "x".join(map(str, workload.resolution)) if isinstance(workload.resolution, tuple) else \
            repr(workload.resolution)  # as typed (1x1), not Python's tuple "(1, 1)" (stop 61)
        raise InvalidWorkload(said("--resolution {shown}: expected WIDTHxHEIGHT in pixels, each at least 8",
                                   shown=shown))
    validate_media(None, workload)
    if workload.task != "inference" and (workload.images_per_request is not None or workload.image_resolution is not None):
        raise InvalidWorkload(said("--images-per-request/--image-resolution size serving requests (task "
                                   "inference), not task {task}", task=workload.task))


def check_kv_cache_task(kv_cache: str | None, task: str) -> None:
    """Refuse a KV-cache dtype asked for a task that keeps no KV cache (training, fine-tuning, diffusion): it would
    change nothing but the plan's precision and its warnings (an NVFP4 or FP8 cache's kernel and quality checks). The
    faces call it with the value as the user gave it (None or :data:`~anchorgpu.planner.inputs.KV_CACHE_AUTO`: not
    asked); ``plan()`` refuses the quantized ones itself (it re-plans its own resolved precision, bf16 for training).

    >>> check_kv_cache_task("fp8", "inference"), check_kv_cache_task(None, "train")
    (None, None)
    >>> check_kv_cache_task("nvfp4", "train")
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --kv-cache nvfp4 sizes a serving engine's KV cache (task inference); task train keeps none
    """
    if kv_cache is None or kv_cache == KV_CACHE_AUTO or task == "inference" or task not in TASKS:
        return  # an unknown task is refused by validate_workload, naming it
    raise InvalidWorkload(said("--kv-cache {kv_cache} sizes a serving engine's KV cache (task inference); task "
                               "{task} keeps none", kv_cache=kv_cache, task=task))


TRAINING_OPTIONS: tuple[str, ...] = ("train_precision", "train_stack", "recompute", "micro_batch", "seq", "global_batch",
                                    "optimizer", "optimizer_state", "tokens", "train_tokens", "tp_overlap",
                                    "network_gbit_per_gpu")
"""Options that size or time a training step (task train, lora or qlora) and mean nothing to serving or diffusion, by
their field names (the API's; the CLI's flags are the same with dashes, ``train_tokens`` is ``--tokens``). ``seq`` is
the training sequence: serving reads ``context`` instead. The layout's training options (``--zero``, ``--fsdp``,
``--cp``, ``--virtual-stages``, ``--pipeline-layout``, ``--sequence-parallel``, ``--ep-overlap``, ``--offload``) and
``--cross-entropy``, ``--offload-activations`` are refused for other tasks where they are resolved."""
LORA_OPTIONS: tuple[str, ...] = ("lora_rank", "lora_targets")
"""Options of LoRA's adapters (task lora or qlora): full training and serving have none."""
SERVING_OPTIONS: tuple[str, ...] = ("context", "concurrency", "prompt", "output_tokens", "engine", "max_num_seqs",
                                   "max_num_batched_tokens", "gpu_memory_utilization", "min_tokens_per_s",
                                   "min_tokens_per_s_per_user", "max_ttft_s", "lower_precision")
"""Options of a language model's serving engine and its requests (task inference). ``--kv-cache`` and
``--images-per-request``/``--image-resolution`` are refused for other tasks by their own checks. Shared by every task
(not listed): the model, GPUs and layout counts, ``--weights``, ``--allow-long-context`` (the serving context or the
training sequence), ``--mfu``/``--mbu`` (a training step's optimizer update reads memory at the MBU too), the
overheads and ``--recipe`` (checked by :func:`anchorgpu.recipes.check_kind`)."""
_FLAGS = {"tokens": "--tokens", "train_tokens": "--tokens", "min_tokens_per_s": "--min-tokens-per-s-per-user",
          "min_tokens_per_s_per_user": "--min-tokens-per-s-per-user"}


def _shown(name: str, value: object) -> str:
    """The option as the user gave it: ``--micro-batch 2``, ``--tp-overlap`` (a switch), ``--lora-targets q,v``."""
    flag = _FLAGS.get(name) or "--" + name.replace("_", "-")
    if value is True:
        return flag
    if isinstance(value, (list, tuple)):
        value = ",".join(map(str, value))
    return f"{flag} {fmt_given(value) if isinstance(value, int | float) else value}"  # 1e9, 4096: with separators


def planned_task(task: str, model: object = None) -> str:
    """The task a request is planned as: a diffusion pipeline asked for with the default task (inference) is planned
    as task diffusion (``plan`` says so), so its options are checked as that task's; ``model`` None (not loaded yet):
    the task as given.

    >>> from anchorgpu.architectures import load_model
    >>> planned_task("inference", load_model("sdxl-base-1.0")), planned_task("inference", None)
    ('diffusion', 'inference')
    """
    from anchorgpu.architectures.spec import DiffusionPipelineSpec

    return "diffusion" if task == "inference" and isinstance(model, DiffusionPipelineSpec) else task


def check_task_options(task: str, options: dict[str, object]) -> None:
    """Refuse an option the task has no use for, where it would be dropped in silence: training's options
    (:data:`TRAINING_OPTIONS`) for serving or diffusion, LoRA's (:data:`LORA_OPTIONS`) for any other task, serving's
    (:data:`SERVING_OPTIONS`) for training or diffusion; then a KV-cache dtype, as :func:`check_kv_cache_task`.
    ``options`` maps field names to the values *as the user gave them*: ``None`` (or ``False`` for a switch) is not
    given, so each face keeps its options' defaults out of it (the planner applies them: :class:`Workload`). Every
    face calls it (CLI ``plan`` and ``recommend``, ``POST /v1/plan`` and ``/v1/recommend``, the planner pages);
    names it does not know are ignored.

    >>> check_task_options("train", {"micro_batch": 2, "context": None, "tp_overlap": False})
    >>> check_task_options("inference", {"train_precision": "fp8"})
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --train-precision fp8 applies to training (task train, lora or qlora); task inference has no training step
    >>> check_task_options("lora", {"context": 8192})
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --context 8,192 applies to serving a language model (task inference); task lora serves no requests (its sequence is --seq)
    """
    if task not in TASKS:
        return  # refused by validate_workload, naming it
    for name, value in options.items():
        if value is None or value is False:
            continue
        if name in TRAINING_OPTIONS and task not in TRAINING_TASKS:
            hint = said(" (the serving length is --context)") if name == "seq" and task == "inference" else ""
            raise InvalidWorkload(said("{name} applies to training (task train, lora or qlora); task {task} has "
                                       "no training step{hint}", name=_shown(name, value), task=task, hint=hint))
        if name in LORA_OPTIONS and task not in ("lora", "qlora"):
            raise InvalidWorkload(said("{name} sets LoRA's adapters (task lora or qlora); task {task} has none",
                                       name=_shown(name, value), task=task))
        if name in SERVING_OPTIONS and task != "inference":
            tail = (said("task {task} generates images (--images, --resolution)", task=task) if task == "diffusion"
                    else said("task {task} serves no requests (its sequence is --seq)", task=task) if name == "context"
                    else said("task {task} serves no requests", task=task))
            raise InvalidWorkload(said("{name} applies to serving a language model (task inference); {tail}",
                                       name=_shown(name, value), tail=tail))
    kv = options.get("kv_cache")
    if isinstance(kv, str):
        check_kv_cache_task(kv, task)


def check_diffusion_options(model: object, *, images: int | None, resolution: object, vae_tiling: bool | None,
                            flags: bool) -> None:
    """Refuse a diffusion pipeline's options (images per batch, output resolution, VAE tiling) given for a language
    model, where ``plan`` dropped them in silence (``recommend`` refused them): a vision model's images are sized by
    ``images_per_request``/``image_resolution``. ``images`` is given when it is not its default, 1; ``flags``: name
    them as the CLI's flags (else as the API's fields). ``model`` is the loaded model; a diffusion pipeline passes.

    >>> from anchorgpu.architectures import load_model
    >>> check_diffusion_options(load_model("sdxl-base-1.0"), images=4, resolution=None, vae_tiling=False, flags=True)
    >>> check_diffusion_options(load_model("qwen2.5-vl-7b"), images=2, resolution=None, vae_tiling=False, flags=True)
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --images/--resolution/--vae-tiling apply to diffusion pipelines; qwen2.5-vl-7b is a language model (a vision model's images: --images-per-request, --image-resolution)
    """
    from anchorgpu.architectures.spec import ModelSpec

    if not isinstance(model, ModelSpec) or ((images is None or images == 1) and resolution is None and not vae_tiling):
        return
    given, vision = (("--images/--resolution/--vae-tiling", "--images-per-request, --image-resolution") if flags
                     else ("images, resolution and vae_tiling", "images_per_request, image_resolution"))
    raise InvalidWorkload(said("{given} apply to diffusion pipelines; {model_name} is a language model (a vision "
                               "model's images: {vision})", given=given, model_name=model.name, vision=vision))


def _check_optimizer_state(workload: Workload) -> None:
    """Refuse an ``--optimizer-state`` other than fp32 where it names nothing the plan holds: an unknown value, a task
    other than full training (LoRA's adapters keep the state the precision says), an optimizer other than AdamW (the
    precision-aware optimizer and Apex's distributed Adam are Adam only), or bf16-true training, which keeps no master
    copy and its moments in bf16 already."""
    state = workload.optimizer_state
    if state not in OPTIMIZER_STATES:
        raise InvalidWorkload(said("--optimizer-state {state!r}: choose {OPTIMIZER_STATES}", state=state,
                                   OPTIMIZER_STATES=', '.join(OPTIMIZER_STATES)))
    if workload.task != "train":
        raise InvalidWorkload(said("--optimizer-state {state} sets full training's AdamW state (--task train), "
                                   "not task {task}", state=state, task=workload.task))
    if workload.optimizer != "adamw":
        raise InvalidWorkload(said("--optimizer-state {state} is AdamW's state (Megatron-Core's precision-aware "
                                   "optimizer, Apex's distributed Adam), not --optimizer {optimizer}", state=state,
                                   optimizer=workload.optimizer))
    if workload.train_precision == "bf16-true":
        raise InvalidWorkload(said("--optimizer-state {state} with --train-precision bf16-true: bf16-true already "
                                   "keeps no master copy and bf16 moments; use one or the other", state=state))


def _check_activation_offload(workload: Workload) -> None:
    """Refuse ``--offload-activations N`` where Megatron-Core refuses CPU activation offloading
    (``TransformerConfig.__post_init__``: not with activation recompute; pipeline stages are checked with the layout,
    :func:`check_activation_offload_layout`)."""
    n = workload.offload_activation_layers
    if n == 0:
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidWorkload(said("--offload-activations {n!r}: a whole number of layers, 0 or more", n=n))
    if workload.task != "train":
        raise InvalidWorkload(said("--offload-activations offloads full training's activations (--task train), "
                                   "not task {task}", task=workload.task))
    if workload.train_stack != "megatron":
        raise InvalidWorkload(said("--offload-activations is Megatron-Core's CPU activation offloading; the "
                                   "PyTorch-native stack has none"))
    if workload.recompute not in (None, "none"):
        raise InvalidWorkload(said("--offload-activations with --recompute {recompute}: Megatron-Core offloads "
                                   "activations only when none are recomputed", recompute=workload.recompute))


def check_activation_offload_layout(layers: int, offload_layers: int, pp: int) -> None:
    """Refuse an activation offload the layout cannot run: Megatron-Core has no CPU offloading with pipeline stages,
    and it keeps at least one layer's activations on the GPU (``cpu_offloading_num_layers < num_layers``)."""
    if offload_layers and pp > 1:
        raise InvalidWorkload(said("--offload-activations with pp {pp}: Megatron-Core offloads activations only "
                                   "without pipeline stages (--pp 1)", pp=pp))
    if offload_layers >= layers:
        raise InvalidWorkload(said("--offload-activations {offload_layers}: at most {value} of the model's "
                                   "{layers} layers (one stays on the GPU)", offload_layers=offload_layers,
                                   value=layers - 1, layers=layers))
