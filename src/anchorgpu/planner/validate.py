"""Validation and defaults for :func:`~anchorgpu.planner.plan.plan`: the workload's fields, the weight format
actually planned and the layout resolved to whole counts (``gpus == tp · cp · pp · dp``). Pure.

Each refusal is one :class:`~anchorgpu.errors.InvalidWorkload` line naming the value; each default used is
appended to the caller's ``assumptions``.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any

from anchorgpu.architectures.quantization import describe_shipped
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner import memory as mm
from anchorgpu.planner.formats import WeightFormat, format_for_model, get_format, shipped_format
from anchorgpu.planner.inputs import (
    ALL_LORA_TARGETS,
    CROSS_ENTROPY_IMPLS,
    ENGINES,
    KV_CACHE_DTYPES,
    OFFLOADS,
    OPTIMIZER_STATES,
    OPTIMIZERS,
    RECOMPUTES,
    TASKS,
    TRAIN_PRECISIONS,
    TRAIN_STACKS,
    Layout,
    PrecisionPlan,
    Workload,
    default_seq_tokens,
)
from anchorgpu.planner.media import validate_media
from anchorgpu.planner.pipeline_layout import PipelineLayout, parse_pipeline_layout
from anchorgpu.planner.result import ResolvedLayout
from anchorgpu.planner.sequence_parallel import resolve_sequence_parallel
from anchorgpu.planner.speed.pipeline import counts_embedding_and_loss
from anchorgpu.units import require_whole_gpus

__all__ = ["GPUS_PER_SERVER", "TRAIN_FORMATS", "check_activation_offload_layout", "check_layout_counts", "check_positive",
           "check_tp", "default_tp",
           "resolve_format", "resolve_layout", "tp_is_valid", "validate_workload"]

GPUS_PER_SERVER = 8
TRAIN_FORMATS = ("bf16", "fp16", "fp32")


def check_positive(name: str, value: int | None) -> None:
    """Refuse anything but a whole number >= 1; ``name`` is the field (micro_batch), shown as the flag (micro-batch)."""
    if value is None or (type(value) is int and value >= 1):  # the usual case, decided without isinstance
        return
    if (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidWorkload(f"{name.replace('_', '-')}={value!r}: must be a whole number of at least 1")


_WORKLOAD_COUNTS = ("context_tokens", "concurrency", "micro_batch", "seq_tokens", "lora_rank", "images",
                    "max_num_batched_tokens", "max_num_seqs", "block_size_tokens", "global_batch_tokens",
                    "prompt_tokens", "output_tokens")
_workload_counts = attrgetter(*_WORKLOAD_COUNTS)
_LAYOUT_COUNTS = ("tp", "pp", "dp", "ep", "cp", "virtual_stages")
_layout_counts = attrgetter(*_LAYOUT_COUNTS)
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


def validate_workload(workload: Workload) -> None:
    if workload.task not in TASKS:
        raise InvalidWorkload(f"unknown task {workload.task!r}; valid: {', '.join(TASKS)}")
    check_counts(_WORKLOAD_COUNTS, _workload_counts(workload))
    if not 0 < workload.gpu_memory_utilization <= 1:
        raise InvalidWorkload(
            f"gpu-memory-utilization={workload.gpu_memory_utilization}: must be above 0 and at most 1")
    if workload.engine != "vllm":  # the default decided by one comparison
        if workload.engine not in ENGINES:
            raise InvalidWorkload(f"--engine {workload.engine!r}: choose {' or '.join(ENGINES)}")
        if workload.task != "inference":
            raise InvalidWorkload(f"--engine {workload.engine} sizes a serving engine (task inference), not task "
                                  f"{workload.task}")
    if workload.recompute is not None and workload.recompute not in RECOMPUTES:
        raise InvalidWorkload(f"unknown recompute {workload.recompute!r}; valid: {', '.join(RECOMPUTES)}")
    if workload.train_precision not in TRAIN_PRECISIONS:
        raise InvalidWorkload(f"--train-precision {workload.train_precision!r}: choose {', '.join(TRAIN_PRECISIONS)}")
    if workload.train_stack != "megatron" and workload.train_stack not in TRAIN_STACKS:
        raise InvalidWorkload(f"--train-stack {workload.train_stack!r}: choose {' or '.join(TRAIN_STACKS)}")
    if workload.cross_entropy is not None and (workload.cross_entropy not in CROSS_ENTROPY_IMPLS or workload.task != "train"):
        raise InvalidWorkload(f"--cross-entropy {workload.cross_entropy!r}: one of {', '.join(CROSS_ENTROPY_IMPLS)}, and "
                              f"for full training (--task train; fine-tuning keeps its measured loss terms)")
    _check_activation_offload(workload)
    if workload.optimizer not in OPTIMIZERS:
        raise InvalidWorkload(f"unknown optimizer {workload.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
    if workload.optimizer_state != "fp32":
        _check_optimizer_state(workload)
    targets = workload.lora_targets
    if targets is not ALL_LORA_TARGETS and (not targets or not _LORA_TARGETS.issuperset(targets)):  # the default: valid
        raise InvalidWorkload(
            f"lora-targets {','.join(workload.lora_targets) or '(none)'}: choose from "
            f"{','.join((*ALL_LORA_TARGETS, *mm.FUSED_LORA_TARGETS, *mm.RECURRENT_LORA_TARGETS))}")
    if workload.resolution is not None and (len(workload.resolution) != 2 or min(workload.resolution) < 8):
        raise InvalidWorkload(f"resolution {workload.resolution!r}: expected WIDTHxHEIGHT in pixels, each >= 8")
    validate_media(None, workload)
    if workload.task != "inference" and (workload.images_per_request or workload.image_resolution is not None):
        raise InvalidWorkload("--images-per-request/--image-resolution size serving requests (task inference), "
                              f"not task {workload.task}")


def _check_optimizer_state(workload: Workload) -> None:
    """Refuse an ``--optimizer-state`` other than fp32 where it names nothing the plan holds: an unknown value, a task
    other than full training (LoRA's adapters keep the state the precision says), an optimizer other than AdamW (the
    precision-aware optimizer and Apex's distributed Adam are Adam only), or bf16-true training, which keeps no master
    copy and its moments in bf16 already."""
    state = workload.optimizer_state
    if state not in OPTIMIZER_STATES:
        raise InvalidWorkload(f"--optimizer-state {state!r}: choose {', '.join(OPTIMIZER_STATES)}")
    if workload.task != "train":
        raise InvalidWorkload(f"--optimizer-state {state} sets full training's AdamW state (--task train), not task "
                              f"{workload.task}")
    if workload.optimizer != "adamw":
        raise InvalidWorkload(f"--optimizer-state {state} is AdamW's state (Megatron-Core's precision-aware optimizer, "
                              f"Apex's distributed Adam), not --optimizer {workload.optimizer}")
    if workload.train_precision == "bf16-true":
        raise InvalidWorkload(f"--optimizer-state {state} with --train-precision bf16-true: bf16-true already keeps "
                              "no master copy and bf16 moments; use one or the other")


def _check_activation_offload(workload: Workload) -> None:
    """Refuse ``--offload-activations N`` where Megatron-Core refuses CPU activation offloading
    (``TransformerConfig.__post_init__``: not with activation recompute; pipeline stages are checked with the layout,
    :func:`check_activation_offload_layout`)."""
    n = workload.offload_activation_layers
    if n == 0:
        return
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InvalidWorkload(f"--offload-activations {n!r}: a whole number of layers, 0 or more")
    if workload.task != "train":
        raise InvalidWorkload(f"--offload-activations offloads full training's activations (--task train), not task "
                              f"{workload.task}")
    if workload.train_stack != "megatron":
        raise InvalidWorkload("--offload-activations is Megatron-Core's CPU activation offloading; the PyTorch-native "
                              "stack has none")
    if workload.recompute not in (None, "none"):
        raise InvalidWorkload(f"--offload-activations with --recompute {workload.recompute}: Megatron-Core offloads "
                              "activations only when none are recomputed")


def check_activation_offload_layout(layers: int, offload_layers: int, pp: int) -> None:
    """Refuse an activation offload the layout cannot run: Megatron-Core has no CPU offloading with pipeline stages,
    and it keeps at least one layer's activations on the GPU (``cpu_offloading_num_layers < num_layers``)."""
    if offload_layers and pp > 1:
        raise InvalidWorkload(f"--offload-activations with pp {pp}: Megatron-Core offloads activations only without "
                              "pipeline stages (--pp 1)")
    if offload_layers >= layers:
        raise InvalidWorkload(f"--offload-activations {offload_layers}: at most {layers - 1} of the model's {layers} "
                              "layers (one stays on the GPU)")


_FORMATS: dict[tuple[int, str, str | None, str], tuple[object, WeightFormat, tuple[str, ...]]] = {}


def resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    """The weight format planned (the checkpoint's, the task's default, or ``precision.weights``), its
    assumption appended. It depends on the (frozen) model, the task and the two dtypes only: memoised on them,
    so the plans of a sweep or a layout search resolve it once (a refusal is raised each time, never kept)."""
    key = (id(model), workload.task, precision.weights, precision.kv_cache)
    fmt: WeightFormat = _memo_with_lines(_FORMATS, key, model, assumptions,
                                         lambda lines: _resolve_format(model, workload, precision, lines))
    return fmt


def _memo_with_lines(table: dict[Any, tuple[Any, Any, tuple[str, ...]]], key: Any, model: object,
                     assumptions: list[str], compute: Callable[[list[str]], Any], *, checked: bool = True) -> Any:
    """``compute(lines)`` memoised in ``table`` on ``key`` for the frozen ``model`` (held by identity), with the
    assumption lines it appended, which every later hit appends again; a refusal is raised each time, never kept.
    With ``checked=False`` the key may hold a value no dict can (a list given for a count): it is then computed
    (and refused) each time."""
    try:
        hit = table.get(key)
    except TypeError:
        if checked:
            raise
        hit = key = None
    if hit is not None and hit[0] is model:
        assumptions += hit[2]
        return hit[1]
    lines: list[str] = []
    value = compute(lines)
    if key is not None:
        if len(table) >= 1024:
            table.clear()
        table[key] = (model, value, tuple(lines))
    assumptions += lines
    return value


def _resolve_format(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, precision: PrecisionPlan,
                    assumptions: list[str]) -> WeightFormat:
    if precision.kv_cache not in KV_CACHE_DTYPES:
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


def tp_is_valid(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> bool:
    if not isinstance(model, ModelSpec):
        return tp == 1
    if model.num_attention_heads % tp:
        return False
    if model.mla is not None:
        return True
    kv = model.num_kv_heads
    return kv % tp == 0 or tp % kv == 0


def check_tp(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> None:
    if isinstance(model, DiffusionPipelineSpec):
        if tp > 1:
            raise InvalidWorkload("tp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use --gpus)")
        return
    if model.num_attention_heads % tp:
        raise InvalidWorkload(f"tp={tp} does not divide the {model.num_attention_heads} attention heads of {model.name}")
    if not tp_is_valid(model, tp):
        raise InvalidWorkload(
            f"tp={tp} with {model.num_kv_heads} KV heads: TP must divide the KV heads or be a multiple of them")


def default_tp(model: ModelSpec | DiffusionPipelineSpec, gpus: int) -> int:
    for tp in range(min(gpus, GPUS_PER_SERVER), 0, -1):
        if gpus % tp == 0 and tp_is_valid(model, tp):
            return tp
    return 1


def _split_names(cp: int) -> str:
    return "tp·pp" + ("·cp" if cp > 1 else "")


_LAYOUT_FIELDS = ("gpus", *_LAYOUT_COUNTS, "zero", "tp_overlap", "ep_overlap", "fsdp", "offload", "pipeline_layout",
                  "sequence_parallel")
_layout_fields = attrgetter(*_LAYOUT_FIELDS)
_LAYOUTS: dict[tuple[object, ...], tuple[object, ResolvedLayout, tuple[str, ...]]] = {}


def resolve_layout(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, layout: Layout,
                   assumptions: list[str]) -> ResolvedLayout:
    """The layout planned, whole counts resolved (:func:`_resolve_layout`), its assumption appended. It depends on the
    (frozen) model, the task, the training sequence and the layout's fields only: memoised on them, by value and
    type (``1``, ``1.0`` and ``True`` are different inputs), so each new :class:`Layout` of a question already
    asked resolves in one lookup (a refusal is raised each time, never kept)."""
    values = _layout_fields(layout)
    key = (id(model), workload.task, workload.seq_tokens, values, tuple(map(type, values)))
    resolved: ResolvedLayout = _memo_with_lines(_LAYOUTS, key, model, assumptions,
                                                lambda lines: _resolve_layout(model, workload, layout, lines),
                                                checked=False)
    return resolved


def check_layout_counts(layout: Layout) -> int | None:
    """Refuse a layout count that is not a whole number of at least 1 (TP, PP, DP, EP, CP, virtual stages, GPUs),
    before anything is planned or chosen from it; the GPU count, made whole, is returned."""
    check_counts(_LAYOUT_COUNTS, _layout_counts(layout))
    gpus = layout.gpus
    if gpus is not None and (type(gpus) is not int or gpus < 1):  # the usual case needs no further check
        if not isinstance(gpus, bool) and gpus == 0:
            raise InvalidWorkload("gpus=0: at least one GPU is needed")
        gpus = require_whole_gpus(gpus)
    return gpus


def _resolve_layout(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, layout: Layout,
                    assumptions: list[str]) -> ResolvedLayout:
    gpus = check_layout_counts(layout)
    if layout.zero not in (None, 0, 1, 2, 3):
        raise InvalidWorkload(f"zero={layout.zero!r}: ZeRO stages are 0, 1, 2 and 3")
    if layout.offload not in OFFLOADS:
        raise InvalidWorkload(f"unknown offload {layout.offload!r}; valid: {', '.join(OFFLOADS)}")
    training = workload.task in ("train", "lora", "qlora")
    if not training and (layout.zero or layout.fsdp):
        raise InvalidWorkload("--zero and --fsdp shard training state; they do not apply to inference or diffusion")
    cp, v = layout.cp or 1, layout.virtual_stages or 1
    if not training and (cp > 1 or v > 1):
        raise InvalidWorkload("--cp and --virtual-stages split training work; they do not apply to inference or diffusion")
    if layout.ep_overlap and (workload.task != "train" or not isinstance(model, ModelSpec) or model.moe is None):
        raise InvalidWorkload("--ep-overlap overlaps a mixture of experts' all-to-alls in training (--task train of a "
                              "MoE model)")
    if workload.task == "inference" and layout.offload != "none":
        raise InvalidWorkload("--offload applies to training and diffusion; serving engines size offload separately")
    if workload.task == "diffusion" and layout.offload == "optimizer":
        raise InvalidWorkload("--offload optimizer applies to training; for diffusion use --offload params")
    if layout.tp is None and layout.pp is None and layout.dp is None:
        gpus = gpus or cp
        if gpus % cp:
            raise InvalidWorkload(f"gpus={gpus} is not a multiple of cp = {cp}")
        tp = default_tp(model, gpus) if workload.task == "inference" else 1
        pp, dp = 1, gpus // (tp * cp)
        how = ("inference shards by TP across the GPUs of one server" if workload.task == "inference"
               else "training and diffusion replicate by data parallelism")
        assumptions.append(f"Layout not given: {how} (TP {tp}, PP 1, DP {dp}).")
    else:
        tp, pp = layout.tp or 1, layout.pp or 1
        split = tp * pp * cp
        if layout.dp is None:
            if gpus is None:
                gpus = split
            if gpus % split:
                raise InvalidWorkload(f"gpus={gpus} is not a multiple of {_split_names(cp)} = {split}")
            dp = gpus // split
        else:
            dp = layout.dp
            if gpus is None:
                gpus = split * dp
            elif gpus != split * dp:
                raise InvalidWorkload(f"gpus={gpus} but {_split_names(cp)}·dp = {split * dp}")
    check_tp(model, tp)
    if isinstance(model, ModelSpec) and pp > model.num_layers:
        raise InvalidWorkload(f"pp={pp} exceeds the {model.num_layers} layers of {model.name}")
    if isinstance(model, DiffusionPipelineSpec) and pp > 1:
        raise InvalidWorkload("pp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use --gpus)")
    if workload.recompute == "moe" and not (isinstance(model, ModelSpec) and model.moe is not None):
        raise InvalidWorkload(f"--recompute moe recomputes a mixture of experts' MoE blocks; {model.name} has none "
                              "(use selective or full)")
    ep = layout.ep or 1
    if ep > 1:
        if not isinstance(model, ModelSpec) or model.moe is None:
            raise InvalidWorkload(f"ep={ep}: expert parallelism needs a mixture-of-experts model")
        # EP folds over the TP, CP and DP ranks of a stage (Megatron-Core's MoE parallel folding: CP 8 and EP 8
        # on 8 GPUs, not 64)
        if model.moe.num_experts % ep or (tp * cp * dp) % ep:
            raise InvalidWorkload(f"ep={ep} must divide the {model.moe.num_experts} experts and the "
                                  f"tp·{'cp·' if cp > 1 else ''}dp = {tp * cp * dp} GPUs of a stage")
    zero = 3 if layout.fsdp else (layout.zero or 0)
    if training and layout.offload == "params" and zero < 3:
        raise InvalidWorkload("--offload params needs parameter sharding: add --zero 3 or --fsdp (ZeRO-Infinity, FSDP CPU offload)")
    stated = None
    if layout.pipeline_layout is not None:
        stated = _pipeline_layout(model, layout, pp, training)
        v = stated.virtual_stages
    if isinstance(model, ModelSpec) and v > 1:
        if pp == 1:
            raise InvalidWorkload(f"--virtual-stages {v} needs pipeline parallelism (--pp 2 or more)")
        if stated is None and model.num_layers % (pp * v) and not counts_embedding_and_loss(model.num_layers, pp, v):
            raise InvalidWorkload(f"--virtual-stages {v}: pp {pp} x {v} does not divide the {model.num_layers} layers "
                                  f"of {model.name}, nor {model.num_layers + 2} with the embedding and the loss "
                                  "counted as layers (Megatron-Core's --account-for-embedding-in-pipeline-split "
                                  "--account-for-loss-in-pipeline-split)")
    if training and isinstance(model, ModelSpec):
        seq = default_seq_tokens(workload, model.max_context_tokens)
        if seq % cp:
            raise InvalidWorkload(f"--cp {cp} does not divide the sequence of {seq:,} tokens")
    return ResolvedLayout(gpus=gpus, tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, fsdp=layout.fsdp,
                          offload=layout.offload, cp=cp, virtual_stages=v,
                          sequence_parallel=resolve_sequence_parallel(
                              layout.sequence_parallel, training=training, tp=tp,
                              moe=isinstance(model, ModelSpec) and model.moe is not None),
                          tp_overlap=layout.tp_overlap, ep_overlap=layout.ep_overlap, pipeline_layout=stated)


def _pipeline_layout(model: ModelSpec | DiffusionPipelineSpec, layout: Layout, pp: int,
                     training: bool) -> PipelineLayout:
    """The user's ``--pipeline-layout`` parsed for the resolved ``pp`` (it needs ``--pp`` and a training task of a
    language model); the virtual stages follow from its chunks, or must match them when given."""
    text = layout.pipeline_layout
    if not isinstance(text, str):
        raise InvalidWorkload(f"pipeline-layout={text!r}: must be a layout string such as 'Et|(tt|)*30L'")
    if not training or not isinstance(model, ModelSpec):
        raise InvalidWorkload("--pipeline-layout splits a language model's layers for training; it does not apply to "
                              "inference or diffusion")
    if layout.pp is None:
        raise InvalidWorkload(f"--pipeline-layout {text!r} needs --pp: the chunks are dealt over the pipeline ranks")
    return parse_pipeline_layout(text, pp=pp, virtual_stages=layout.virtual_stages, num_layers=model.num_layers,
                                 model_name=model.name)
