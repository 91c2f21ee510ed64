"""What the planner is asked: workload, precision, parallel layout and runtime overheads. Pure; stdlib only.

All inputs are frozen values; ``None`` in a field means "use the stated default", which the planner
resolves and reports back in :class:`anchorgpu.planner.Plan` (``workload``, ``precision``, ``layout``)
together with an assumption line saying what it chose.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from anchorgpu.errors import said
from anchorgpu.planner._frozen import fast_init
from anchorgpu.units import GIB, MIB

if TYPE_CHECKING:
    pass

__all__ = [
    "ALL_LORA_TARGETS",
    "CROSS_ENTROPY_IMPLS",
    "CrossEntropy",
    "DEFAULT_GPU_MEMORY_UTILIZATION",
    "ENGINES",
    "Engine",
    "KV_CACHE_AUTO",
    "KV_CACHE_DTYPES",
    "OFFLOADS",
    "OPTIMIZERS",
    "OPTIMIZER_STATES",
    "RECOMPUTES",
    "TASKS",
    "TRAINING_TASKS",
    "DEFAULT_CONTEXT_CAP_TOKENS",
    "default_context_tokens",
    "TRAIN_PRECISIONS",
    "TRAIN_STACKS",
    "Layout",
    "Offload",
    "Optimizer",
    "OptimizerState",
    "Overheads",
    "PrecisionPlan",
    "Recompute",
    "Task",
    "TrainPrecision",
    "TrainStack",
    "Workload",
    "workload_of",
    "default_seq_tokens",
    "DEFAULT_OUTPUT_TOKENS",
    "DEFAULT_PROMPT_TOKENS",
    "recompute_ladder",
]

Task = Literal["inference", "train", "lora", "qlora", "diffusion"]
TASKS: tuple[Task, ...] = ("inference", "train", "lora", "qlora", "diffusion")
TASK_SYNONYMS: dict[str, Task] = {"serve": "inference", "serving": "inference", "infer": "inference",
                                   "training": "train", "pretrain": "train", "pretraining": "train"}
"""Words for a task that are not its name: refused with the name meant (``--task serve``: did you mean 'inference'?),
not taken as it. Each task has one spelling in every face and in the answers' ``workload.task`` (DESIGN.md's JSON
contract), and ``anchorgpu serve`` is the command that starts the API, not a workload."""


def task_meant(task: object) -> Task | None:
    """The task a synonym names (``serve``: ``inference``), or whose name the word is in another case (``Inference``:
    the contract's one spelling is the lower-case one, which the CLI's options lower a word to and the API's schema
    asks for), else None.

    >>> task_meant(" Serving "), task_meant("Inference"), task_meant("QLORA"), task_meant("inference"), task_meant("cooking")
    ('inference', 'inference', 'qlora', None, None)
    """
    if not isinstance(task, str):
        return None
    word = task.strip().lower()
    for name in TASKS:
        if word == name:
            return name if task != name else None
    return TASK_SYNONYMS.get(word)


def task_hint(task: object) -> str:
    """What a refusal of the unknown ``task`` adds: the task meant where the word is a synonym of one.

    >>> task_hint("Serve"), task_hint("training"), task_hint("cooking")
    ("; did you mean 'inference'?", "; did you mean 'train'?", '')
    """
    meant = task_meant(task)
    return said("; did you mean {choices}?", choices=repr(meant)) if meant else ""


TRAINING_TASKS: tuple[Task, ...] = ("train", "lora", "qlora")
"""The tasks that run a training step (full training and the two adapter methods)."""
Recompute = Literal["none", "selective", "moe", "full"]
RECOMPUTES: tuple[Recompute, ...] = ("none", "selective", "moe", "full")
"""Activation recompute, least to most memory saved: ``selective`` the attention core (Korthikanti et al. 2022; on
the PyTorch-native stack torchtitan's op-level policy, :mod:`anchorgpu.planner.memory.op_sac`),
``moe`` a mixture of experts' MoE blocks (Megatron-Core's ``--recompute-granularity selective --recompute-modules
moe``: each keeps its input and runs its routing, all-to-alls and expert products again in the backward pass),
``full`` whole layers."""


def recompute_ladder(is_moe: bool) -> tuple[Recompute, ...]:
    """The recompute levels a search tries, least first: ``moe`` only for a mixture of experts.

    >>> recompute_ladder(False), recompute_ladder(True)[2]
    (('none', 'selective', 'full'), 'moe')
    """
    return RECOMPUTES if is_moe else tuple(rc for rc in RECOMPUTES if rc != "moe")
Optimizer = Literal["adamw", "adamw-8bit", "sgd", "lion", "adafactor"]
OPTIMIZERS: tuple[Optimizer, ...] = ("adamw", "adamw-8bit", "sgd", "lion", "adafactor")
OptimizerState = Literal["fp32", "bf16-moments", "bf16"]
OPTIMIZER_STATES: tuple[OptimizerState, ...] = ("fp32", "bf16-moments", "bf16")
"""The precision of AdamW's state under mixed, FP8 or FP4 training (``--optimizer-state``): ``fp32`` master weights and
moments (the default, ZeRO's 12 bytes a parameter), ``bf16-moments`` (fp32 master, bf16 moments: Megatron-Core's
precision-aware optimizer with ``--exp-avg-dtype bf16 --exp-avg-sq-dtype bf16``, DeepSeek-V3), ``bf16`` (a bf16 master
copy and bf16 moments: Apex's ``distributed_fused_adam`` with ``dtype: bf16``, NeMo's SFT configs). Bytes and sources in
:data:`anchorgpu.planner.memory.model_states.OPTIMIZER_STATE_BYTES`."""
Offload = Literal["none", "optimizer", "params"]
OFFLOADS: tuple[Offload, ...] = ("none", "optimizer", "params")
TrainPrecision = Literal["mixed", "bf16-true", "fp8", "fp4"]
TrainStack = Literal["megatron", "pytorch"]
"""The training software a speed estimate is for: ``megatron`` (Megatron-Core with Transformer Engine, NeMo,
Megatron-Bridge: fused norms, activations and attention, what the constants are fitted on) or ``pytorch`` (PyTorch-
native stacks such as torchtitan, OLMo-core, llm-foundry and FSDP training scripts: more memory traffic in the
operators around the products, and SDPA's FlashAttention-2 kernel on Hopper)."""
TRAIN_PRECISIONS: tuple[TrainPrecision, ...] = ("mixed", "bf16-true", "fp8", "fp4")
TRAIN_STACKS: tuple[TrainStack, ...] = ("megatron", "pytorch")
CrossEntropy = Literal["unfused", "native", "te", "eager"]
CROSS_ENTROPY_IMPLS: tuple[CrossEntropy, ...] = ("unfused", "native", "te", "eager")
"""The loss's cross-entropy (what it holds: :mod:`anchorgpu.planner.memory.loss`): unfused, Megatron-Core's
``vocab_parallel_cross_entropy`` (``--cross-entropy-loss-fusion`` off); native, its fused version
(``--cross-entropy-fusion-impl native``); te, Transformer Engine's fused kernel (``--cross-entropy-fusion-impl te``);
eager, PyTorch's ``cross_entropy`` on the logits cast to fp32."""
KV_CACHE_DTYPES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "nvfp4": 0.5625}
"""Bytes per cached value of each KV-cache dtype. ``nvfp4``: FP4 E2M1 values (half a byte) and one FP8 E4M3 scale
per 16 of them, 0.5 + 1/16 bytes, as all three engines store it: vLLM 0.33.0 ``nvfp4_kv_cache_full_dim`` (a head of
``d`` values takes ``d // 2 + d // 16`` bytes), TensorRT-LLM ``KVCacheManager.get_cache_size_per_token`` ("1 bytes
for 2 elements, and SFs (fp8) per 16 elements") and SGLang 0.5.23 ``MHATokenToKVPoolFP4`` (a ``n·d // 2`` buffer
and a ``n·d // 16`` one-byte scale buffer a token). The fp32 scales per layer (K and V) are not counted."""
KV_CACHE_AUTO = "auto"
"""``PrecisionPlan.kv_cache`` when none is asked for: the KV dtype the checkpoint ships (an FP8 KV cache on a GPU
with FP8 hardware, an NVFP4 one where the workload's engine runs it on the GPU, else the nearest the GPU runs:
:func:`anchorgpu.planner.validate.default_kv_cache`), else bf16, as the engines' ``auto`` resolves it; ``plan()``
states which, and its ``Plan.precision`` holds the dtype planned."""
Engine = Literal["vllm", "trtllm", "sglang"]
ENGINES: tuple[Engine, ...] = ("vllm", "trtllm", "sglang")
"""Serving engines whose memory sizing and admission the planner models: vLLM V1 (its ``gpu_memory_utilization``
budget, paged admission), TensorRT-LLM's PyTorch backend as ``trtllm-serve`` runs it (a fraction of the memory
free after its profiling pass, GUARANTEED_NO_EVICT admission) and SGLang (``mem_fraction_static`` of the memory free
at start for the weights and a token-granular KV pool, its default derived from the GPU's memory and the layout:
:mod:`anchorgpu.planner.sglang`)."""
EngineSource = Literal["given", "default", "recipe"]
"""How the serving engine was chosen: named by the user (``--engine``), vLLM by default, or the engine of the launch
asked for (``--recipe trtllm``, ``--recipe sglang``); a refusal says which, so it never names an ``--engine`` nobody
gave."""
DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's ``gpu_memory_utilization`` and TensorRT-LLM's ``free_gpu_memory_fraction`` as the planner sizes them when
none is given (SGLang derives its own ``mem_fraction_static``: :func:`anchorgpu.planner.sglang.sglang_settings`)."""
ALL_LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """What runs on the GPUs. Fields left ``None`` are resolved to stated defaults.

    Inference: ``context_tokens`` per sequence (prompt + output; default the model's context length for one
    sequence, the default request of ``DEFAULT_PROMPT_TOKENS + DEFAULT_OUTPUT_TOKENS`` for ``concurrency`` above 1),
    ``concurrency`` sequences at once (default: check one and report the maximum).
    With ``prompt_tokens``/``output_tokens`` and no ``context_tokens``, each sequence is sized at their sum.
    Training (train/lora/qlora): ``micro_batch`` sequences of ``seq_tokens`` per GPU step (``None``: chosen
    with the layout, else 1); ``global_batch_tokens`` per optimizer step (gradient accumulation follows).
    ``train_precision``: ``mixed`` (BF16 compute, fp32 master and moments), ``bf16-true``, ``fp8`` (FP8
    matrix products as Transformer Engine runs them, with its FP8 weight copies) or ``fp4``; ``optimizer_state``: the
    precision of their AdamW master weights and moments (:data:`OPTIMIZER_STATES`, full training only).
    ``network_gbit_per_s_per_gpu``: each GPU's bandwidth to other servers, one direction, that a training step whose
    layout spans servers is timed at (``None``: the calibration's stated ``Calibration.network_bytes_per_s``).
    Diffusion: ``resolution`` (width, height) in pixels, ``images`` per batch, ``vae_tiling``.
    Serving ``engine``: ``vllm`` (``gpu_memory_utilization`` is the share of each GPU's memory the engine may take)
    or ``trtllm`` (it is the share of the memory left free after the weights and the profiling pass that the KV
    cache takes, TensorRT-LLM's ``free_gpu_memory_fraction``) or ``sglang`` (it is ``mem_fraction_static``, the share
    of the memory free at start for the weights and the KV pool); see :data:`ENGINES`. ``gpu_memory_utilization`` and
    ``block_size_tokens`` left ``None`` take the engine's defaults (:data:`DEFAULT_GPU_MEMORY_UTILIZATION`, SGLang's
    derived fraction; :func:`block_size_of`); a plan's workload holds them resolved.
    """

    task: Task = "inference"
    engine: Engine = "vllm"
    engine_source: EngineSource = "given"  # the faces say "default" or "recipe" where they chose the engine
    context_tokens: int | None = None
    concurrency: int | None = None
    allow_long_context: bool = False
    gpu_memory_utilization: float | None = None  # None: the engine's default (a plan's workload holds it resolved)
    max_num_batched_tokens: int | None = None  # vLLM's prefill chunk budget (SGLang's chunked_prefill_size); default by GPU size
    max_num_seqs: int | None = None  # vLLM's sequence cap (SGLang's max_running_requests); default by GPU size
    block_size_tokens: int | None = None  # KV-cache page size; None: the engine's (block_size_of)
    # the TP ranks run attention data-parallel (TensorRT-LLM's enable_attention_dp) while the layout is timed as TP:
    # each rank keeps its own sequences' KV cache with every KV head, none replicated (memory.kv_values_per_token_per_gpu);
    # set by measured rows (speed/runs.py attention_dp_weights), a user's attention-DP plan being --tp 1 --ep N
    attention_dp_kv: bool = False
    # TensorRT-LLM's moe_config.backend ("TRTLLM", "CUTLASS", "TRITON"); None: its AUTO default's choice for the model,
    # GPU and weights (speed.moe_backend.trtllm_moe_backend); set by measured rows that state it (speed/runs.py)
    moe_backend: str | None = None
    # TensorRT-LLM's attention_dp_config.enable_balance (default off): an attention-DP rank holds its new prompts
    # until every rank has one, so the ranks' prompts share steps (speed.batching._steady); set by measured rows
    # that state it (speed/runs.py)
    attention_dp_balance: bool = False
    micro_batch: int | None = None
    global_batch_tokens: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    seq_tokens: int | None = None
    recompute: Recompute | None = None  # default: none (train), full (lora, qlora)
    # Megatron-Core's CPU activation offloading (--cpu-offloading-num-layers): the first N layers' activations kept in
    # host memory between the forward and the backward pass (full training, no pipeline stages, no recompute)
    offload_activation_layers: int = 0
    optimizer: Optimizer = "adamw"
    train_stack: TrainStack = "megatron"  # which training software runs the step: its speed and what it holds
    # False where the launch asked for runs no pipeline stages (--recipe torchrun-fsdp, deepspeed, accelerate:
    # engine_choice.launches_stages): the layout chooser and recommend's sweep hold PP at 1, the rest open; and TP and
    # CP at 1 where it runs neither (--recipe deepspeed: engine_choice.launches_tp_cp)
    launch_stages: bool = True
    launch_tp_cp: bool = True
    # True where the launch asked for is accelerate's (--recipe accelerate: engine_choice.launches_accelerate): under
    # FP8 its DeepSpeed plugin's default reduce bucket (the plugin's keys cannot set it; every other accelerate
    # DeepSpeed launch writes ds_config.json); its FSDP2 units are torchtitan's (accelerate 1.15.0 fsdp2_prepare_model)
    launch_accelerate: bool = False
    # True where the launch asked for is DeepSpeed's own (--recipe deepspeed: engine_choice.launches_deepspeed): at
    # ZeRO-3 its reduce bucket (stage3.py __init__ "# IPG"), held for the whole run, beyond FSDP2's units
    launch_deepspeed: bool = False
    # True where the launch asked for is torchrun-fsdp's (engine_choice.launches_torchrun_fsdp): its ZeRO-1/2 is FSDP2
    # without resharding after forward (training_pipeline.fsdp2_unresharded), not DeepSpeed's ZeRO-1/2
    launch_torchrun_fsdp: bool = False
    cross_entropy: CrossEntropy | None = None  # the loss's implementation (full training); None: the stack's default
    train_precision: TrainPrecision = "mixed"  # mixed: fp32 master + fp32 moments; bf16-true: none of that
    optimizer_state: OptimizerState = "fp32"  # AdamW's master and moments under mixed/fp8/fp4 (OPTIMIZER_STATES)
    grad_bytes_per_value: int = 2  # 2 as in ZeRO's accounting; 4 for Megatron's fp32 gradient buffers
    # server-to-server bandwidth a GPU has, one direction, in Gb/s, for a training layout that spans servers (None:
    # the calibration's stated default, calibration.json network_gbit_per_s_per_gpu)
    network_gbit_per_s_per_gpu: float | None = None
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = ALL_LORA_TARGETS
    resolution: tuple[int, int] | None = None
    images: int = 1
    vae_tiling: bool = False
    # Multimodal serving: images in each request (None: 1 for a model that takes images, else 0) and their
    # size in pixels, width × height (None: the model's native resolution). See ``planner.media``.
    images_per_request: int | None = None
    image_resolution: tuple[int, int] | None = None


def workload_of(**options: object) -> Workload:
    """The :class:`Workload` of the options a face was given: one left ``None`` (not given) takes the workload's
    default, the one place those defaults live (the faces' options default to ``None`` so that an option given can be
    told from one left alone: :func:`anchorgpu.planner.validate.check_task_options`).

    >>> workload_of(task="train", optimizer=None, micro_batch=2).optimizer
    'adamw'
    """
    return Workload(**{k: v for k, v in options.items() if v is not None})  # type: ignore[arg-type]  # validated by plan()


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionPlan:
    """Storage formats: ``weights`` (see :data:`anchorgpu.planner.formats.WEIGHT_FORMATS`; default bf16,
    or nf4-dq for QLoRA) and the KV-cache dtype (bf16, fp16, fp8 or nvfp4; default :data:`KV_CACHE_AUTO`, the
    checkpoint's quantized KV cache where it ships one and the GPU has the hardware for it, else bf16)."""

    weights: str | None = None
    kv_cache: str = KV_CACHE_AUTO


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """How the work is split over GPUs. ``None`` fields are resolved (see ``plan``'s docstring).

    ``zero`` is the ZeRO stage (0-3; ``None``: chosen for training); ``fsdp`` means FSDP FULL_SHARD (the
    memory of ZeRO-3). ``cp`` is context parallelism (ring attention), ``virtual_stages`` the interleaved
    pipeline chunks per GPU (``None``: chosen), ``tp_overlap`` overlaps tensor-parallel traffic with GEMMs,
    ``ep_overlap`` a mixture of experts' all-to-alls with another micro-batch's computation (training under EP).
    ``offload`` moves optimizer state (``optimizer``) or also the parameters (``params``) to CPU RAM.
    ``pipeline_layout`` states which layers each pipeline chunk holds, in Megatron-Core's
    ``--pipeline-model-parallel-layout`` syntax (:mod:`anchorgpu.planner.pipeline_layout`); with it ``pp * v`` need not
    divide the layers, and ``virtual_stages`` follows from its chunks when not given. ``sequence_parallel``: Megatron's
    sequence parallelism, the norms, dropout and residual adds split over the TP ranks (``None``: on with TP > 1 for
    training; stated only for training, and on only with TP > 1).
    """

    gpus: int | None = None
    tp: int | None = None
    pp: int | None = None
    dp: int | None = None
    ep: int | None = None
    cp: int | None = None
    virtual_stages: int | None = None
    zero: int | None = None
    tp_overlap: bool = False
    ep_overlap: bool = False
    fsdp: bool = False
    offload: Offload = "none"
    pipeline_layout: str | None = None
    sequence_parallel: bool | None = None


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class Overheads:
    """Runtime memory outside the model's tensors, per GPU. Every figure is an assumption; override freely.

    Sources: CUDA context 300 MiB-2 GiB (asmirnov's VRAM calculator notes; gpu_poor uses 650 MB);
    vLLM non-torch memory 0.13-0.15 GiB at TP 1 and about 0.6 GiB at TP >= 2 (llm-d capacity planner,
    empirical-vllm-memory-results.md); allocator fragmentation 5-10 % (formulas.md section 10).
    """

    cuda_context_bytes: int = 512 * MIB
    rocm_context_bytes: int = 768 * MIB
    cublas_workspace_bytes: int = 64 * MIB
    nccl_base_bytes: int = 256 * MIB  # first communicator of a multi-GPU job
    nccl_per_peer_bytes: int = 32 * MIB  # grows with TP/EP group size
    serving_non_torch_tp1_bytes: int = int(0.15 * GIB)
    serving_non_torch_multi_bytes: int = int(0.6 * GIB)
    fragmentation_fraction: float = 0.05  # training: caching-allocator margin on allocated tensors


DEFAULT_PROMPT_TOKENS = 1024
DEFAULT_OUTPUT_TOKENS = 256
"""The request a speed estimate assumes when none is given (``--prompt``/``--output-tokens``), within the context:
a 1,024-token prompt and a 256-token answer, a chat turn; ``plan`` and ``recommend`` alike."""


# Serving without --context plans each sequence at the model's window, up to this many tokens (2^20). Llama 4
# Scout's 10M-token window would otherwise size the whole KV cache for one sequence on 16 GPUs.
DEFAULT_CONTEXT_CAP_TOKENS = 1_048_576


def default_context_tokens(model_context_tokens: int) -> int:
    """The serving context when none is given: the model's window, at most 2^20 tokens.

    >>> default_context_tokens(131_072), default_context_tokens(10_485_760)
    (131072, 1048576)
    """
    return min(model_context_tokens, DEFAULT_CONTEXT_CAP_TOKENS)


def default_seq_tokens(workload: Workload, model_context_tokens: int) -> int:
    """The training sequence: the workload's, else 2,048 tokens or the model's context if shorter."""
    return workload.seq_tokens or min(model_context_tokens, 2048)


@lru_cache(maxsize=64)  # one line a sequence length, asked by every layout a search plans
def seq_tokens_line(seq_tokens: int) -> str:
    """The assumption a training plan states where ``--seq`` is not given (:func:`default_seq_tokens`)."""
    return said("Sequence length not given: {seq:,} tokens.", seq=seq_tokens)
