"""Request and response schemas of the HTTP API's planner: the plan request (the options of ``anchorgpu plan``),
the recommend request (those of ``anchorgpu recommend``) and their answers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, ConfigDict, Field, JsonValue, model_validator

from anchorgpu.api.schemas_base import (
    TEXT_PATTERN,
    TOKENS_ALIAS,
    Money,
    StrictChoice,
    WholeTokens,
    _Request,
    _Schema,
    one_spelling,
)
from anchorgpu.planner.media import MAX_IMAGES_PER_REQUEST
from anchorgpu.planner.speed.overrides import MIN_EFFICIENCY
from anchorgpu.planner.workload_checks import MAX_NETWORK_GBIT_PER_S_PER_GPU
from anchorgpu.validation import LIMITS

__all__ = ["LoraTarget", "PlanOut", "PlanRequest", "RecommendOut", "RecommendRequest", "Task"]

Task = Literal["inference", "train", "lora", "qlora", "diffusion"]

LoraTarget = Literal["q", "k", "v", "o", "gate", "up", "down"]

_ALL_LORA_TARGETS: tuple[LoraTarget, ...] = ("q", "k", "v", "o", "gate", "up", "down")

# the images of a serving request, the same field in the plan and the recommend request (the planner's bounds:
# planner.media.validate_media)
ImagesPerRequest = Annotated[int | None, Field(ge=0, le=MAX_IMAGES_PER_REQUEST, description="Serving a vision-language model: images in each request (default 1 for a model that takes images; refused for a text-only model)")]
ImageResolution = Annotated[str | None, Field(pattern=r"^[0-9]{1,5}x[0-9]{1,5}$", description="Serving a vision-language model: image WIDTHxHEIGHT in pixels (default the model's native resolution)", examples=["1024x1024"])]


_BANDED = "prediction; with _low, _high and _ceiling beside it"
_TIMED = (f"{_BANDED}; a time's _ceiling is its roofline floor, the shortest time no run goes under (the key keeps "
          "the rates' suffix)")

PERFORMANCE_KEYS: dict[str, JsonValue] = {
    "ttft_s": {"description": f"Serving: time to first token, seconds ({_TIMED})"},
    "tpot_s": {"description": f"Serving: time per output token, seconds ({_TIMED}): the steady state's time between one user's tokens, other requests' prefills interleaved (1 / decode_tokens_per_s_per_user). With output_tokens 1 no time passes between tokens: the value is then the seconds per request, and the CLI and the page say TPOT does not apply"},
    "output_tokens_per_s": {"description": f"Serving: output tokens/s of all users at the concurrency ({_BANDED})"},
    "decode_tokens_per_s_per_user": {"description": f"Serving: output tokens/s one user sees; where replicas hold unequal shares of the users, the busiest replica's (its users are the slowest; output_tokens_per_s sums every replica's) ({_BANDED})"},
    "max_output_tokens_per_s": {"description": f"Serving: output tokens/s at saturation ({_BANDED})"},
    "saturation_concurrency": {"description": "Serving: the sequences running at once at saturation"},
    "saturation_full_length_concurrency": {"description": "Serving on a paged KV cache (vLLM): the most sequences that fit at their full prompt + output length, the most a plan at a named concurrency holds (saturation_concurrency counts their average length)"},
    "prompt_tokens": {"description": "Serving: prompt tokens of the requests timed, as each sequence holds them (a vision model's text and image tokens; an encoder-decoder's decoder prompt)"},
    "encoder_input_tokens": {"description": "Serving an encoder-decoder, or a model that reads its images through cross-attention: the positions of the encoder's input (its output's cross-attention K/V is held per sequence)"},
    "encoder_prefill_equivalent_tokens": {"description": "Serving a model with an encoder or a vision tower: its prefill work as prompt tokens of the same cost (2 x active matmul parameters each), timed on top of prompt_tokens and held by no sequence"},
    "output_tokens": {"description": "Serving: output tokens of the requests timed"},
    "train_tokens_per_s": {"description": f"Training: tokens/s of the whole job ({_BANDED})"},
    "train_tflops_per_gpu": {"description": f"Training: model TFLOP/s per GPU, attention counted over the whole sequence as MFU ({_BANDED}: the dense peak times MFU's ceiling)"},
    "train_mfu": {"description": f"Training: model FLOPs utilization, 6·N·D plus attention over the whole sequence (the Llama 3 paper's count, the masked half a causal kernel skips included) over the dense peak ({_BANDED}: the ceiling is every GPU at the peak on the causal work the kernels run, past 1.0 by that count's excess, about 1.07 at 4,096 tokens for an 8B model and 1.7 at 131,072)"},
    "train_time_s": {"description": f"Training with tokens: seconds to train on them ({_TIMED}); null without tokens"},
    "gpu_hours": {"description": f"Training with tokens: GPUs x hours ({_TIMED}); null without tokens"},
    "step_time_s": {"description": f"Training: seconds per optimizer step ({_TIMED}: the step's tokens at the rate's band and ceiling)"},
    "step_time_breakdown_s": {"description": "Training: the step's parts in seconds, predictions without a band: compute, tp_comm, pp_bubble, pp_p2p, cp_comm, dp_sync, fsdp_comm, ep_alltoall, moe_launch, activation_offload, optimizer"},
    "global_batch_tokens": {"description": "Training: tokens per optimizer step (a stated global batch exactly; the default one rounded up to whole micro-batches)"},
    "microbatches": {"description": "Training: micro-batches per data-parallel rank in a step"},
    "pipeline_bubble_fraction": {"description": "Training: share of the step the pipeline bubble takes"},
    "compute_precision": {"description": "Precision of the products timed (bf16, fp8, fp4)"},
    "evidence": {"description": "How this GPU's own measured runs of the kind fell around the prediction: gpu, kind, rows, held_out, basis, median_ratio, low_ratio, high_ratio, summary"},
    "checkpoint_bytes": {"description": "Checkpoint size, bytes"},
    "checkpoint_write_s": {"description": "Training: seconds to write a checkpoint at the stated storage speed"},
    "calibration_version": {"description": "Version of the calibration (speed/data/calibration.json) the figures come from"},
    "decode_bound": {"description": "Serving: what sets the decode pace at the concurrency: 'memory' (bandwidth), 'compute', 'fixed' (per-step launch and framework costs outweigh the GPUs' work) or 'host' (the engine's CPU work per running sequence)"},
    "kv_reservation": {"description": "Serving: how the engine reserves KV cache per sequence: 'average' (vLLM's paged cache, sequences at their average length), 'full' (TensorRT-LLM: a request admitted only when its prompt + output fit) or 'ratio' (SGLang: the average length plus its new_token_ratio of what each request may still write)"},
    "prefill_s": {"description": "Serving: the same figure as ttft_s, under the name of the first contract (its band and ceiling are ttft_s_low, ttft_s_high and ttft_s_ceiling)"},
    "decode_tokens_per_s_total": {"description": "Serving: the same figure as output_tokens_per_s, under the name of the first contract (its band and ceiling are output_tokens_per_s_low, _high and _ceiling)"},
    "train_predicted_mfu": {"description": "Training: the same figure as train_mfu, under the name of the first contract"},
    "network_gbit_per_s_per_gpu": {"description": "Training with network_gbit_per_gpu given: the server-to-server bandwidth each GPU was timed at, Gb/s one direction"},
    "assumptions": {"description": "What the speed estimate assumed"},
    "warnings": {"description": "[{code, message}] about the speed"},
}
"""The documented keys of a plan's ``performance`` section (descriptions only: its values are the estimator's)."""


_TOKENS_NOTE = (f"the CLI's --tokens; also accepted as '{TOKENS_ALIAS}', the name /v1/recommend first gave it; "
                "both given with different values is a 422. Whole optimizer steps: the last is a whole global batch")
TrainTokens = Annotated[int | None, WholeTokens]


def _tokens_field(description: str) -> Any:
    """The training tokens, named ``tokens`` on both planning routes (the CLI's ``--tokens``), ``train_tokens``
    accepted (:func:`~anchorgpu.api.schemas_base.one_spelling` refuses both with different values)."""
    return Field(default=None, ge=LIMITS["tokens"].low, le=LIMITS["tokens"].high,
                 validation_alias=AliasChoices("tokens", TOKENS_ALIAS), description=f"{description} ({_TOKENS_NOTE})")


class PlanRequest(_Request):
    """The options of ``anchorgpu plan`` as JSON (same names without dashes, same defaults). An option the task has no
    use for (``micro_batch`` for inference, ``context`` for train) is a 422 naming it, not ignored; null is not given."""

    # whole requests, which API docs offer as the body to try (built from the fields' own examples alone, a body would
    # set a diffusion resolution and a pipeline layout on a language model's serving plan: a 422); the one with a
    # pipeline layout carries the field's example (Llama-3.1-70B's 80 layers), tests/hardening/test_stop59_qa25fix.py
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"model": "llama-3.1-70b", "gpu": "h100", "gpus": 8, "prompt": 1000, "output_tokens": 1000, "concurrency": 64},
        {"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 64, "train_precision": "fp8",
         "global_batch": 16_777_216, "tokens": 1_000_000_000_000},
        {"model": "llama-3.1-70b", "task": "train", "gpu": "h100", "gpus": 64, "pp": 4,
         "pipeline_layout": "Et*19|(t*21|)*2t*19L"},  # the field's own example, on the model it is written for
    ]})

    model: str = Field(min_length=1, max_length=200, pattern=TEXT_PATTERN, description="Registry name (see /v1/models) or the Hub id of one; other Hub ids only where the server fetches them (ANCHORGPU_HUB_FETCH=1)", examples=["llama-3.1-70b"])
    task: Task = Field(default="inference", description="inference, train (full fine-tune / pretrain), lora, qlora or diffusion")
    gpu: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="GPU name or alias; without one there is no fit verdict", examples=["h100"])
    gpus: int | None = Field(default=None, ge=LIMITS["gpus"].low, le=LIMITS["gpus"].high, description="Whole GPUs in total (default, with a GPU named: the fewest that hold the job, with the layout chosen on them; tp × pp × dp when all three are given)")
    tp: int | None = Field(default=None, ge=LIMITS["tp"].low, le=LIMITS["tp"].high, description="Tensor-parallel ranks")
    pp: int | None = Field(default=None, ge=LIMITS["pp"].low, le=LIMITS["pp"].high, description="Pipeline-parallel stages")
    dp: int | None = Field(default=None, ge=LIMITS["dp"].low, le=LIMITS["dp"].high, description="Data-parallel replicas (memories do not pool)")
    ep: int | None = Field(default=None, ge=LIMITS["ep"].low, le=LIMITS["ep"].high, description="Expert-parallel ranks (MoE)")
    zero: Annotated[Literal[0, 1, 2, 3] | None, StrictChoice] = Field(default=None, description="ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also parameters (training: chosen with the layout when not given)")
    cp: int | None = Field(default=None, ge=LIMITS["cp"].low, le=LIMITS["cp"].high, description="Training: context-parallel ranks (ring attention)")
    virtual_stages: int | None = Field(default=None, ge=LIMITS["virtual_stages"].low, le=LIMITS["virtual_stages"].high, description="Training: interleaved pipeline chunks per GPU (chosen when not given)")
    pipeline_layout: str | None = Field(default=None, min_length=1, max_length=1000, pattern=TEXT_PATTERN, description="Training, with pp: which layers each pipeline chunk holds, in Megatron-Core's --pipeline-model-parallel-layout syntax (E embedding, t layer, L loss, | chunk end, (...)*N repeat); virtual_stages follows from its chunks when not given. The example is Llama-3.1-70B's 80 layers over pp 4, the chunks with the embedding and the loss two layers lighter", examples=["Et*19|(t*21|)*2t*19L"])
    tp_overlap: bool = Field(default=False, description="Training only: overlap tensor-parallel traffic with the products (Transformer Engine / AsyncTP); needs tp > 1 (refused with tp 1; with tp null the chooser tries tp 2 and up)")
    sequence_parallel: bool | None = Field(default=None, description="Training: Megatron's sequence parallelism, the norms, dropout and residual adds split over the TP ranks (null: on with tp > 1; true needs tp > 1)")
    ep_overlap: bool = Field(default=False, description="Training a MoE under EP: overlap the all-to-alls with another micro-batch's computation (Megatron-Core --overlap-moe-expert-parallel-comm, DeepSeek's DualPipe)")
    global_batch: Annotated[int | None, WholeTokens] = Field(default=None, ge=LIMITS["global_batch"].low, le=LIMITS["global_batch"].high, description="Training only: tokens per optimizer step (default 4,194,304; for LoRA and QLoRA 32 sequences); gradient accumulation follows. Whole sequences that split into whole micro-batches per data-parallel rank; never rounded (refused otherwise)")
    fsdp: bool = Field(default=False, description="FSDP full shard (the memory of ZeRO-3)")
    offload: Literal["none", "optimizer", "params"] = Field(default="none", description="Move optimizer state (or also parameters) to CPU RAM")
    offload_activation_layers: int = Field(default=0, ge=0, le=100_000, description="Training: layers whose activations wait in host memory between the forward and backward pass (Megatron-Core's CPU activation offloading, --cpu-offloading-num-layers: full training, one pipeline stage, no recompute)")
    weights: str | None = Field(default=None, max_length=40, pattern=TEXT_PATTERN, description="Weight format: bf16, fp16, fp8, int8, int4-gptq, int4-awq, nf4, nf4-dq, mxfp4, nvfp4, fp8-block128x128, gguf-q4_k_m, …, or shipped (default: the format the checkpoint ships in, per its quantization_config; bf16 for full training and LoRA; nf4-dq for qlora)")
    kv_cache: Literal["bf16", "fp16", "fp8", "nvfp4"] | None = Field(default=None, description="KV-cache precision (default: the FP8 or NVFP4 KV cache the checkpoint ships, per its quantization_config, where the GPU and the engine run it; an NVFP4 one falls back to fp8, else bf16). nvfp4 runs with vLLM on NVIDIA GPUs from Ampere on through FlashInfer (not for MLA models), with engine trtllm on Blackwell only; refused elsewhere (422)")
    recipe: Literal["vllm", "sglang", "trtllm", "torchrun-fsdp", "deepspeed", "accelerate", "skypilot", "k8s"] | None = Field(default=None, description="Also return the launch that realises the plan (command, files, assumptions, what it cannot set) under 'recipe'; one that cannot express the plan is a 422")
    context: int | None = Field(default=None, ge=LIMITS["context"].low, le=LIMITS["context"].high, description="Inference only: tokens per sequence (prompt + output; training's is seq); default prompt + output when given, else the model's context length for one sequence and 1,024 + 256 tokens each for more")
    concurrency: int | None = Field(default=None, ge=LIMITS["concurrency"].low, le=LIMITS["concurrency"].high, description="Inference only: sequences served at once; default: check one and report max_concurrency")
    allow_long_context: bool = Field(default=False, description="Allow a context beyond the model's configured limit")
    gpu_memory_utilization: float | None = Field(default=None, allow_inf_nan=False, gt=0, le=1, description="Inference only: fraction of GPU memory the serving engine may use (vLLM; default 0.9); with engine trtllm the fraction of the memory free after the weights and profiling that the KV cache takes; with engine sglang its mem_fraction_static (default: SGLang's own for the GPU and layout)")
    engine: Literal["vllm", "trtllm", "sglang"] | None = Field(default=None, description="Inference only: the serving engine the memory and admission are sized for: 'vllm' (gpu_memory_utilization is the engine's share of each GPU; pages filled as tokens arrive) or 'trtllm' (trtllm-serve: gpu_memory_utilization is the share of the memory left free after the weights and its profiling pass that the KV cache takes; 8,192 tokens and 2,048 sequences by default; a request is admitted only when its prompt + output fit) or 'sglang' (gpu_memory_utilization is SGLang's mem_fraction_static, the share of the memory free at start for the weights and its one-token-slot KV pool, by default derived from the GPU's memory and the layout as SGLang derives it); default the engine of recipe 'trtllm' or 'sglang', else 'vllm'")
    micro_batch: int | None = Field(default=None, ge=LIMITS["micro_batch"].low, le=LIMITS["micro_batch"].high, description="Training only: sequences per GPU step (chosen with the layout when not given)")
    seq: int | None = Field(default=None, ge=LIMITS["seq"].low, le=LIMITS["seq"].high, description="Training only: tokens per sequence (serving's is context; default 2,048 or the model's context if shorter)")
    recompute: Literal["none", "selective", "moe", "full"] | None = Field(default=None, description="Training only: activation recomputation (default none for train, full for lora/qlora; selective: the attention core, or with train_stack pytorch torchtitan's op-level policy, every other product run again; moe: a mixture of experts' MoE blocks, Megatron-Core's --recompute-modules moe)")
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "lion", "adafactor"] | None = Field(default=None, description="Training only: the optimizer whose state is kept (default adamw)")
    lora_rank: int | None = Field(default=None, ge=LIMITS["lora_rank"].low, le=LIMITS["lora_rank"].high, description="Task lora or qlora only: LoRA rank r (default 16)")
    lora_targets: list[LoraTarget] | None = Field(
        default=None, min_length=1, max_length=7, description=f"Task lora or qlora only: modules that get adapters (default all: {', '.join(_ALL_LORA_TARGETS)})"
    )
    resolution: str | None = Field(default=None, pattern=r"^[0-9]{1,5}x[0-9]{1,5}$", description="Diffusion: output WIDTHxHEIGHT in pixels", examples=["1024x1024"])
    images: int = Field(default=1, ge=LIMITS["images"].low, le=LIMITS["images"].high, description="Diffusion: images per batch")
    vae_tiling: bool = Field(default=False, description="Diffusion: decode the VAE in tiles (bounds the decode peak)")
    images_per_request: ImagesPerRequest = None
    image_resolution: ImageResolution = None
    train_precision: Literal["mixed", "bf16-true", "fp8", "fp4"] | None = Field(default=None, description="Training only: 'mixed' (the default) keeps fp32 master weights and moments; 'bf16-true' keeps neither; 'fp8'/'fp4' compute the products in FP8/FP4 (Transformer Engine style) with mixed-precision state")
    optimizer_state: Literal["fp32", "bf16-moments", "bf16"] | None = Field(default=None, description="Full training only: AdamW's master weights and moments under mixed/fp8/fp4 precision: 'fp32' (12 bytes a parameter), 'bf16-moments' (fp32 master, bf16 moments, 8: Megatron-Core's precision-aware optimizer) or 'bf16' (bf16 master and moments, 6: Apex distributed_fused_adam with dtype bf16, NeMo's SFT); refused with train_precision 'bf16-true', another optimizer or task")
    train_stack: Literal["megatron", "pytorch"] | None = Field(default=None, description="Training only: the training software the plan is for (its speed and what it holds: with pytorch, torchtitan-style selective recompute and an fp32 loss): 'megatron' (Megatron-Core with Transformer Engine, NeMo: fused kernels) or 'pytorch' (torchtitan, FSDP scripts, OLMo-core, llm-foundry: more memory traffic around the products, SDPA's FlashAttention-2 on Hopper); default 'pytorch' with task 'qlora' or recipe 'torchrun-fsdp', 'deepspeed' or 'accelerate', else 'megatron'")
    cross_entropy: Literal["unfused", "native", "te", "eager"] | None = Field(default=None, description="Full training only: the loss, for its memory: 'unfused' (Megatron-Core's default, 6 bytes a logit), 'native' (its fused loss, 6), 'te' (Transformer Engine's fused kernel, 2) or 'eager' (PyTorch's fp32 cross_entropy, 12); default unfused with train_stack megatron, eager with pytorch")
    max_num_batched_tokens: int | None = Field(default=None, ge=LIMITS["max_num_batched_tokens"].low, le=LIMITS["max_num_batched_tokens"].high, description="Inference only: the serving engine's prefill budget, tokens (vLLM's max_num_batched_tokens)")
    max_num_seqs: int | None = Field(default=None, ge=LIMITS["max_num_seqs"].low, le=LIMITS["max_num_seqs"].high, description="Inference only: the serving engine's sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but the A100, else 256): a replica runs at most this many at once")
    prompt: int | None = Field(default=None, ge=LIMITS["prompt"].low, le=LIMITS["prompt"].high, description="Inference only: prompt tokens per request; without 'context' each sequence is sized at prompt + output")
    output_tokens: int | None = Field(default=None, ge=LIMITS["output_tokens"].low, le=LIMITS["output_tokens"].high, description="Inference only: output tokens per request")
    tokens: TrainTokens = _tokens_field("Training only (performance): training tokens, for the training time and GPU-hours")
    mfu: float | None = Field(default=None, allow_inf_nan=False, ge=MIN_EFFICIENCY, le=1, description=f"Performance: model FLOPs utilization ({MIN_EFFICIENCY:g}-1)")
    mbu: float | None = Field(default=None, allow_inf_nan=False, ge=MIN_EFFICIENCY, le=1, description=f"Performance: memory-bandwidth utilization for decode ({MIN_EFFICIENCY:g}-1)")
    network_gbit_per_gpu: float | None = Field(default=None, allow_inf_nan=False, gt=0, le=MAX_NETWORK_GBIT_PER_S_PER_GPU, description="Training only (performance): server-to-server bandwidth each GPU has, Gb/s one direction, that a layout spanning servers is timed at (default: the calibration's 400; the answer's workload.network_gbit_per_s_per_gpu is null then, and performance.network_gbit_per_s_per_gpu gives the figure used where the layout spans servers)")
    cuda_context_mib: int | None = Field(default=None, ge=0, le=65_536, description="Override the CUDA/ROCm context size, MiB")
    fragmentation: float | None = Field(default=None, allow_inf_nan=False, ge=0, le=0.5, description="Override the allocator fragmentation margin (0-0.5)")

    @model_validator(mode="before")
    @classmethod
    def _tokens_once(cls, data: Any) -> Any:
        return one_spelling(data, "tokens", TOKENS_ALIAS)


def _document_recipe(schema: dict[str, Any]) -> None:
    """``recipe``, written only when the request names one (so no null key on every other answer), documented."""
    schema["properties"]["recipe"] = {
        "type": "object", "description": "With recipe in the request only (absent otherwise): the launch that realises "
        "the plan: command, files, assumptions, what it cannot set"}


class PlanOut(_Schema):
    """A plan with the keys of ``anchorgpu plan --json`` (DESIGN.md section 5). Its lines of advice (suggestions, assumptions, warnings, checks) name the request's fields where the CLI names its flags (``tp 4``, not ``--tp 4``), ``POST /v1/recommend with …`` where the CLI names ``recommend --…``; an engine's own flags, and the launch under ``recipe``, are kept as the engine takes them."""

    model: dict[str, Any] = Field(description="The model: name, params_total, params_active, kv_bytes_per_token …")
    gpu: dict[str, Any] | None = Field(description="{name, memory_bytes} of the GPU planned for; null without one")
    gpus: int = Field(description="GPUs in total")
    per_gpu: dict[str, int] = Field(description="Bytes per GPU: weights_bytes, kv_cache_bytes, activations_bytes, gradients_bytes, optimizer_bytes, overhead_bytes, total_bytes")
    fits: bool | None = Field(description="Whether the per-GPU total fits the GPU's memory (serving: its engine budget); null without a GPU")
    max_concurrency: int | None = Field(description="Inference: sequences of the context that fit at once; null otherwise")
    warnings: list[dict[str, Any]] = Field(description="[{code, message, concept}]: what to watch; concept names a glossary entry")
    assumptions: list[str] = Field(default_factory=list, description="Every default the planner chose")
    checks: list[str] = Field(default_factory=list, description="What you must still check yourself")
    headroom_bytes: int | None = Field(default=None, description="GPU memory (serving: the engine's budget) left per GPU; negative when it does not fit")
    budget_bytes: int | None = Field(default=None, description="What the per-GPU total is compared with, bytes: the GPU's memory, or for serving the engine's budget (with gpu_memory_utilization; TensorRT-LLM's and SGLang's as they size it); null without a GPU")
    max_context_tokens: int | None = Field(default=None, description="Inference: the longest context that fits at the planned concurrency, tokens; null otherwise or without a GPU")
    checkpoint_bytes: int | None = Field(default=None, description="Training: the size of a checkpoint (weights and optimizer state), bytes; null for serving")
    workload: dict[str, Any] = Field(default_factory=dict, description="The workload planned, every default filled in: task, engine and engine_source (serving), context_tokens, concurrency, prompt_tokens, output_tokens, seq_tokens, micro_batch, global_batch_tokens, train_precision, train_stack … (null where the task has no use for it)")
    precision: dict[str, str | None] = Field(default_factory=dict, description="{weights, kv_cache, held_weights}: the formats planned; held_weights is what the GPUs hold the weights as ('fp8 + transposes' under FP8 full training, whose weights format stays bf16; otherwise the same as weights)")
    suggestions: list[dict[str, Any]] = Field(default_factory=list, description="Where it does not fit: changes that make it fit, [{change (the request's fields to set, with their values: 'gpus 4 tp 4', 'weights int4-awq'; the CLI's flags as fields, as in every line of advice here), description, gpus, total_bytes, headroom_bytes, train_tokens_per_s (training; null without an estimate) with its band train_tokens_per_s_low and train_tokens_per_s_high (where measured runs of the kind fell; absent without an estimate)}]")
    breakdown: dict[str, int | float] = Field(default_factory=dict, description="The per-GPU terms in finer parts, bytes (and a few token counts named _tokens): weights by kind, KV cache, activations, a diffusion pipeline's components …")
    layout: dict[str, Any] | None = Field(default=None, description="The layout planned (given or chosen): gpus, tp, pp, dp, ep, cp, virtual_stages, zero, fsdp, offload, sequence_parallel, tp_overlap, ep_overlap")
    performance: dict[str, Any] | None = Field(
        default=None, json_schema_extra={"properties": PERFORMANCE_KEYS},
        description="Speed: calibrated predictions, each with its band (*_low, *_high: where measured runs of the "
                    "same kind fell, 10th-90th percentile) and the datasheet roofline beside it (*_ceiling, never the "
                    "answer: a rate's ceiling, the most no run passes; a time's floor, the shortest no run goes under, "
                    "under the same suffix); units in the key names (_s seconds, _per_s per second). Null figures when there is no GPU, "
                    "the plan does not fit, or for a diffusion pipeline (assumptions say why)")

    model_config = ConfigDict(extra="allow", json_schema_extra=lambda schema: _document_recipe(schema))


class RecommendRequest(_Request):
    """The options of ``anchorgpu recommend`` as JSON: a workload, a term, and limits on price and speed. An option the
    task has no use for is a 422 naming it, not ignored; null is not given."""

    model_config = ConfigDict(json_schema_extra={"examples": [  # whole requests, as PlanRequest's
        {"model": "llama-3.1-8b", "prompt": 1000, "output_tokens": 200, "concurrency": 64, "max_ttft_s": 1.0},
        {"model": "llama-3.1-8b", "task": "train", "train_tokens": 100_000_000_000, "train_precision": "fp8"},
    ]})

    model: str = Field(min_length=1, max_length=200, pattern=TEXT_PATTERN, description="Registry name (see /v1/models) or the Hub id of one (other Hub ids only where ANCHORGPU_HUB_FETCH=1; language models and diffusion pipelines)", examples=["llama-3.1-8b"])
    task: Literal["inference", "train", "lora", "qlora", "diffusion"] = Field(default="inference", description="inference, train, lora or qlora; a diffusion pipeline is always planned as diffusion")
    term: str = Field(default="1month", min_length=2, max_length=20, pattern=TEXT_PATTERN, description="Rental term to price: 'Nh', 'Nw' (168 h) or 'Nmonth' (720 h)")
    gpu: str | None = Field(default=None, max_length=100, pattern=TEXT_PATTERN, description="Only offerings of this GPU (name or alias)")
    context: int | None = Field(default=None, ge=1, le=10_000_000, description="Inference only: tokens per sequence (prompt + output; training's is seq); default prompt + output when given, else each concurrency as plan sizes it: the model's context length for one sequence, 1,024 + 256 tokens each for more")
    prompt: int | None = Field(default=None, ge=LIMITS["prompt"].low, le=LIMITS["prompt"].high, description="Inference only: prompt tokens per request; without 'context' each sequence is sized at prompt + output")
    concurrency: int | None = Field(default=None, ge=LIMITS["concurrency"].low, le=LIMITS["concurrency"].high, description="Inference only: sequences served at once")
    max_num_seqs: int | None = Field(default=None, ge=LIMITS["max_num_seqs"].low, le=LIMITS["max_num_seqs"].high, description="Inference only: the serving engine's sequence cap, vLLM's max_num_seqs (default 1,024 on GPUs of 70 GiB or more but the A100, else 256): a replica runs at most this many at once")
    engine: Literal["vllm", "trtllm", "sglang"] | None = Field(default=None, description="Inference only: the serving engine the memory and admission are sized for: 'vllm' (gpu_memory_utilization is the engine's share of each GPU; pages filled as tokens arrive) or 'trtllm' (trtllm-serve: gpu_memory_utilization is the share of the memory left free after the weights and its profiling pass that the KV cache takes; 8,192 tokens and 2,048 sequences by default; a request is admitted only when its prompt + output fit) or 'sglang' (gpu_memory_utilization is SGLang's mem_fraction_static, the share of the memory free at start for the weights and its one-token-slot KV pool, by default derived from the GPU's memory and the layout as SGLang derives it); default the engine of recipe 'trtllm' or 'sglang', else 'vllm'")
    weights: str | None = Field(default=None, max_length=120, pattern=TEXT_PATTERN, description="Weight format, or a comma list to compare ('bf16,fp8'); default: the plan's (the checkpoint's shipped format; training bf16). Rows below it carry lower_precision", examples=["bf16"])
    kv_cache: Literal["bf16", "fp16", "fp8", "nvfp4"] | None = Field(default=None, description="KV-cache precision; default the plan's (the FP8 or NVFP4 KV cache the checkpoint ships on GPUs with the hardware for it; else fp8 or bf16). nvfp4 rejects the offerings where the engine does not run it")
    lower_precision: bool = Field(default=False, description="Inference only: also consider fp8/int4-awq weights and an fp8 KV cache below the checkpoint's precision; such rows say outputs change and evaluations should be rerun")
    recipe: Literal["vllm", "sglang", "trtllm", "torchrun-fsdp", "deepspeed", "accelerate", "skypilot", "k8s"] | None = Field(default=None, description="Also write each result's launch under its 'recipe' (null with 'recipe_refused' where it cannot express that result's plan)")
    micro_batch: int | None = Field(default=None, ge=LIMITS["micro_batch"].low, le=LIMITS["micro_batch"].high, description="Training only: sequences per GPU step (chosen per layout when not given: 1, 2 or 4, the fastest that fits, as plan chooses)")
    seq: int | None = Field(default=None, ge=1, le=10_000_000, description="Training only: tokens per sequence (serving's is context; default 2,048 or the model's context if shorter)")
    global_batch: Annotated[int | None, WholeTokens] = Field(default=None, ge=LIMITS["global_batch"].low, le=LIMITS["global_batch"].high, description="Training only: tokens per optimizer step (default 4,194,304; for LoRA and QLoRA 32 sequences); gradient accumulation follows. Whole sequences that split into whole micro-batches per data-parallel rank; never rounded (refused otherwise)")
    recompute: Literal["none", "selective", "moe", "full"] | None = Field(default=None, description="Training only: activation recomputation (default: the least that fits each offering, none, then selective, then full; moe: a mixture of experts' MoE blocks)")
    optimizer: Literal["adamw", "adamw-8bit", "sgd", "lion", "adafactor"] | None = Field(default=None, description="Training only: the optimizer whose state is kept (default adamw)")
    lora_rank: int | None = Field(default=None, ge=LIMITS["lora_rank"].low, le=LIMITS["lora_rank"].high, description="Task lora or qlora only: LoRA rank r (default 16)")
    tokens: TrainTokens = _tokens_field("Training only: tokens to train on, for the run's time and price")
    train_precision: Literal["mixed", "bf16-true", "fp8", "fp4"] | None = Field(default=None, description="Training only: 'mixed' (the default) keeps fp32 master weights and moments; 'bf16-true' keeps neither; 'fp8'/'fp4' compute the products in FP8/FP4 (Transformer Engine style): offerings whose GPU lacks those tensor cores are rejected")
    optimizer_state: Literal["fp32", "bf16-moments", "bf16"] | None = Field(default=None, description="Full training only: AdamW's master weights and moments under mixed/fp8/fp4 precision: 'fp32' (the default, 12 bytes a parameter), 'bf16-moments' (fp32 master, bf16 moments, 8) or 'bf16' (bf16 master and moments, 6)")
    cross_entropy: Literal["unfused", "native", "te", "eager"] | None = Field(default=None, description="Full training only: the loss, for its memory: 'unfused' (Megatron-Core's default, 6 bytes a logit), 'native' (its fused loss, 6), 'te' (Transformer Engine's fused kernel, 2) or 'eager' (PyTorch's fp32 cross_entropy, 12); default unfused with train_stack megatron, eager with pytorch")
    train_stack: Literal["megatron", "pytorch"] | None = Field(default=None, description="Training only: the training software the speeds and memory are for: 'megatron' (Megatron-Core with Transformer Engine, NeMo: fused kernels) or 'pytorch' (torchtitan, FSDP scripts, OLMo-core, llm-foundry); default 'pytorch' with task 'qlora' or recipe 'torchrun-fsdp', 'deepspeed' or 'accelerate', else 'megatron'")
    output_tokens: int | None = Field(default=None, ge=LIMITS["output_tokens"].low, le=LIMITS["output_tokens"].high, description="Inference only: tokens generated per request (default 256)")
    images_per_request: ImagesPerRequest = None
    image_resolution: ImageResolution = None
    resolution: str | None = Field(default=None, pattern=r"^[0-9]{1,5}x[0-9]{1,5}$", description="Diffusion pipeline: output WIDTHxHEIGHT in pixels", examples=["1024x1024"])
    images: int = Field(default=1, ge=LIMITS["images"].low, le=LIMITS["images"].high, description="Diffusion pipeline: images per batch")
    vae_tiling: bool = Field(default=False, description="Diffusion pipeline: decode the VAE in tiles")
    max_usd: Money("max_usd") | None = Field(  # type: ignore[valid-type]
        default=None, strict=False,
        description="At most this, USD: a training run's price (run_usd) where tokens is given, else the total for the term (a JSON number or a plain decimal string such as \"20000.50\")")
    min_tokens_per_s_per_user: float | None = Field(default=None, gt=LIMITS["min_tokens_per_s_per_user"].low, le=LIMITS["min_tokens_per_s_per_user"].high, allow_inf_nan=False, description="Inference only: keep configurations whose predicted decode tokens/s per user (the calibrated figure, not its ceiling) at their concurrency is at least this (20: a token every 50 ms); each offering keeps the fastest layout that meets it. The response's limits says how many offerings it turned away")
    max_ttft_s: float | None = Field(default=None, gt=LIMITS["max_ttft_s"].low, le=LIMITS["max_ttft_s"].high, allow_inf_nan=False, description="Inference only: keep configurations whose predicted time to the first token (ttft_s) at their concurrency is at most this many seconds")
    gpu_memory_utilization: float | None = Field(default=None, allow_inf_nan=False, gt=0, le=1, description="Inference only: fraction of GPU memory the serving engine may use (vLLM; default 0.9); with engine trtllm the fraction of the memory free after the weights and profiling that the KV cache takes; with engine sglang its mem_fraction_static (default: SGLang's own for the GPU and layout)")
    allow_long_context: bool = Field(default=False, description="Allow a context (or training sequence) beyond the model's configured limit")
    mfu: float | None = Field(default=None, allow_inf_nan=False, ge=MIN_EFFICIENCY, le=1, description=f"Performance: model FLOPs utilization ({MIN_EFFICIENCY:g}-1; default: the calibrated efficiencies)")
    mbu: float | None = Field(default=None, allow_inf_nan=False, ge=MIN_EFFICIENCY, le=1, description=f"Performance: memory-bandwidth utilization for decode ({MIN_EFFICIENCY:g}-1; default: the calibrated efficiencies)")
    top: int = Field(default=10, ge=LIMITS["top"].low, le=LIMITS["top"].high, description="How many results")
    max_servers: int = Field(default=4, ge=1, le=16, description="Most servers of one offering to consider")

    @model_validator(mode="before")
    @classmethod
    def _tokens_once(cls, data: Any) -> Any:
        return one_spelling(data, "tokens", TOKENS_ALIAS)


class RecommendOut(_Schema):
    """Recommendations with the keys of ``anchorgpu recommend --json``, cheapest first. Its lines of advice (rejected reasons, assumptions, warnings, recipe_refused) name the request's fields where the CLI names its flags (``train_precision fp8``), ``POST /v1/plan with …`` where the CLI names ``plan --…``; an engine's own flags, and each launch under ``recipe``, are kept as the engine takes them."""

    model: Any = Field(description="The model planned")
    term: str = Field(description="The term priced")
    term_hours: int = Field(description="The term in hours (a week 168, a month 720)")
    workload: dict[str, Any] = Field(description="The workload swept, every default filled in: task, context_tokens, concurrency, prompt_tokens, output_tokens, seq_tokens, train_tokens, global_batch_tokens … (null where the task has no use for it)")
    evaluated: int = Field(description="Configurations evaluated (offering x server count x layout x precision x concurrency)")
    results: list[dict[str, Any]] = Field(description="Offerings that fit, cheapest first: offering, servers, gpus, layout, per_gpu bytes, the speed predictions (decode_tokens_per_s_total, decode_tokens_per_s_per_user, prefill_s, and the same as plan names them: output_tokens_per_s, ttft_s, tpot_s (1 / decode_tokens_per_s_per_user); max_output_tokens_per_s, plan's rate at the largest concurrency that fits; train_tokens_per_s, train_time_s, gpu_hours (GPUs x train_time_s / 3,600; null without train_tokens), train_tflops_per_gpu (model TFLOP/s per GPU) and train_mfu (model FLOPs utilization, a fraction of the dense peak), as plan gives them for the row's layout) each with its band (*_low, *_high) and roofline bound (*_ceiling, never the prediction: a rate's ceiling; train_time_s's and ttft_s's a floor, the shortest time); a training row's step_time_breakdown_s, its step's parts in seconds without a band, as plan's (compute, tp_comm, pp_bubble, pp_p2p, cp_comm, dp_sync, fsdp_comm, ep_alltoall, moe_launch, activation_offload, optimizer); total_usd; run_hours, run_usd and run_term for a training run with train_tokens (run_usd null, with run_refused saying why, where the run is longer than any term a quote prices); network_gbit_per_s_per_gpu, the network between servers a training row's GPUs are timed over, each GPU's share one way (null where they share one server or scale-up domain; warning training_over_public_network where only the servers' public uplinks join them); max_model_len_tokens where no context was given and the row's KV cache holds no whole-window sequence (the maximum length to start its engine with, as plan's launch sets it); training where no layout without offload fits the offering's GPUs: the layout POST /v1/plan with offload optimizer chooses on them, layout.offload 'optimizer', offloaded_optimizer_bytes (a GPU's share of the optimizer state in host memory), offloaded_gradients_bytes (the gradient partition its update reads beside it: fp32 under mixed precision, bf16 under bf16-true) and host_bytes_per_server (the host memory of the server's ranks together, held within the server's RAM: each rank's offloaded_optimizer_bytes and offloaded_gradients_bytes and, where DeepSpeed ZeRO-Offload runs it (--train-stack pytorch without FSDP), its pinned bf16 copy of the partition and its pinned gradient staging buffer of the largest parameter (plan's breakdown: offloaded_bf16_buffer_bytes, offloaded_gradient_staging_bytes); not the OS, the data loader or a checkpoint being loaded), warning offload_slows_training; warnings thin_training_headroom or eager_activations_exceed_headroom where plan gives them for the same layout …")
    pareto: list[dict[str, Any]] = Field(description="The cost/speed Pareto front among the results")
    rejected: list[dict[str, Any]] = Field(description="Cheaper options that were rejected, with the reason (naming the request's fields, 'train_precision fp8: a100-80gb-sxm has no FP8 tensor cores', as every line of advice here does)")
    assumptions: list[str] = Field(description="Every default chosen")
    warnings: list[dict[str, Any]] = Field(description="[{code, message}]")
    limits: dict[str, Any] | None = Field(default=None, description="Inference: the per-user limits applied (min_tokens_per_s_per_user, max_ttft_s; null where not given) and, for each, the offerings and (offering, server count) options that fit but lost every configuration to it (dropped)")
