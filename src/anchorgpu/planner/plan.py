"""``plan()``: per-GPU memory, fit verdict, capacity, warnings and suggestions for one configuration. Pure.

It resolves the stated defaults, picks the task's memory terms from :mod:`anchorgpu.planner.memory`
and :mod:`anchorgpu.planner.diffusion`, compares the per-GPU total with the GPU (inference: with the
serving engine's budget, vLLM profile-then-fill), and says what it assumed and what to check.
It reads no files, clock or environment, and renders nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from anchorgpu.architectures.quantization import describe_shipped
from anchorgpu.architectures.spec import DiffusionPipelineSpec, ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner import diffusion as dm
from anchorgpu.planner import memory as mm
from anchorgpu.planner.finetune import finetune_terms
from anchorgpu.planner.formats import (
    WeightFormat,
    format_for_model,
    get_format,
    model_param_parts,
    model_weight_parts,
    shipped_format,
)
from anchorgpu.planner.inputs import (
    ALL_LORA_TARGETS,
    KV_CACHE_DTYPES,
    OFFLOADS,
    OPTIMIZERS,
    RECOMPUTES,
    TASKS,
    TRAIN_PRECISIONS,
    Layout,
    Offload,
    Overheads,
    PrecisionPlan,
    Recompute,
    Workload,
    default_context_tokens,
    default_seq_tokens,
    engine_limits,
)
from anchorgpu.planner.media import cross_kv_bytes, resolve_media, sequence_tokens, speed_prompt_tokens, validate_media
from anchorgpu.planner.speed.training import DEFAULT_GLOBAL_BATCH_TOKENS, microbatches_for
from anchorgpu.planner.warnings import WARNING_CODES, PlanWarning, make_warning
from anchorgpu.units import GIB, fmt_bytes, require_whole_gpus

__all__ = ["MemoryBreakdown", "Plan", "ResolvedLayout", "Suggestion", "plan"]

GPUS_PER_SERVER = 8
BASE_CHECK = ("Confirm with a short run on the real engine and GPU: framework, kernel and allocator versions move "
              "the measured peak by several percent.")
TRAIN_FORMATS = ("bf16", "fp16", "fp32")


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryBreakdown:
    """Per-GPU bytes by term (the DESIGN.md section 5 ``per_gpu`` keys); ``total_bytes`` is their sum."""

    weights_bytes: int
    kv_cache_bytes: int
    activations_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    overhead_bytes: int

    @property
    def total_bytes(self) -> int:
        return (self.weights_bytes + self.kv_cache_bytes + self.activations_bytes + self.gradients_bytes
                + self.optimizer_bytes + self.overhead_bytes)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedLayout:
    """The layout actually planned: every count resolved, ``gpus == tp · cp · pp · dp``."""

    gpus: int
    tp: int
    pp: int
    dp: int
    ep: int
    zero: int
    fsdp: bool
    offload: Offload
    sequence_parallel: bool
    cp: int = 1
    virtual_stages: int = 1
    tp_overlap: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Suggestion:
    """A change that makes the workload fit (CLI flags in ``change``) and the per-GPU total it gives."""

    change: str
    description: str
    gpus: int
    total_bytes: int
    headroom_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """The answer: breakdown, verdict, capacity, and what was assumed and must still be checked.

    ``budget_bytes`` is what ``total`` is compared with: the GPU's memory, or for inference the serving
    engine's budget (memory × ``gpu_memory_utilization``). ``fits``/``headroom_bytes`` are None without
    a GPU. ``max_concurrency`` (inference) counts sequences of ``context_tokens`` over all replicas;
    ``max_context_tokens`` is the longest context at the planned concurrency. ``extra`` is open for
    other planner modules (performance) to attach their sections.
    """

    model: ModelSpec | DiffusionPipelineSpec
    gpu: GpuSpec | None
    workload: Workload
    precision: PrecisionPlan
    layout: ResolvedLayout
    per_gpu: MemoryBreakdown
    breakdown: Mapping[str, int]
    budget_bytes: int | None
    fits: bool | None
    headroom_bytes: int | None
    max_concurrency: int | None
    max_context_tokens: int | None
    checkpoint_bytes: int | None
    assumptions: tuple[str, ...]
    warnings: tuple[PlanWarning, ...]
    checks: tuple[str, ...]
    suggestions: tuple[Suggestion, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# Validation and defaults
# --------------------------------------------------------------------------------------------------

def _positive(name: str, value: int | None) -> None:
    """Refuse anything but a whole number >= 1; ``name`` is the field (micro_batch), shown as the flag (micro-batch)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidWorkload(f"{name.replace('_', '-')}={value!r}: must be a whole number of at least 1")


def _validate_workload(workload: Workload) -> None:
    if workload.task not in TASKS:
        raise InvalidWorkload(f"unknown task {workload.task!r}; valid: {', '.join(TASKS)}")
    for name in ("context_tokens", "concurrency", "micro_batch", "seq_tokens", "lora_rank", "images",
                 "max_num_batched_tokens", "max_num_seqs", "block_size_tokens", "global_batch_tokens",
                 "prompt_tokens", "output_tokens"):
        _positive(name, getattr(workload, name))
    if not 0 < workload.gpu_memory_utilization <= 1:
        raise InvalidWorkload(
            f"gpu-memory-utilization={workload.gpu_memory_utilization}: must be above 0 and at most 1")
    if workload.recompute is not None and workload.recompute not in RECOMPUTES:
        raise InvalidWorkload(f"unknown recompute {workload.recompute!r}; valid: {', '.join(RECOMPUTES)}")
    if workload.train_precision not in TRAIN_PRECISIONS:
        raise InvalidWorkload(f"--train-precision {workload.train_precision!r}: choose {', '.join(TRAIN_PRECISIONS)}")
    if workload.optimizer not in OPTIMIZERS:
        raise InvalidWorkload(f"unknown optimizer {workload.optimizer!r}; valid: {', '.join(OPTIMIZERS)}")
    bad = [t for t in workload.lora_targets if t not in ALL_LORA_TARGETS and t not in mm.FUSED_LORA_TARGETS
           and t not in mm.RECURRENT_LORA_TARGETS]
    if bad or not workload.lora_targets:
        raise InvalidWorkload(
            f"lora-targets {','.join(workload.lora_targets) or '(none)'}: choose from "
            f"{','.join((*ALL_LORA_TARGETS, *mm.FUSED_LORA_TARGETS, *mm.RECURRENT_LORA_TARGETS))}")
    if workload.resolution is not None and (len(workload.resolution) != 2 or min(workload.resolution) < 8):
        raise InvalidWorkload(f"resolution {workload.resolution!r}: expected WIDTHxHEIGHT in pixels, each >= 8")
    validate_media(None, workload)
    if workload.task != "inference" and (workload.images_per_request or workload.image_resolution is not None):
        raise InvalidWorkload("--images-per-request/--image-resolution size serving requests (task inference), "
                              f"not task {workload.task}")


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


def _tp_is_valid(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> bool:
    if not isinstance(model, ModelSpec):
        return tp == 1
    if model.num_attention_heads % tp:
        return False
    if model.mla is not None:
        return True
    kv = model.num_kv_heads
    return kv % tp == 0 or tp % kv == 0


def _check_tp(model: ModelSpec | DiffusionPipelineSpec, tp: int) -> None:
    if isinstance(model, DiffusionPipelineSpec):
        if tp > 1:
            raise InvalidWorkload("tp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use --gpus)")
        return
    if model.num_attention_heads % tp:
        raise InvalidWorkload(f"tp={tp} does not divide the {model.num_attention_heads} attention heads of {model.name}")
    if not _tp_is_valid(model, tp):
        raise InvalidWorkload(
            f"tp={tp} with {model.num_kv_heads} KV heads: TP must divide the KV heads or be a multiple of them")


def _default_tp(model: ModelSpec | DiffusionPipelineSpec, gpus: int) -> int:
    for tp in range(min(gpus, GPUS_PER_SERVER), 0, -1):
        if gpus % tp == 0 and _tp_is_valid(model, tp):
            return tp
    return 1


def _resolve_layout(model: ModelSpec | DiffusionPipelineSpec, workload: Workload, layout: Layout,
                    assumptions: list[str]) -> ResolvedLayout:
    for name in ("tp", "pp", "dp", "ep", "cp", "virtual_stages"):
        _positive(name, getattr(layout, name))
    if layout.gpus is not None and not isinstance(layout.gpus, bool) and layout.gpus == 0:
        raise InvalidWorkload("gpus=0: at least one GPU is needed")
    gpus = None if layout.gpus is None else require_whole_gpus(layout.gpus)
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
    if workload.task == "inference" and layout.offload != "none":
        raise InvalidWorkload("--offload applies to training and diffusion; serving engines size offload separately")
    if workload.task == "diffusion" and layout.offload == "optimizer":
        raise InvalidWorkload("--offload optimizer applies to training; for diffusion use --offload params")
    if layout.tp is None and layout.pp is None and layout.dp is None:
        gpus = gpus or cp
        if gpus % cp:
            raise InvalidWorkload(f"gpus={gpus} is not a multiple of cp = {cp}")
        tp = _default_tp(model, gpus) if workload.task == "inference" else 1
        pp, dp = 1, gpus // (tp * cp)
        how = ("inference shards by TP across the GPUs of one server" if workload.task == "inference"
               else "training and diffusion replicate by data parallelism")
        assumptions.append(f"Layout not given: {how} (TP {tp}, PP 1, DP {dp}).")
    else:
        tp, pp = layout.tp or 1, layout.pp or 1
        split = tp * pp * cp
        names = "tp·pp" + ("·cp" if cp > 1 else "")
        if layout.dp is None:
            if gpus is None:
                gpus = split
            if gpus % split:
                raise InvalidWorkload(f"gpus={gpus} is not a multiple of {names} = {split}")
            dp = gpus // split
        else:
            dp = layout.dp
            if gpus is None:
                gpus = split * dp
            elif gpus != split * dp:
                raise InvalidWorkload(f"gpus={gpus} but {names}·dp = {split * dp}")
    _check_tp(model, tp)
    if isinstance(model, ModelSpec) and pp > model.num_layers:
        raise InvalidWorkload(f"pp={pp} exceeds the {model.num_layers} layers of {model.name}")
    if isinstance(model, DiffusionPipelineSpec) and pp > 1:
        raise InvalidWorkload("pp > 1 for a diffusion pipeline: AnchorGPU plans diffusion replicas (use --gpus)")
    ep = layout.ep or 1
    if ep > 1:
        if not isinstance(model, ModelSpec) or model.moe is None:
            raise InvalidWorkload(f"ep={ep}: expert parallelism needs a mixture-of-experts model")
        if model.moe.num_experts % ep or (tp * dp) % ep:
            raise InvalidWorkload(
                f"ep={ep} must divide the {model.moe.num_experts} experts and the tp·dp = {tp * dp} GPUs of a stage")
    zero = 3 if layout.fsdp else (layout.zero or 0)
    if training and layout.offload == "params" and zero < 3:
        raise InvalidWorkload("--offload params needs parameter sharding: add --zero 3 or --fsdp (ZeRO-Infinity, FSDP CPU offload)")
    if isinstance(model, ModelSpec) and v > 1:
        if pp == 1:
            raise InvalidWorkload(f"--virtual-stages {v} needs pipeline parallelism (--pp 2 or more)")
        if model.num_layers % (pp * v):
            raise InvalidWorkload(f"--virtual-stages {v}: pp {pp} x {v} does not divide the {model.num_layers} layers "
                                  f"of {model.name}")
    if training and isinstance(model, ModelSpec):
        seq = default_seq_tokens(workload, model.max_context_tokens)
        if seq % cp:
            raise InvalidWorkload(f"--cp {cp} does not divide the sequence of {seq:,} tokens")
    return ResolvedLayout(gpus=gpus, tp=tp, pp=pp, dp=dp, ep=ep, zero=zero, fsdp=layout.fsdp,
                          offload=layout.offload, sequence_parallel=training and tp > 1, cp=cp, virtual_stages=v,
                          tp_overlap=layout.tp_overlap)


def _engine_defaults(gpu: GpuSpec | None, workload: Workload, assumptions: list[str]) -> tuple[int, int]:
    """vLLM V1 defaults for the OpenAI server: 8,192 batched tokens and 1,024 sequences on GPUs with at
    least 70 GiB, else 2,048 and 256 (vLLM ``arg_utils._set_default_args``)."""
    tokens, seqs = engine_limits(workload, large_gpu=gpu is None or gpu.memory_bytes >= 70 * GIB)
    assumptions.append(
        f"Serving engine sized like vLLM: max_num_batched_tokens {tokens}, max_num_seqs {seqs}, "
        f"gpu_memory_utilization {workload.gpu_memory_utilization}, KV block {workload.block_size_tokens} tokens.")
    return tokens, seqs


# --------------------------------------------------------------------------------------------------
# Task planners: each returns (breakdown, sub-terms, capacity dict)
# --------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True, kw_only=True)
class _Terms:
    per_gpu: MemoryBreakdown
    breakdown: dict[str, int]
    budget_bytes: int | None
    max_concurrency: int | None = None
    max_context_tokens: int | None = None
    checkpoint_bytes: int | None = None
    workload: Workload


def _weights(model: ModelSpec, fmt: WeightFormat, lay: ResolvedLayout, breakdown: dict[str, int]) -> int:
    parts = model_weight_parts(model, fmt)
    sharded = mm.shard_share(parts, tp=lay.tp, pp=lay.pp, ep=lay.ep, dp_shard=lay.dp if lay.zero == 3 else 1)
    breakdown["weights_linear_bytes"] = math.ceil(parts.dense + parts.experts)
    breakdown["weights_embeddings_bytes"] = math.ceil(parts.embed)
    breakdown["weights_head_bytes"] = math.ceil(parts.head)
    breakdown["weights_other_bytes"] = math.ceil(parts.layer_other)
    breakdown["weights_whole_model_bytes"] = math.ceil(parts.total)
    if lay.zero == 3:
        gather = mm.gather_buffer_bytes(parts, tp=lay.tp)
        breakdown["gather_buffer_bytes"] = gather
        if lay.offload == "params":
            sharded = 0
        return sharded + gather
    return sharded


def _nccl_bytes(lay: ResolvedLayout, ov: Overheads) -> int:
    if lay.gpus == 1:
        return 0
    peers = (lay.tp - 1) + (lay.ep - 1) + (1 if lay.dp > 1 else 0) + (1 if lay.pp > 1 else 0)
    return ov.nccl_base_bytes + ov.nccl_per_peer_bytes * peers


def _context_bytes(gpu: GpuSpec | None, ov: Overheads) -> int:
    return ov.rocm_context_bytes if gpu is not None and gpu.vendor == "AMD" else ov.cuda_context_bytes


def _kv_request(model: ModelSpec, ctx: int, seqs: int, precision: PrecisionPlan, lay: ResolvedLayout,
                w: Workload) -> int:
    return mm.kv_cache_bytes(model, context_tokens=ctx, sequences=seqs, bytes_per_value=KV_CACHE_DTYPES[precision.kv_cache],
                             tp=lay.tp, pp=lay.pp, block_size=w.block_size_tokens)


def _longest_context(model: ModelSpec, capacity: int, seqs: int, limit: int, precision: PrecisionPlan,
                     lay: ResolvedLayout, w: Workload) -> int:
    """Largest context (multiple of 1 token) whose KV for ``seqs`` sequences fits ``capacity`` (bisection)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _kv_request(model, mid, seqs, precision, lay, w) <= capacity:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _state_assumption(model: ModelSpec, per_sequence_bytes: int) -> str:
    """One line on the recurrent state a hybrid or state-space model keeps per sequence."""
    rec = model.recurrent
    assert rec is not None
    dtype = ("16-bit (the model dtype, as vLLM's mamba_cache_dtype=auto keeps it)" if rec.ssm_bytes_per_value is None
             else f"16-bit convolution state, {rec.ssm_bytes_per_value}-byte SSM state (the model's own setting)")
    kv = (f"KV cache only on the {model.attention_layers} attention layer(s)" if model.attention_layers
          else "no KV cache (no attention layer)")
    return (f"Recurrent state: {fmt_bytes(per_sequence_bytes)} per sequence per GPU at any length, over "
            f"{model.recurrent_layers} {rec.mixer} layer(s), {dtype}; {kv}; counted with the KV cache, as vLLM "
            f"allocates both from one pool.")


def _inference(model: ModelSpec, gpu: GpuSpec | None, w: Workload, precision: PrecisionPlan, fmt: WeightFormat,
               lay: ResolvedLayout, ov: Overheads, assumptions: list[str], warnings: list[PlanWarning]) -> _Terms:
    limit = model.max_context_tokens
    if w.context_tokens is None and (w.prompt_tokens is not None or w.output_tokens is not None):
        prompt = w.prompt_tokens if w.prompt_tokens is not None else 1024
        output = w.output_tokens if w.output_tokens is not None else 256
        ctx = min(prompt + output, limit) if not w.allow_long_context else prompt + output
        assumptions.append(f"Context not given: each sequence sized at prompt + output = {prompt:,} + {output:,} = "
                           f"{prompt + output:,} tokens" + (f", capped at the model's {limit:,}" if ctx < prompt + output
                                                            else "") + ".")
    else:
        ctx = w.context_tokens or default_context_tokens(limit)
        if w.context_tokens is None and ctx < limit:
            assumptions.append(
                f"Context not given: {ctx:,} tokens per sequence, not the model's whole {limit:,}-token window "
                "(a cache sized for that one sequence is not how such models are served); set --context to plan longer.")
        elif w.context_tokens is None:
            assumptions.append(f"Context not given: the model's context length, {ctx} tokens per sequence.")
    media = resolve_media(model, w, assumptions, prompt_tokens=w.prompt_tokens or ctx)
    ctx = sequence_tokens(media, w, ctx, assumptions, model)
    if ctx > limit:
        if not w.allow_long_context:
            raise InvalidWorkload(
                f"context {ctx} exceeds {model.name}'s limit of {limit} tokens (add --allow-long-context to plan anyway)")
        warnings.append(make_warning("context_beyond_model_limit", f"context {ctx} > model limit {limit}"))
    concurrency = w.concurrency or 1
    if w.concurrency is None:
        assumptions.append("Concurrency not given: checked for one sequence; max_concurrency reports the most.")
    per_replica = math.ceil(concurrency / lay.dp)
    if lay.dp > 1:
        assumptions.append(f"{lay.dp} replicas share the {concurrency} sequences: {per_replica} per replica.")
    breakdown: dict[str, int] = {}
    weights = _weights(model, fmt, lay, breakdown)
    tokens, seqs = _engine_defaults(gpu, w, assumptions)
    prefill = mm.prefill_activation_bytes(model, tokens=tokens, tp=lay.tp)
    sampler = mm.sampler_activation_bytes(sequences=min(tokens, seqs), vocab=model.vocab_size)
    breakdown["prefill_activation_bytes"] = prefill
    breakdown["sampler_logits_bytes"] = sampler
    non_torch = ov.serving_non_torch_tp1_bytes if lay.tp * lay.pp == 1 else ov.serving_non_torch_multi_bytes
    breakdown["non_torch_bytes"] = non_torch
    breakdown["cuda_context_outside_budget_bytes"] = _context_bytes(gpu, ov)
    kv_one = _kv_request(model, ctx, 1, precision, lay, w)
    kv = _kv_request(model, ctx, per_replica, precision, lay, w)
    breakdown["kv_per_sequence_bytes"] = kv_one
    state_one = mm.recurrent_state_bytes(model, sequences=1, tp=lay.tp, pp=lay.pp)
    state = mm.recurrent_state_bytes(model, sequences=per_replica, tp=lay.tp, pp=lay.pp)
    if model.recurrent is not None:
        breakdown["state_per_sequence_bytes"] = state_one
        breakdown["recurrent_state_bytes"] = state
        assumptions.append(_state_assumption(model, state_one))
    # images and encoder outputs: cross-attention K/V per sequence, fixed whatever the text length
    cross_one = cross_kv_bytes(model, media, sequences=1, bytes_per_value=KV_CACHE_DTYPES[precision.kv_cache],
                               tp=lay.tp, pp=lay.pp)
    cross = cross_kv_bytes(model, media, sequences=per_replica, bytes_per_value=KV_CACHE_DTYPES[precision.kv_cache],
                           tp=lay.tp, pp=lay.pp)
    if media.images:
        breakdown["image_tokens_per_image"] = media.tokens_per_image
        breakdown["image_tokens_per_request"] = media.images * media.tokens_per_image
    if cross_one:
        breakdown["cross_attention_kv_per_sequence_bytes"] = cross_one
    state_one, state = state_one + cross_one, state + cross
    assumptions.append(
        "KV cache shown is what the requested sequences need; the serving engine reserves all the KV cache that "
        "fits under the utilization cap at start-up (kv_cache_capacity_bytes in the breakdown).")
    assumptions.append(
        "CUDA context sits outside the engine budget (in the 1 - gpu_memory_utilization margin); CUDA graphs "
        "are inside the profiled activation peak (vLLM V1).")
    per_gpu = MemoryBreakdown(weights_bytes=weights, kv_cache_bytes=kv + state, activations_bytes=prefill + sampler,
                              gradients_bytes=0, optimizer_bytes=0, overhead_bytes=non_torch)
    budget = None
    max_conc = max_ctx = None
    if gpu is not None:
        budget = math.ceil(gpu.memory_bytes * w.gpu_memory_utilization)
        capacity = budget - weights - prefill - sampler - non_torch
        breakdown["engine_budget_bytes"] = budget
        breakdown["kv_cache_capacity_bytes"] = max(0, capacity)
        max_conc = max(0, capacity) // max(1, kv_one + state_one) * lay.dp
        cap_limit = limit if not w.allow_long_context else max(limit, ctx) * 16
        room = capacity - state  # the recurrent state of the sequences does not grow with the context
        max_ctx = _longest_context(model, room, per_replica, cap_limit, precision, lay, w) if room >= 0 else 0
        if capacity <= 0:
            warnings.append(make_warning(
                "weights_exceed_engine_budget",
                f"weights, activations and non-torch memory take {fmt_bytes(budget - capacity)}, "
                + ("the whole" if capacity == 0 else f"{fmt_bytes(-capacity)} more than the")
                + f" {fmt_bytes(budget)} engine budget: no room for the KV cache"))
    return _Terms(per_gpu=per_gpu, breakdown=breakdown, budget_bytes=budget, max_concurrency=max_conc,
                  max_context_tokens=max_ctx,
                  workload=replace(w, context_tokens=ctx, concurrency=concurrency, max_num_batched_tokens=tokens,
                                   max_num_seqs=seqs,
                                   prompt_tokens=speed_prompt_tokens(media, model, w, ctx, assumptions) or w.prompt_tokens))


def _training(model: ModelSpec, gpu: GpuSpec | None, w: Workload, fmt: WeightFormat, lay: ResolvedLayout,
              ov: Overheads, assumptions: list[str], warnings: list[PlanWarning]) -> _Terms:
    seq = default_seq_tokens(w, model.max_context_tokens)
    if w.seq_tokens is None:
        assumptions.append(f"Sequence length not given: {seq} tokens.")
    if seq > model.max_context_tokens and not w.allow_long_context:
        raise InvalidWorkload(
            f"seq {seq} exceeds {model.name}'s limit of {model.max_context_tokens} tokens (add --allow-long-context)")
    micro_batch = w.micro_batch or 1
    if w.micro_batch is None:
        assumptions.append("Micro-batch not given: 1 sequence per GPU step.")
    microbatches = 1
    if w.global_batch_tokens is not None:  # one line when it is smaller than a micro-batch per DP rank
        microbatches = microbatches_for(w.global_batch_tokens, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq)
    recompute: Recompute = w.recompute or ("full" if w.task == "qlora" else "none")
    if w.recompute is None:
        assumptions.append(f"Activation recompute: {recompute} (default for {w.task}"
                           + (", gradient checkpointing as in the QLoRA paper)." if recompute == "full" else ")."))
    if lay.sequence_parallel:
        assumptions.append("Tensor parallelism with sequence parallelism (Megatron): norms and dropout activations split too.")
    assumptions.append("Attention by a flash-attention kernel: no s² score matrix is stored.")
    mixed = w.train_precision != "bf16-true"
    breakdown: dict[str, int] = {}
    weights = _weights(model, fmt, lay, breakdown)
    params_parts = model_param_parts(model)
    params_gpu = mm.shard_share(params_parts, tp=lay.tp, pp=lay.pp, ep=lay.ep)
    share = params_gpu / max(1, model.params_total)
    on_gpu_optimizer = lay.offload == "none"
    moment_scale = 1.0 if mixed or w.optimizer == "adamw-8bit" else 0.5
    shapes = [(g.count, g.d_in, g.d_out) for g in model.linear_groups]  # Adafactor factors every 2-D tensor
    shapes += [(1, model.vocab_size, model.hidden_size)] * ((model.params.embeddings > 0) + (model.params.head > 0))
    if w.task == "train":
        grads = mm.gradient_bytes(params_gpu, bytes_per_value=w.grad_bytes_per_value, zero=lay.zero, dp=lay.dp)
        master = mm.master_weight_bytes(params_gpu, mixed_precision=mixed, zero=lay.zero, dp=lay.dp)
        moments = math.ceil(share * mm.optimizer_moment_bytes(
            model.params_total, optimizer=w.optimizer, zero=lay.zero, dp=lay.dp, moment_scale=moment_scale,
            matrix_shapes=shapes))
        checkpoint = model.params_total * 2 + (4 * model.params_total if mixed else 0) + mm.optimizer_moment_bytes(
            model.params_total, optimizer=w.optimizer, zero=0, dp=1, moment_scale=moment_scale, matrix_shapes=shapes)
        assumptions.append(
            "Mixed precision: 16-bit weights and gradients, fp32 master weights and optimizer moments "
            "(ZeRO's 2 + 2 + 12 bytes per parameter with AdamW)." if mixed else
            "bf16-true training: no fp32 master copy; optimizer moments kept in bf16.")
    else:
        adapters = mm.adapter_params(model, rank=w.lora_rank, targets=w.lora_targets)
        if adapters == 0 and w.lora_targets == ALL_LORA_TARGETS and model.attention_layers == 0:
            w = replace(w, lora_targets=mm.SSM_DEFAULT_LORA_TARGETS)  # no attention: adapt the mixers instead
            adapters = mm.adapter_params(model, rank=w.lora_rank, targets=w.lora_targets)
            assumptions.append(f"LoRA targets not given and {model.name} has no attention: adapters on the mixer "
                               f"projections {', '.join(w.lora_targets)} (PEFT's Mamba example).")
        if adapters == 0:
            names = ", ".join(g.name for g in model.linear_groups)
            raise InvalidWorkload(f"lora-targets {','.join(w.lora_targets)} match no linear layer of {model.name} ({names})")
        adapters_gpu = math.ceil(adapters * share)
        value = 4 if mixed else 2
        breakdown["lora_adapter_params"] = adapters
        breakdown["lora_adapter_weights_bytes"] = adapters_gpu * value
        weights += adapters_gpu * value
        grads = adapters_gpu * value
        master = 0
        moments = mm.optimizer_moment_bytes(adapters_gpu, optimizer=w.optimizer, zero=lay.zero, dp=lay.dp,
                                            moment_scale=moment_scale)
        checkpoint = adapters * 2
        assumptions.append("Activations of the whole model are kept for the backward pass through the frozen layers.")
        assumptions.append(
            f"LoRA rank {w.lora_rank} on {','.join(w.lora_targets)}: frozen base, adapters "
            + ("in fp32 with fp32 gradients and optimizer moments." if mixed else "and their states in bf16."))
    if not on_gpu_optimizer:
        breakdown["offloaded_optimizer_bytes"] = master + moments
        master = moments = 0
        warnings.append(make_warning("offload_slows_training",
                                     f"--offload {lay.offload}: optimizer state lives in CPU RAM"))
    breakdown["master_weights_bytes"] = master
    breakdown["optimizer_moments_bytes"] = moments
    act = mm.training_activation_bytes(model, s=seq // lay.cp, b=micro_batch, tp=lay.tp, pp=lay.pp,
                                       sp=lay.sequence_parallel, recompute=recompute)
    if lay.virtual_stages > 1 and lay.pp > 1:
        m = microbatches if w.global_batch_tokens is not None else max(
            1, DEFAULT_GLOBAL_BATCH_TOKENS // (lay.dp * micro_batch * seq))
        act = math.ceil(act * (1 + (lay.pp - 1) / (lay.pp * m)))  # Korthikanti et al. 2022, section 4.2.3
        assumptions.append(f"Interleaved pipeline ({lay.virtual_stages} chunks per GPU): the first stage holds "
                           "(1 + (p-1)/(p·m)) times the activations of 1F1B.")
    if lay.cp > 1:
        assumptions.append(f"Context parallelism {lay.cp}: each GPU keeps the activations of {seq // lay.cp:,} of the "
                           f"{seq:,} tokens (ring attention).")
    if w.train_precision in ("fp8", "fp4") and w.task == "train":
        low = math.ceil(params_gpu / (lay.dp if lay.zero == 3 else 1)) * (2 if w.train_precision == "fp8" else 1)
        breakdown["low_precision_weight_copies_bytes"] = low
        weights += low
        assumptions.append(f"{w.train_precision.upper()} training as Transformer Engine runs it: 16-bit weights and "
                           f"fp32 master/moments as in mixed precision, plus {w.train_precision.upper()} copies of the "
                           "weights (and their transposes) for the matrix products; activations kept in 16 bit.")
    breakdown["logits_bytes"] = mm.logits_bytes(s=seq // lay.cp, b=micro_batch, vocab=model.vocab_size, t=lay.tp)
    if w.task in ("lora", "qlora"):
        act += _finetune_terms(model, fmt, w, seq // lay.cp, micro_batch, lay, recompute, breakdown, assumptions)
    tensors = weights + grads + master + moments + act
    fragmentation = math.ceil(tensors * ov.fragmentation_fraction)
    context = _context_bytes(gpu, ov)
    nccl = _nccl_bytes(lay, ov)
    breakdown.update(cuda_context_bytes=context, cublas_workspace_bytes=ov.cublas_workspace_bytes,
                     nccl_buffers_bytes=nccl, fragmentation_bytes=fragmentation, checkpoint_bytes=checkpoint)
    overhead = context + ov.cublas_workspace_bytes + nccl + fragmentation
    assumptions.append(
        f"Runtime overhead: context {fmt_bytes(context)}, library workspace {fmt_bytes(ov.cublas_workspace_bytes)}, "
        f"NCCL {fmt_bytes(nccl)}, allocator fragmentation {ov.fragmentation_fraction:.0%} of tensors.")
    per_gpu = MemoryBreakdown(weights_bytes=weights, kv_cache_bytes=0, activations_bytes=act, gradients_bytes=grads,
                              optimizer_bytes=master + moments, overhead_bytes=overhead)
    budget = gpu.memory_bytes if gpu is not None else None
    return _Terms(per_gpu=per_gpu, breakdown=breakdown, budget_bytes=budget, checkpoint_bytes=checkpoint,
                  workload=w if (w.seq_tokens, w.recompute, w.micro_batch) == (seq, recompute, micro_batch)
                  else replace(w, seq_tokens=seq, recompute=recompute, micro_batch=micro_batch))


def _finetune_terms(model: ModelSpec, fmt: WeightFormat, w: Workload, seq: int, micro_batch: int, lay: ResolvedLayout,
                    recompute: Recompute, breakdown: dict[str, int], assumptions: list[str]) -> int:
    """LoRA/QLoRA terms beyond the layer activations (planner.finetune, constants in data/finetune_memory.json),
    added to the activations; each named in the breakdown and the assumptions."""
    terms = finetune_terms(model, fmt, task=w.task, seq=seq, micro_batch=micro_batch, tp=lay.tp,
                           stage_layers=mm.stage_layers(model.num_layers, lay.pp), recompute=recompute,
                           targets=mm.expand_lora_targets(w.lora_targets))
    breakdown.update(quantized_layer_inputs_bytes=terms.quantized_layer_inputs_bytes,
                     dequantization_workspace_bytes=terms.dequantization_workspace_bytes,
                     logits_gradient_bytes=terms.logits_gradient_bytes,
                     frozen_inputs_not_kept_bytes=terms.frozen_inputs_not_kept_bytes)
    named = [f"fp32 logits gradient {fmt_bytes(terms.logits_gradient_bytes)}"]
    if terms.frozen_inputs_not_kept_bytes:
        named.append(f"minus {fmt_bytes(terms.frozen_inputs_not_kept_bytes)} of frozen 16-bit MLP inputs the layer "
                     "formula counts but autograd does not keep")
    if terms.dequantization_workspace_bytes:
        named.append(f"dequantization workspace {fmt_bytes(terms.dequantization_workspace_bytes)} (the largest "
                     "quantized matrix dequantized to 16 bit)")
    if terms.quantized_layer_inputs_bytes:
        named.append(f"inputs kept by the bitsandbytes 4-bit layers for the backward pass "
                     f"{fmt_bytes(terms.quantized_layer_inputs_bytes)}"
                     + (" (the recomputed layer only)" if recompute == "full" else ""))
    assumptions.append("Fine-tuning terms added to the activations: " + "; ".join(named)
                       + ". The loader's 16-bit copy while quantizing is transient and not added.")
    return terms.total_bytes


def _diffusion(pipe: DiffusionPipelineSpec, gpu: GpuSpec | None, w: Workload, fmt: WeightFormat,
               lay: ResolvedLayout, ov: Overheads, assumptions: list[str]) -> _Terms:
    width, height = w.resolution or pipe.default_resolution
    if w.resolution is None:
        assumptions.append(f"Resolution not given: the pipeline's default {width}x{height}.")
    sizes = {c.name: dm.component_bytes(c, fmt) for c in pipe.components}
    denoise_act = dm.denoiser_activation_bytes(pipe, width=width, height=height, images=w.images)
    decode = dm.vae_decode_bytes(width=width, height=height, images=w.images, tiling=w.vae_tiling)
    denoiser = sum(sizes[c.name] for c in pipe.components if c.role == "denoiser")
    vae = sum(sizes[c.name] for c in pipe.components if c.role == "vae")
    breakdown: dict[str, int] = {f"component_{name}_bytes": size for name, size in sizes.items()}
    breakdown.update(denoiser_activation_bytes=denoise_act, vae_decode_peak_bytes=decode)
    if lay.offload == "params":
        # model CPU offload: one component on the GPU at a time
        phases = {"denoise": denoiser + denoise_act, "decode": vae + decode,
                  "encode": max((sizes[c.name] for c in pipe.components if c.role == "text_encoder"), default=0)}
        peak_phase = max(phases, key=lambda k: phases[k])
        weights = {"denoise": denoiser, "decode": vae, "encode": phases["encode"]}[peak_phase]
        act = phases[peak_phase] - weights
        assumptions.append("Model CPU offload: each component moves to the GPU only for its phase.")
    else:
        weights = sum(sizes.values())
        peak_phase = "denoise" if denoise_act >= decode else "decode"
        act = max(denoise_act, decode)
        assumptions.append("All components resident; text encoders and VAE in 16 bit.")
    breakdown["peak_phase_is_decode"] = 1 if peak_phase == "decode" else 0
    assumptions.append(
        f"Reported peak is the larger phase: {'VAE decode' if peak_phase == 'decode' else 'denoising'} "
        f"(denoiser activations {fmt_bytes(denoise_act)}, VAE decode {fmt_bytes(decode)}"
        f"{', tiled' if w.vae_tiling else ''}).")
    context = _context_bytes(gpu, ov)
    fragmentation = math.ceil((weights + act) * ov.fragmentation_fraction)
    breakdown.update(cuda_context_bytes=context, cublas_workspace_bytes=ov.cublas_workspace_bytes,
                     fragmentation_bytes=fragmentation)
    per_gpu = MemoryBreakdown(weights_bytes=weights, kv_cache_bytes=0, activations_bytes=act, gradients_bytes=0,
                              optimizer_bytes=0, overhead_bytes=context + ov.cublas_workspace_bytes + fragmentation)
    return _Terms(per_gpu=per_gpu, breakdown=breakdown, budget_bytes=gpu.memory_bytes if gpu is not None else None,
                  workload=replace(w, resolution=(width, height)))


# --------------------------------------------------------------------------------------------------
# Warnings and checks
# --------------------------------------------------------------------------------------------------

def _layout_warnings(w: Workload, lay: ResolvedLayout, gpu: GpuSpec | None) -> list[PlanWarning]:
    out: list[PlanWarning] = []
    training = w.task in ("train", "lora", "qlora")
    if lay.dp > 1 and (not training or lay.zero == 0):
        out.append(make_warning("ddp_no_memory_pooling",
                                f"{lay.dp} data-parallel replicas: each GPU holds its own full share; memory does not pool"))
    if lay.zero and lay.dp == 1:
        out.append(make_warning("zero_without_data_parallel", f"ZeRO stage {lay.zero} with one data-parallel rank shards nothing"))
    if lay.tp > 1:
        out.append(make_warning("tp_requires_engine_support", f"tensor parallelism over {lay.tp} GPUs"))
    if lay.pp > 1:
        out.append(make_warning("pp_requires_engine_support", f"pipeline parallelism over {lay.pp} stages"))
    if lay.ep > 1:
        out.append(make_warning("ep_requires_engine_support", f"expert parallelism over {lay.ep} GPUs"))
    if lay.tp > GPUS_PER_SERVER:
        out.append(make_warning("tp_across_nodes", f"TP {lay.tp} spans more than one {GPUS_PER_SERVER}-GPU server"))
    if gpu is not None and lay.tp > 1:
        link = gpu.interconnect.lower()
        if link.startswith("none") or ("bridge" in link and lay.tp > 2):
            out.append(make_warning("tp_over_pcie", f"TP {lay.tp} on {gpu.name} ({gpu.interconnect}) all-reduces over PCIe"))
    return out


def _precision_warnings(
    fmt: WeightFormat, precision: PrecisionPlan, gpu: GpuSpec | None, *, shipped: bool = False
) -> list[PlanWarning]:
    """``shipped``: the weights are the format the checkpoint is published in, so their quality is the
    model's own, not a conversion to check (engine kernels still are)."""
    out: list[PlanWarning] = []
    fp8_used = fmt.native == "fp8" or precision.kv_cache == "fp8"
    if gpu is not None and fp8_used and not gpu.fp8_hardware:
        out.append(make_warning("fp8_without_hardware", f"{gpu.name} has no FP8 tensor cores"))
    if gpu is not None and fmt.native == "fp4" and not gpu.fp4_hardware:
        out.append(make_warning("fp4_weight_only_emulation",
                                f"{fmt.name} on {gpu.name}: FP4 weights are dequantized to 16 bit for the math"))
    if fmt.quantized or precision.kv_cache == "fp8":
        what = ", ".join(x for x in (fmt.name if fmt.quantized else "", "fp8 KV cache" if precision.kv_cache == "fp8" else "") if x)
        if not shipped or precision.kv_cache == "fp8":
            out.append(make_warning("quantization_quality_unchecked", f"{what}: quality depends on the model and the task"))
        out.append(make_warning("kernel_support_unchecked", f"{what}: needs engine kernels for this format"
                                + (f" on {gpu.name}" if gpu is not None else "")))
    if gpu is not None and gpu.vendor == "AMD":
        out.append(make_warning("rocm_cuda_only_dependency",
                                f"{gpu.name} runs ROCm: check every dependency has a ROCm build"
                                + (f" ({fmt.name} kernels especially)" if fmt.quantized else "")))
    return out


# --------------------------------------------------------------------------------------------------
# Suggestions
# --------------------------------------------------------------------------------------------------

def _suggestion_candidates(model: ModelSpec | DiffusionPipelineSpec, w: Workload, precision: PrecisionPlan,
                           layout: Layout, lay: ResolvedLayout, fmt: WeightFormat
                           ) -> list[tuple[str, str, Workload, PrecisionPlan, Layout]]:
    out: list[tuple[str, str, Workload, PrecisionPlan, Layout]] = []
    if w.task == "inference":
        if lay.dp > 1 and isinstance(model, ModelSpec) and lay.pp * lay.dp <= model.num_layers:
            out.append((f"--tp {lay.tp} --pp {lay.pp * lay.dp}", "pipeline stages instead of replicas", w, precision,
                        Layout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp * lay.dp, dp=1)))
        if w.gpu_memory_utilization < 0.95:
            out.append(("--gpu-memory-utilization 0.95", "let the engine use 95 % of GPU memory",
                        replace(w, gpu_memory_utilization=0.95), precision, layout))
        for gpus in (2, 4, 8, 16, 32):
            if gpus > lay.gpus:
                tp = min(gpus, GPUS_PER_SERVER)
                if _tp_is_valid(model, tp):
                    new = Layout(gpus=gpus, tp=tp, pp=gpus // tp, dp=1)
                    out.append((f"--gpus {gpus} --tp {tp}" + (f" --pp {gpus // tp}" if gpus > tp else ""),
                                f"shard over {gpus} GPUs", w, precision, new))
        for name, above_bits in (("fp8", 8), ("int4-awq", 6)):
            if fmt.linear_bits > above_bits + 0.5:  # not when already in (a block-scaled variant of) it
                out.append((f"--weights {name}", f"store weights as {name}", w, replace(precision, weights=name), layout))
        if precision.kv_cache != "fp8":
            out.append(("--kv-cache fp8", "halve the KV cache with fp8", w, replace(precision, kv_cache="fp8"), layout))
    elif w.task in ("train", "lora", "qlora"):
        if lay.zero < 3 and lay.dp > 1:
            out.append(("--zero 3", "shard weights, gradients and optimizer over the data-parallel ranks", w,
                        precision, replace(layout, zero=3, fsdp=False)))
        for rc in ("selective", "full"):
            if RECOMPUTES.index(rc) > RECOMPUTES.index(w.recompute or "none"):
                out.append((f"--recompute {rc}", f"{rc} activation recompute", replace(w, recompute=rc), precision, layout))
        seq = w.seq_tokens or 0
        if seq >= 256:
            out.append((f"--seq {seq // 2}", "halve the sequence length", replace(w, seq_tokens=seq // 2), precision,
                        layout))
        if (w.micro_batch or 1) > 1:
            out.append(("--micro-batch 1", "one sequence per step (accumulate gradients instead)",
                        replace(w, micro_batch=1), precision, layout))
        for gpus in (2, 4, 8, 16, 32, 64, 128, 256):
            if gpus > lay.gpus:
                sharded = Layout(gpus=gpus, zero=3, offload=layout.offload)
                out.append((f"--gpus {gpus} --zero 3", f"ZeRO-3 over {gpus} GPUs", w, precision, sharded))
                if w.recompute != "full":
                    out.append((f"--gpus {gpus} --zero 3 --recompute full", f"ZeRO-3 over {gpus} GPUs, full recompute",
                                replace(w, recompute="full"), precision, sharded))
        if lay.offload == "none":
            out.append(("--offload optimizer", "keep optimizer state in CPU RAM", w, precision,
                        replace(layout, offload="optimizer")))
        if w.task == "train":
            out.append(("--task qlora", "a different job: fine-tune LoRA adapters on a frozen NF4 base", replace(w, task="qlora"),
                        replace(precision, weights=None), layout))
    else:
        if not w.vae_tiling:
            out.append(("--vae-tiling", "decode the image in tiles", replace(w, vae_tiling=True), precision, layout))
        if layout.offload == "none":
            out.append(("--offload params", "model CPU offload", w, precision, replace(layout, offload="params")))
        if fmt.linear_bits > 8:
            out.append(("--weights fp8", "fp8 denoiser", w, replace(precision, weights="fp8"), layout))
            out.append(("--weights nf4", "NF4 denoiser", w, replace(precision, weights="nf4"), layout))
    return out


def _suggestions(model: ModelSpec | DiffusionPipelineSpec, w: Workload, precision: PrecisionPlan, layout: Layout,
                 lay: ResolvedLayout, fmt: WeightFormat, gpu: GpuSpec, overheads: Overheads) -> tuple[Suggestion, ...]:
    found: list[Suggestion] = []
    more_gpus_found = False
    for change, description, w2, p2, l2 in _suggestion_candidates(model, w, precision, layout, lay, fmt):
        if more_gpus_found and change.startswith("--gpus"):
            continue  # the smallest GPU count that fits is the useful one
        try:
            alt = plan(model, w2, precision=p2, layout=l2, gpu=gpu, overheads=overheads, suggest=False,
                       choose_layout=False)
        except InvalidWorkload:
            continue
        if alt.fits and alt.headroom_bytes is not None:
            more_gpus_found = more_gpus_found or change.startswith("--gpus")
            found.append(Suggestion(change=change, description=description, gpus=alt.layout.gpus,
                                    total_bytes=alt.per_gpu.total_bytes, headroom_bytes=alt.headroom_bytes))
    # Fewest GPUs first; among those, changes that keep the job (layout, recompute, offload) before a change of
    # task (QLoRA instead of full training is a different job), then the smallest footprint.
    found.sort(key=lambda s: (s.gpus, s.change.startswith("--task"), s.total_bytes))
    return tuple(found[:6])


def _choose(model: ModelSpec, w: Workload, prec: PrecisionPlan, lay_in: Layout, gpu: GpuSpec,
            ov: Overheads) -> Plan | None:
    """The plan of the layout chosen for the user, or None when nothing is open or nothing fits."""
    from anchorgpu.planner.speed import layouts

    if w.task in ("train", "lora", "qlora"):
        open_knobs = (lay_in.tp is None or lay_in.pp is None or lay_in.dp is None or lay_in.cp is None
                      or (lay_in.zero is None and not lay_in.fsdp) or w.micro_batch is None or w.recompute is None
                      or (lay_in.virtual_stages is None and (lay_in.pp or 1) > 1))
        if not open_knobs:
            return None
        explicit = any(x is not None for x in (lay_in.tp, lay_in.pp, lay_in.dp, lay_in.cp, lay_in.zero)) or lay_in.fsdp
        if explicit and (lay_in.zero is not None or lay_in.fsdp) and w.micro_batch is not None \
                and w.recompute is not None and (lay_in.virtual_stages is not None or (lay_in.pp or 1) == 1):
            return None  # DP and CP follow from what is given: one candidate, nothing to choose
        found = layouts.choose_training_layout(model, w, prec, lay_in, gpu, ov)
        if found is None:
            return None
        choice, chosen = found
        return replace(chosen, assumptions=(choice.reason, *chosen.assumptions))
    if w.task == "inference" and lay_in.gpus is None and lay_in.tp is None and lay_in.pp is None \
            and lay_in.dp is None:
        served = layouts.choose_serving_layout(model, w, prec, lay_in, gpu, ov)
        if served is None:
            return None
        choice, chosen = served
        if chosen.layout.gpus == 1:
            return None  # one GPU is today's default: plan it the usual way
        return replace(chosen, assumptions=(choice.reason, *chosen.assumptions))
    return None


# --------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------

def plan(
    model: ModelSpec | DiffusionPipelineSpec,
    workload: Workload | None = None,
    *,
    precision: PrecisionPlan | None = None,
    layout: Layout | None = None,
    gpu: GpuSpec | None = None,
    overheads: Overheads | None = None,
    suggest: bool = True,
    choose_layout: bool = True,
) -> Plan:
    """Plan one configuration: per-GPU bytes by term, fit verdict and capacity, with assumptions and warnings.

    Defaults (each stated in ``Plan.assumptions`` when used): one GPU; without a layout, inference shards by
    TP across the GPUs of one server (the largest valid TP <= 8 dividing the GPU count, the rest as
    replicas) and training replicates by DP; weights bf16 (nf4-dq for QLoRA); inference checks one sequence
    of the model's context length; a diffusion model plans the diffusion task.

    Raises :class:`anchorgpu.errors.InvalidWorkload` (or ``PartialGpuRequested``) with a one-line reason.

    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> p = plan(llama_3_1_8b(), Workload(context_tokens=8192))
    >>> p.per_gpu.kv_cache_bytes, p.fits
    (1073741824, None)
    """
    w = workload or Workload()
    prec = precision or PrecisionPlan()
    lay_in = layout or Layout()
    ov = overheads or Overheads()
    assumptions: list[str] = []
    if isinstance(model, DiffusionPipelineSpec) and w.task != "diffusion":
        if w.task != "inference":
            raise InvalidWorkload(f"{model.name} is a diffusion pipeline: use --task diffusion (not {w.task})")
        w = replace(w, task="diffusion")
        assumptions.append("A diffusion pipeline: planned as task diffusion (image generation).")
    if isinstance(model, ModelSpec) and w.task == "diffusion":
        raise InvalidWorkload(f"--task diffusion needs a diffusion pipeline; {model.name} is a language model")
    _validate_workload(w)
    if isinstance(model, ModelSpec):
        validate_media(model, w)
    if gpu is not None and w.task in ("train", "lora", "qlora") and w.train_precision in ("fp8", "fp4"):
        has = gpu.fp8_hardware if w.train_precision == "fp8" else gpu.fp4_hardware
        if not has:
            raise InvalidWorkload(f"--train-precision {w.train_precision}: {gpu.name} has no "
                                  f"{w.train_precision.upper()} tensor cores")
    if choose_layout and gpu is not None and isinstance(model, ModelSpec):
        chosen = _choose(model, w, prec, lay_in, gpu, ov)
        if chosen is not None:
            return replace(chosen, assumptions=(*assumptions, *chosen.assumptions))
    fmt = _resolve_format(model, w, prec, assumptions)
    if prec.weights != fmt.name:  # dataclasses.replace costs more than the rest of a small plan
        prec = replace(prec, weights=fmt.name)
    lay = _resolve_layout(model, w, lay_in, assumptions)
    warnings: list[PlanWarning] = []
    if isinstance(model, DiffusionPipelineSpec):
        terms = _diffusion(model, gpu, w, fmt, lay, ov, assumptions)
    elif w.task == "inference":
        terms = _inference(model, gpu, w, prec, fmt, lay, ov, assumptions, warnings)
    else:
        terms = _training(model, gpu, w, fmt, lay, ov, assumptions, warnings)
    if isinstance(model, ModelSpec) and model.moe is not None:
        assumptions.append(f"MoE: all {model.moe.num_experts} experts per layer resident"
                           + (f", split over EP {lay.ep}" if lay.ep > 1 else ", split with TP")
                           + "; compute follows the active experts.")
    warnings += _layout_warnings(terms.workload, lay, gpu) + _precision_warnings(
        fmt, prec, gpu, shipped=isinstance(model, ModelSpec) and fmt.quantized and fmt == shipped_format(model))
    if terms.checkpoint_bytes is not None:
        warnings.append(make_warning("checkpoint_restore_unverified",
                                     f"a checkpoint takes {fmt_bytes(terms.checkpoint_bytes)}: test restoring it"))
    total = terms.per_gpu.total_bytes
    fits = headroom = None
    if terms.budget_bytes is not None:
        headroom = terms.budget_bytes - total
        fits = headroom >= 0
        if not fits:
            warnings.append(make_warning("does_not_fit", f"needs {fmt_bytes(total)} per GPU, "
                                         f"{fmt_bytes(-headroom)} more than the {fmt_bytes(terms.budget_bytes)} available"))
    else:
        warnings.append(make_warning("no_gpu_given", "no GPU named: fit and capacity not evaluated"))
    checks = tuple(dict.fromkeys([WARNING_CODES[x.code].check for x in warnings] + [BASE_CHECK]))
    suggestions: tuple[Suggestion, ...] = ()
    if suggest and fits is False and gpu is not None:
        suggestions = _suggestions(model, terms.workload, prec, lay_in, lay, fmt, gpu, ov)
    if lay.gpus > 1 and w.task in ("train", "lora", "qlora") and lay.zero == 0 and lay_in.zero is None \
            and not lay_in.fsdp:
        assumptions.append(f"Layout not chosen for the user: {'none of the layouts fits' if gpu is not None else 'no GPU named'};"
                           " planned as plain data parallelism.")
    return Plan(
        model=model, gpu=gpu, workload=terms.workload, precision=prec, layout=lay, per_gpu=terms.per_gpu,
        breakdown=dict(terms.breakdown), budget_bytes=terms.budget_bytes, fits=fits, headroom_bytes=headroom,
        max_concurrency=terms.max_concurrency, max_context_tokens=terms.max_context_tokens,
        checkpoint_bytes=terms.checkpoint_bytes, assumptions=tuple(assumptions), warnings=tuple(warnings),
        checks=checks, suggestions=suggestions,
    )
