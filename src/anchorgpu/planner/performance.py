"""Speed, time and checkpoint estimates by roofline. Pure; stdlib only.

Each phase is bound by the slower of two ceilings, computed from the GPU's datasheet figures:

* **prefill** (time to first token) and **training** are bound by arithmetic: FLOPs over the dense
  peak of the compute precision times an efficiency (``mfu``);
* **decode** is bound by memory traffic: every step reads the weights held by each GPU plus the
  KV cache of every sequence in the batch, over memory bandwidth times an efficiency (``mbu``); at
  large batches the arithmetic ceiling takes over, and the estimate says which bound held;
* tensor parallelism adds ring all-reduces over the scale-up link (NVLink, Infinity Fabric) or PCIe,
  pipeline parallelism adds the bubble ``(p-1)/(v*m+p-1)``, data parallelism adds the part of each
  step's gradient sync that the last backward pass cannot hide, and traffic between servers goes over
  a stated network figure (400 Gb/s per GPU unless the offering says otherwise).

Left out, and said so: pipeline point-to-point transfers (small next to the all-reduces), MoE all-to-all
traffic, kernel launch gaps, speculative decoding, and prefill/decode interference under continuous
batching.

Every figure here is a ceiling scaled by a stated efficiency, not a measurement. The defaults come
from published runs (see :class:`Efficiencies`); the accuracy tests in ``tests/performance`` record
how far these ceilings sit from measured throughput.

FLOPs conventions follow the papers whose utilisation figures we reuse (Narayanan et al. 2021,
Korthikanti et al. 2022, PaLM appendix B): a multiply-add is 2 FLOPs, the attention score and value
products are counted over the **whole** sequence for training MFU (``12*L*a*d*s`` per token) and
causally (half of that) for prefill, and a backward pass costs twice its forward pass.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = [
    "DEFAULT_EFFICIENCIES",
    "DEFAULT_GLOBAL_BATCH_TOKENS",
    "DEFAULT_NETWORK_BYTES_PER_S",
    "DEFAULT_STORAGE_BYTES_PER_S",
    "ComputePrecision",
    "DecodeStep",
    "Efficiencies",
    "Link",
    "PeakChoice",
    "PerformanceEstimate",
    "Recompute",
    "TrainingStep",
    "allreduce_s",
    "attach_performance",
    "attention_flops_per_token",
    "checkpoint_bytes",
    "checkpoint_write_s",
    "compute_precision_for_weights",
    "data_parallel_sync_s",
    "decode_step",
    "estimate_performance",
    "forward_matmul_params",
    "moe_expert_fraction_read",
    "peak_for",
    "performance_to_json",
    "pipeline_bubble_fraction",
    "plan_performance",
    "prefill_flops",
    "prefill_s",
    "tp_link",
    "training_flops_per_token",
    "training_step",
]

ComputePrecision = Literal["bf16", "fp8", "fp4"]
Recompute = Literal["none", "selective", "full"]
TrainKind = Literal["full", "lora"]

DEFAULT_NETWORK_BYTES_PER_S = 400e9 / 8
"""Server-to-server bandwidth per GPU, one direction: 400 Gb/s (one InfiniBand NDR / 400 GbE port per GPU,
as in HGX H100/H200/B200 clusters)."""

DEFAULT_STORAGE_BYTES_PER_S = 2e9
"""Checkpoint write bandwidth: 2 GB/s, a typical single NVMe-backed or network volume. State yours."""

ALLREDUCE_LATENCY_S: dict[str, float] = {"scale-up": 15e-6, "pcie": 30e-6, "network": 40e-6}
"""Fixed cost of one all-reduce / point-to-point exchange by link kind (NCCL small-message latencies are
in the tens of microseconds on 8-GPU NVLink servers; PCIe and the network add hops). An assumption."""

LINK_EFFICIENCY = 0.8
"""Fraction of a link's one-direction bandwidth a large collective achieves (nccl-tests bus bandwidth is
typically 75-85% of the link rate). An assumption."""

ACTIVATION_BYTES = 2
"""Bytes per activation value sent between GPUs (bf16/fp16)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Efficiencies:
    """Fractions of the datasheet ceilings that real kernels reach; every one can be overridden.

    * ``mfu`` - fraction of the dense peak reached while computing (prefill, training math, compute-bound
      decode), *before* the pipeline bubble and exposed TP communication, which the estimate adds itself.
      Default 0.55: large-model training on A100/H100 reports 41.5-56.3% model FLOPs utilisation end to end
      (Korthikanti et al. 2022, Tables 3 and 5; Llama 3, arXiv 2407.21783, Table 4: 43% BF16 on 8,192 H100),
      and those end-to-end figures include bubbles and communication, so the compute-phase rate is higher.
    * ``mbu`` - fraction of memory bandwidth a decode step reaches. Default 0.7, inside the 0.6-0.8 band of
      published serving measurements: kipply's FasterTransformer figure (13B, A100-40GB, 22.0 ms per token for
      26 GB of fp16 weights over 1,555 GB/s) works out to 0.76; TensorRT-LLM's single-GPU LLaMA-7B figure
      (published_figures.md E) to about 0.65.
    """

    mfu: float = 0.6
    mbu: float = 0.7

    def __post_init__(self) -> None:
        for name in ("mfu", "mbu"):
            value = getattr(self, name)
            if not (0.0 < value <= 1.0):
                raise InvalidWorkload(f"{name}={value!r}: an efficiency is a fraction in (0, 1]")


DEFAULT_EFFICIENCIES = Efficiencies()


# --------------------------------------------------------------------------------------------- FLOPs


def forward_matmul_params(model: ModelSpec) -> int:
    """Parameters a token multiplies through in one forward pass (MoE: active experts only).

    ``params_active - embeddings - position_embeddings + (V*h if the head is tied)``: embedding lookups
    are gathers, not matrix products; the LM head is a product whether or not it is tied.
    """
    tied_head = model.vocab_size * model.hidden_size if model.params.head == 0 else 0
    return model.params_active - model.params.embeddings - model.params.position_embeddings + tied_head


def _attention_dims(model: ModelSpec) -> tuple[int, int]:
    """(query-key dim, value dim) per head, MLA included (DeepSeek: nope + rope, v_head_dim)."""
    if model.mla is not None:
        return model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim, model.mla.v_head_dim
    return model.head_dim, model.head_dim


def attention_flops_per_token(model: ModelSpec, context_tokens: int, *, causal: bool) -> float:
    """Forward FLOPs of the score (QK^T) and value (AV) products for one token, averaged over a sequence.

    Per layer and head, a token attending to ``n`` earlier tokens costs ``2*n*(d_qk + d_v)``. Over a
    sequence of ``s`` tokens the average ``n`` is ``s`` when every pair is counted (the MFU convention
    of Narayanan et al. 2021 and PaLM: ``4*L*h*s`` per token for d_qk = d_v = h/a) and ``s/2`` causally.
    Sliding-window layers cap ``n`` at their window.

    >>> from anchorgpu.planner.performance import _toy_model
    >>> attention_flops_per_token(_toy_model(), 1000, causal=False)  # 4 * L * h * s = 4*2*64*1000
    512000.0
    """
    d_qk, d_v = _attention_dims(model)
    per_pair = 2.0 * model.num_attention_heads * (d_qk + d_v)
    total = 0.0
    for window in model.layer_windows or (None,) * model.num_layers:
        span = float(context_tokens if window is None else min(window, context_tokens))
        if causal:
            # average over positions 1..s of min(i, window)
            if window is None or window >= context_tokens:
                span = context_tokens / 2.0
            else:
                w = float(window)
                span = (w * (w + 1) / 2 + (context_tokens - w) * w) / context_tokens
        total += per_pair * span
    return total


def prefill_flops(model: ModelSpec, prompt_tokens: int, batch: int = 1) -> float:
    """Forward FLOPs to read ``batch`` prompts of ``prompt_tokens``: ``2*P_matmul*tokens`` + causal attention.

    Source: formulas.md item 9 (``2*P_active*tokens`` plus an attention term, halved by causal kernels).

    >>> from anchorgpu.planner.performance import _toy_model
    >>> prefill_flops(_toy_model(), 10) == 2 * forward_matmul_params(_toy_model()) * 10 + 10 * 2 * 4 * 64 * 5
    True
    """
    tokens = prompt_tokens * batch
    return 2.0 * forward_matmul_params(model) * tokens + tokens * attention_flops_per_token(
        model, prompt_tokens, causal=True
    )


def training_flops_per_token(
    model: ModelSpec, seq_tokens: int, *, recompute: Recompute = "none", kind: TrainKind = "full"
) -> tuple[float, float]:
    """(model FLOPs, hardware FLOPs) per trained token.

    Model FLOPs = ``6*P_matmul`` + ``3 *`` forward attention over the whole sequence: the ``6*P*D`` rule
    (Kaplan et al. 2020; Brown et al. 2020 Table D.1) with the attention term of Narayanan et al. 2021 /
    PaLM appendix B, which is how published MFU figures are counted. LoRA trains no base weight, so its
    backward pass computes activation gradients only: ``4*P`` instead of ``6*P`` (adapter FLOPs are
    negligible). Hardware FLOPs add one more forward pass with full recompute (``+2*P``, the issue's
    ``+2*P*D``) and the attention forward under selective recompute (Korthikanti et al. 2022, section 5).

    >>> from anchorgpu.planner.performance import _toy_model
    >>> m = _toy_model(); p = forward_matmul_params(m)
    >>> model_f, hw_f = training_flops_per_token(m, 100, recompute="full")
    >>> model_f == 6 * p + 3 * attention_flops_per_token(m, 100, causal=False), hw_f - model_f == 2 * p + attention_flops_per_token(m, 100, causal=False)
    (True, True)
    """
    matmul = float(forward_matmul_params(model))
    attn = attention_flops_per_token(model, seq_tokens, causal=False)
    passes = 3.0 if kind == "full" else 2.0  # forward + backward (x2 for full, x1 for LoRA)
    model_flops = passes * (2.0 * matmul + attn)
    extra = {"none": 0.0, "selective": attn, "full": 2.0 * matmul + attn}[recompute]
    return model_flops, model_flops + extra


# ------------------------------------------------------------------------------------ peaks and links


@dataclass(frozen=True, slots=True, kw_only=True)
class PeakChoice:
    """The dense peak the estimate divides by, the precision it belongs to, and why, if it fell back."""

    flops_per_s: float
    precision: str
    requested: str
    warning: tuple[str, str] | None = None


def compute_precision_for_weights(weights_format: str) -> ComputePrecision:
    """The matrix-multiply precision a weight format runs at.

    FP8 weights run W8A8 at the FP8 rate; MXFP4/NVFP4 at the FP4 rate where hardware has it; every
    other format (bf16/fp16, int8, GPTQ/AWQ int4, NF4, GGUF) is weight-only: dequantised to 16 bit and
    multiplied at the BF16 rate.

    >>> compute_precision_for_weights("nvfp4"), compute_precision_for_weights("int4-awq")
    ('fp4', 'bf16')
    """
    fmt = weights_format.lower()
    if fmt.startswith("fp8"):
        return "fp8"
    if fmt in ("mxfp4", "nvfp4"):
        return "fp4"
    return "bf16"


def peak_for(gpu: GpuSpec, precision: str) -> PeakChoice:
    """Dense peak of ``precision`` (bf16/fp16, fp8 or fp4) on ``gpu``: FP8 only where ``gpu.fp8_hardware``,
    FP4 only where ``gpu.fp4_hardware``, otherwise the BF16 peak with a warning whose code is in the
    planner's registry (FP16 peaks equal BF16 on every GPU we list).

    Raises :class:`InvalidWorkload` for another precision, or when not even the BF16 peak is known.

    >>> from anchorgpu.planner.performance import _toy_gpu
    >>> peak_for(_toy_gpu(), "fp4").warning[0]
    'fp4_weight_only_emulation'
    """
    wanted = precision.lower()
    if wanted in ("fp16", "bf16", "float16", "bfloat16"):
        wanted = "bf16"
    if wanted not in ("bf16", "fp8", "fp4"):
        raise InvalidWorkload(f"compute precision {precision!r}: expected bf16, fp16, fp8 or fp4")
    warning: tuple[str, str] | None = None
    if wanted == "fp8" and not gpu.fp8_hardware:
        warning = ("fp8_without_hardware", f"{gpu.name} has no FP8 tensor cores: speed estimated at the BF16 rate")
    elif wanted == "fp4" and not gpu.fp4_hardware:
        warning = ("fp4_weight_only_emulation",
                   f"{gpu.name} has no FP4 math: FP4 weights are dequantized, speed at the BF16 rate")
    if warning is None:
        rate = gpu.peak_flops_per_s(wanted)
        if rate is not None:
            return PeakChoice(flops_per_s=rate, precision=wanted, requested=precision)
        if wanted != "bf16":
            warning = ("kernel_support_unchecked",
                       f"{gpu.name}: no published dense {wanted.upper()} peak, speed estimated at the BF16 rate")
    rate = gpu.peak_flops_per_s("bf16")
    if rate is None:
        raise InvalidWorkload(f"{gpu.name}: no published dense BF16 peak, so speed cannot be estimated")
    return PeakChoice(flops_per_s=rate, precision="bf16", requested=precision, warning=warning)


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A path between GPUs: its kind, one-direction bandwidth and per-collective latency."""

    kind: Literal["scale-up", "pcie", "network", "none"]
    bytes_per_s: float  # one direction
    latency_s: float
    description: str


def tp_link(gpu: GpuSpec, tp: int, *, gpus_per_server: int | None = None,
            network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S) -> Link:
    """The link tensor-parallel all-reduces cross for ``tp`` ranks.

    Datasheet bandwidths are bidirectional per GPU; a ring sends one direction at a time, so half is used.
    The scale-up link (NVLink / Infinity Fabric) is used when ``tp`` fits inside its domain
    (``scaleup_domain_gpus``: 8 on HGX/OAM boards, 2 on bridged PCIe pairs); else PCIe; past one server,
    the network.

    >>> from anchorgpu.planner.performance import _toy_gpu
    >>> tp_link(_toy_gpu(), 8).kind, tp_link(_toy_gpu(), 8).bytes_per_s
    ('scale-up', 450000000000.0)
    >>> tp_link(_toy_gpu(), 16, gpus_per_server=8).kind
    'network'
    """
    if tp <= 1:
        return Link(kind="none", bytes_per_s=math.inf, latency_s=0.0, description="single GPU")
    if gpus_per_server is not None and tp > gpus_per_server:
        return Link(kind="network", bytes_per_s=network_bytes_per_s, latency_s=ALLREDUCE_LATENCY_S["network"],
                    description=f"network between servers, {network_bytes_per_s * 8 / 1e9:.0f} Gb/s per GPU")
    domain = gpu.scaleup_domain_gpus if gpu.interconnect_bandwidth_bytes_per_s else 1
    if gpu.interconnect_bandwidth_bytes_per_s and tp <= max(domain, 1) and domain > 1:
        return Link(kind="scale-up", bytes_per_s=gpu.interconnect_bandwidth_bytes_per_s / 2,
                    latency_s=ALLREDUCE_LATENCY_S["scale-up"], description=gpu.interconnect)
    pcie = gpu.pcie_bandwidth_bytes_per_s or 64e9
    return Link(kind="pcie", bytes_per_s=pcie / 2, latency_s=ALLREDUCE_LATENCY_S["pcie"],
                description=f"PCIe {gpu.pcie_gen}".strip())


def allreduce_s(message_bytes: float, ranks: int, link: Link, *, efficiency: float = LINK_EFFICIENCY) -> float:
    """Ring all-reduce time: ``latency + 2*(n-1)/n * bytes / (bandwidth * efficiency)``.

    Source: the ring algorithm moves ``2*(n-1)/n`` of the message through each GPU's link (Patarasuk &
    Yuan 2009; NCCL's "bus bandwidth" definition).

    >>> round(allreduce_s(1e9, 2, Link(kind="pcie", bytes_per_s=1e9, latency_s=0.0, description="")), 3)
    1.25
    >>> allreduce_s(1e9, 1, Link(kind="none", bytes_per_s=1.0, latency_s=1.0, description=""))
    0.0
    """
    if ranks <= 1 or message_bytes <= 0:
        return 0.0
    return link.latency_s + 2.0 * (ranks - 1) / ranks * message_bytes / (link.bytes_per_s * efficiency)


def pipeline_bubble_fraction(pp: int, microbatches: int, virtual_stages: int = 1) -> float:
    """Idle fraction of a pipeline step: ``(p-1) / (v*m + p - 1)``.

    Source: Narayanan et al. 2021 (arXiv 2104.04473), section 2.2: the 1F1B bubble is ``(p-1)/m`` of the
    ideal time, i.e. ``(p-1)/(m+p-1)`` of the whole step; interleaving ``v`` stages per GPU divides it by v.

    >>> pipeline_bubble_fraction(1, 1), pipeline_bubble_fraction(4, 13)
    (0.0, 0.1875)
    """
    if pp < 1 or microbatches < 1 or virtual_stages < 1:
        raise InvalidWorkload("pipeline stages, micro-batches and virtual stages must be at least 1")
    return (pp - 1) / (virtual_stages * microbatches + pp - 1)


def moe_expert_fraction_read(model: ModelSpec, batch_tokens: int) -> float:
    """Expected fraction of routed experts a decode step touches: ``1 - (1 - k/E)^B``.

    Assumes uniform, independent routing of ``B`` tokens each to ``k`` of ``E`` experts (an assumption:
    real routers are skewed, which lowers the fraction). 1.0 for dense models.

    >>> from anchorgpu.planner.performance import _toy_model
    >>> moe_expert_fraction_read(_toy_model(), 64)
    1.0
    """
    if model.moe is None:
        return 1.0
    k, e = model.moe.experts_per_token, model.moe.num_experts
    return 1.0 - (1.0 - k / e) ** max(batch_tokens, 1)


# ------------------------------------------------------------------------------------------- phases


def prefill_s(
    model: ModelSpec, gpu: GpuSpec, prompt_tokens: int, *, tp: int = 1, batch: int = 1,
    precision: str = "bf16", efficiencies: Efficiencies = DEFAULT_EFFICIENCIES, link: Link | None = None,
) -> float:
    """Time to first token: ``prefill_flops / (tp * peak * mfu)`` plus two all-reduces per layer.

    Each layer ends its attention and its MLP with an all-reduce of ``tokens * h * 2`` bytes across the
    ``tp`` ranks (Megatron tensor parallelism, Shoeybi et al. 2019).
    """
    peak = peak_for(gpu, precision).flops_per_s
    compute = prefill_flops(model, prompt_tokens, batch) / (tp * peak * efficiencies.mfu)
    link = link or tp_link(gpu, tp)
    message = prompt_tokens * batch * model.hidden_size * ACTIVATION_BYTES
    return compute + 2 * model.num_layers * allreduce_s(message, tp, link)


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStep:
    """One decode step for a batch: its time, the bound that held, and the tokens/s that follow."""

    step_s: float
    memory_s: float
    compute_s: float
    communication_s: float
    bound: Literal["memory", "compute"]
    bytes_read_per_gpu: float
    tokens_per_s_per_user: float
    tokens_per_s_total: float


def decode_step(
    model: ModelSpec, gpu: GpuSpec, *, weights_bytes_per_gpu: float, kv_bytes_per_sequence_per_gpu: float,
    concurrency: int, context_tokens: int, tp: int = 1, pp: int = 1, precision: str = "bf16",
    efficiencies: Efficiencies = DEFAULT_EFFICIENCIES, link: Link | None = None,
) -> DecodeStep:
    """A decode step for ``concurrency`` sequences, each with ``context_tokens`` cached.

    * memory: ``(weights read + concurrency * KV per sequence) / (bandwidth * mbu)`` per GPU; for MoE the
      routed-expert share of the weights is scaled by :func:`moe_expert_fraction_read`;
    * compute: ``concurrency * (2*P_matmul + attention over the context) / (tp * peak * mfu)``;
    * communication: two all-reduces of ``concurrency * h * 2`` bytes per layer across ``tp``;
    * pipeline stages run one after another for a single token, so a step takes ``pp`` stage times and
      each stage reads ``1/pp`` of the bytes (the bytes per GPU already say so).

    Step = ``pp * max(memory, compute) + communication``. Per user: ``1/step``; total:
    ``concurrency/step`` - a bigger batch raises the total and never speeds a single stream.
    """
    if concurrency < 1:
        raise InvalidWorkload(f"concurrency={concurrency}: at least one sequence is decoded")
    weights_read = weights_bytes_per_gpu
    if model.moe is not None and model.params_total:
        routed_share = model.params.experts / model.params_total
        fraction = moe_expert_fraction_read(model, concurrency)
        weights_read = weights_bytes_per_gpu * (1 - routed_share + routed_share * fraction)
    bytes_read = weights_read + concurrency * kv_bytes_per_sequence_per_gpu
    memory = bytes_read / (gpu.memory_bandwidth_bytes_per_s * efficiencies.mbu)
    peak = peak_for(gpu, precision).flops_per_s
    flops = concurrency * (2.0 * forward_matmul_params(model)
                           + attention_flops_per_token(model, 2 * context_tokens, causal=True))
    compute = flops / (tp * pp * peak * efficiencies.mfu)
    link = link or tp_link(gpu, tp)
    comm = 2 * model.num_layers * allreduce_s(concurrency * model.hidden_size * ACTIVATION_BYTES, tp, link)
    stage = max(memory, compute)
    step = pp * stage + comm
    return DecodeStep(
        step_s=step, memory_s=memory, compute_s=compute, communication_s=comm,
        bound="memory" if memory >= compute else "compute", bytes_read_per_gpu=bytes_read,
        tokens_per_s_per_user=1.0 / step, tokens_per_s_total=concurrency / step,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingStep:
    """Throughput of one training layout: tokens/s over all GPUs, its predicted MFU and what it spent."""

    tokens_per_s: float
    model_flops_per_token: float
    hardware_flops_per_token: float
    compute_fraction: float  # of the step spent computing (the rest: bubble, TP traffic, exposed sync)
    bubble_fraction: float
    tp_communication_fraction: float
    dp_sync_exposed_fraction: float  # gradient sync not hidden behind the last backward pass
    microbatches: int  # per replica per optimizer step
    predicted_mfu: float  # model FLOPs / (time * GPUs * peak)


DEFAULT_GLOBAL_BATCH_TOKENS = 2**21
"""Tokens per optimizer step when none is given: about 2M, within the 0.5-4M of published LLM runs
(GPT-3: 0.5-3.2M, Brown et al. 2020 Table 2.1; Llama 2: 4M). Gradients are synchronised once per step."""


def data_parallel_sync_s(
    model: ModelSpec, gpu: GpuSpec, *, gpus: int, tp: int = 1, pp: int = 1, zero: int = 0,
    kind: TrainKind = "full", gpus_per_server: int | None = None,
    network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S,
) -> float:
    """Time to synchronise one step's gradients across the data-parallel replicas.

    A ring all-reduce of this GPU's bf16 gradients (``2 * P / (tp*pp)`` bytes) over ``dp`` ranks; ZeRO-3 /
    FSDP moves 1.5x that (parameters gathered for forward and backward, gradients reduce-scattered;
    Rajbhandari et al. 2020, section 7). Inside one server the ranks use the scale-up link (or PCIe);
    across servers the network (``gpus_per_server`` default 8). LoRA syncs only its adapters: ~0.

    >>> from anchorgpu.planner.performance import _toy_gpu, _toy_model
    >>> data_parallel_sync_s(_toy_model(), _toy_gpu(), gpus=1), data_parallel_sync_s(_toy_model(), _toy_gpu(), gpus=2) > 0
    (0.0, True)
    """
    dp = gpus // (tp * pp)
    if dp <= 1 or kind != "full":
        return 0.0
    grad_bytes = ACTIVATION_BYTES * model.params_total / (tp * pp)
    per_server = gpus_per_server or SERVER_GPUS
    link = tp_link(gpu, gpus, gpus_per_server=per_server, network_bytes_per_s=network_bytes_per_s)
    return (1.5 if zero >= 3 else 1.0) * allreduce_s(grad_bytes, dp, link)


def training_step(
    model: ModelSpec, gpu: GpuSpec, *, gpus: int, seq_tokens: int, tp: int = 1, pp: int = 1,
    micro_batch: int = 1, microbatches: int | None = None, virtual_stages: int = 1,
    recompute: Recompute = "none", kind: TrainKind = "full", precision: str = "bf16", zero: int = 0,
    global_batch_tokens: int | None = None, gpus_per_server: int | None = None,
    network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S,
    efficiencies: Efficiencies = DEFAULT_EFFICIENCIES,
    link: Link | None = None,
) -> TrainingStep:
    """Training tokens/s over all GPUs for one layout: compute, TP traffic, pipeline bubble, gradient sync.

    * compute per micro-batch per GPU = ``b*s * hw_flops_per_token / (tp*pp) / (peak*mfu)``;
    * TP: four all-reduces of ``b*s*h*2`` bytes per layer per micro-batch (two forward, two backward;
      six with full recompute), over ``L/pp`` layers; sequence parallelism swaps each for a reduce-scatter
      plus an all-gather of the same volume (Korthikanti et al. 2022, section 4.2.2). Not overlapped;
    * a step runs ``m`` micro-batches per replica (``microbatches``, else the global batch of
      ``global_batch_tokens`` split over the replicas, default :data:`DEFAULT_GLOBAL_BATCH_TOKENS`); the
      pipeline stretches it to ``(m + p - 1)`` micro-batch times (1F1B, ``v`` interleaved stages:
      ``m + (p - 1)/v``), i.e. the bubble ``(p-1)/(v*m+p-1)``;
    * the gradient sync (:func:`data_parallel_sync_s`) overlaps the backward pass of the last micro-batch
      (bucketed all-reduce, as DDP/Megatron/DeepSpeed do); only what exceeds it is added to the step.
    """
    if gpus < 1 or tp < 1 or pp < 1 or gpus % (tp * pp):
        raise InvalidWorkload(f"gpus={gpus} must be a multiple of tp*pp={tp * pp}")
    model_f, hw_f = training_flops_per_token(model, seq_tokens, recompute=recompute, kind=kind)
    peak = peak_for(gpu, precision).flops_per_s
    tokens = micro_batch * seq_tokens
    compute_s = tokens * hw_f / (tp * pp) / (peak * efficiencies.mfu)
    link = link or tp_link(gpu, tp)
    collectives = 6 if recompute == "full" else 4
    layers_here = math.ceil(model.num_layers / pp)
    comm_s = collectives * layers_here * allreduce_s(tokens * model.hidden_size * ACTIVATION_BYTES, tp, link)
    dp = gpus // (tp * pp)
    if microbatches is not None:
        m = microbatches
    else:
        batch = global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS
        m = max(1, math.ceil(batch / (dp * tokens)))
    bubble = pipeline_bubble_fraction(pp, m, virtual_stages)
    pipeline_s = m * (compute_s + comm_s) / (1.0 - bubble)
    sync_s = data_parallel_sync_s(model, gpu, gpus=gpus, tp=tp, pp=pp, zero=zero, kind=kind,
                                  gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    backward_s = compute_s * (2.0 / 3.0 if kind == "full" else 0.5)
    exposed_s = max(0.0, sync_s - backward_s)
    step_s = pipeline_s + exposed_s
    tokens_per_s = dp * m * tokens / step_s
    return TrainingStep(
        tokens_per_s=tokens_per_s, model_flops_per_token=model_f, hardware_flops_per_token=hw_f,
        compute_fraction=m * compute_s / step_s, bubble_fraction=bubble,
        tp_communication_fraction=m * comm_s / step_s, dp_sync_exposed_fraction=exposed_s / step_s,
        microbatches=m, predicted_mfu=tokens_per_s * model_f / (gpus * peak),
    )


# ------------------------------------------------------------------------------------- checkpoints


def checkpoint_bytes(*, weights_bytes: int, master_and_optimizer_bytes: int = 0) -> int:
    """Bytes a checkpoint writes: the weights as stored plus, for training, the fp32 master copy and the
    optimizer moments needed to resume (mixed-precision AdamW: 2 + 4 + 8 = 14 B per parameter; Rajbhandari
    et al. 2020 count the same 12 B of optimizer state per parameter).

    >>> checkpoint_bytes(weights_bytes=2 * 10**9, master_and_optimizer_bytes=12 * 10**9)
    14000000000
    """
    if weights_bytes < 0 or master_and_optimizer_bytes < 0:
        raise InvalidWorkload("checkpoint sizes cannot be negative")
    return weights_bytes + master_and_optimizer_bytes


def checkpoint_write_s(size_bytes: int, storage_bytes_per_s: float = DEFAULT_STORAGE_BYTES_PER_S) -> float:
    """Seconds to write a checkpoint at a stated storage bandwidth.

    >>> checkpoint_write_s(14 * 10**9, 2e9)
    7.0
    """
    if storage_bytes_per_s <= 0:
        raise InvalidWorkload("storage bandwidth must be positive")
    return size_bytes / storage_bytes_per_s


# ----------------------------------------------------------------------------------------- combined


@dataclass(frozen=True, slots=True, kw_only=True)
class PerformanceEstimate:
    """Speed, time and checkpoint figures for one plan; ``None`` where the task has no such phase."""

    compute_precision: str
    prefill_s: float | None = None
    decode_tokens_per_s_per_user: float | None = None
    decode_tokens_per_s_total: float | None = None
    decode_step_s: float | None = None
    decode_bound: str | None = None
    train_tokens_per_s: float | None = None
    train_time_s: float | None = None
    train_predicted_mfu: float | None = None
    pipeline_bubble_fraction: float | None = None
    tp_communication_s_per_step: float | None = None
    checkpoint_bytes: int | None = None
    checkpoint_write_s: float | None = None
    assumptions: tuple[str, ...] = ()
    warnings: tuple[tuple[str, str], ...] = field(default=())


def estimate_performance(
    model: ModelSpec, gpu: GpuSpec, *, task: str, gpus: int = 1, tp: int = 1, pp: int = 1,
    weights_bytes_per_gpu: int, weights_format: str = "bf16", kv_bytes_per_sequence_per_gpu: float = 0.0,
    prompt_tokens: int = 1024, output_tokens: int = 256, concurrency: int = 1, replicas: int = 1,
    train_tokens: int | None = None, seq_tokens: int = 4096, micro_batch: int = 1,
    recompute: Recompute = "none", zero: int = 0, global_batch_tokens: int | None = None,
    checkpoint_size_bytes: int | None = None,
    weights_bytes_total: int | None = None, master_and_optimizer_bytes_total: int = 0,
    gpus_per_server: int | None = None, efficiencies: Efficiencies = DEFAULT_EFFICIENCIES,
    network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S,
    storage_bytes_per_s: float = DEFAULT_STORAGE_BYTES_PER_S,
) -> PerformanceEstimate:
    """All the speed figures of one plan, with what they assumed.

    Serving (``task`` inference): prefill of one prompt of ``prompt_tokens``; decode at ``concurrency``
    sequences shared by ``replicas`` data-parallel copies, each sequence holding on average
    ``prompt + output/2`` cached tokens (``kv_bytes_per_sequence_per_gpu`` is the cache of one such
    sequence on one GPU). Training (train, lora, qlora):
    tokens/s over all GPUs and, with ``train_tokens``, the time to train on them; checkpoint of the weights
    plus, for full training, master weights and optimizer state.
    """
    warnings: list[tuple[str, str]] = []
    training = task in ("train", "lora", "qlora")
    precision = "bf16" if training else compute_precision_for_weights(weights_format)
    choice = peak_for(gpu, precision)
    if choice.warning:
        warnings.append(choice.warning)
    link = tp_link(gpu, tp, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    assumptions = [
        f"compute at the dense {choice.precision.upper()} peak of {gpu.name} "
        f"({choice.flops_per_s / 1e12:,.0f} TFLOP/s) x mfu {efficiencies.mfu:g}",
        f"memory bandwidth {gpu.memory_bandwidth_bytes_per_s / 1e12:.2f} TB/s x mbu {efficiencies.mbu:g}",
    ]
    if tp > 1:
        assumptions.append(
            f"tensor-parallel all-reduces over {link.description} at {link.bytes_per_s * LINK_EFFICIENCY / 1e9:,.0f} GB/s "
            f"per direction + {link.latency_s * 1e6:.0f} us each, not overlapped"
        )
        if link.kind == "pcie":
            warnings.append(("tp_over_pcie", f"TP={tp} over PCIe on {gpu.name}: all-reduces are slow"))
        elif link.kind == "network":
            warnings.append(("tp_across_nodes", f"TP={tp} spans servers: all-reduces cross the network"))
    weights_total = weights_bytes_total if weights_bytes_total is not None else weights_bytes_per_gpu * tp * pp
    if training:
        kind: TrainKind = "full" if task == "train" else "lora"
        step = training_step(
            model, gpu, gpus=gpus, seq_tokens=seq_tokens, tp=tp, pp=pp, micro_batch=micro_batch,
            recompute=recompute, kind=kind, precision=choice.precision, zero=zero,
            global_batch_tokens=global_batch_tokens, gpus_per_server=gpus_per_server,
            network_bytes_per_s=network_bytes_per_s, efficiencies=efficiencies, link=link,
        )
        batch = global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS
        assumptions.append(
            f"training FLOPs per token {step.model_flops_per_token:.3g} ({'6' if kind == 'full' else '4'}*P + attention"
            f"{', + recompute' if recompute != 'none' else ''}); global batch about {batch:,} tokens per step = "
            f"{step.microbatches} micro-batch(es) of {micro_batch}x{seq_tokens} tokens per replica"
        )
        if step.dp_sync_exposed_fraction > 0:
            assumptions.append(f"gradient sync not hidden behind the last backward pass: "
                               f"{step.dp_sync_exposed_fraction:.0%} of each step")
        ckpt = checkpoint_size_bytes if checkpoint_size_bytes is not None else checkpoint_bytes(
            weights_bytes=weights_total, master_and_optimizer_bytes=master_and_optimizer_bytes_total)
        return PerformanceEstimate(
            compute_precision=choice.precision,
            train_tokens_per_s=step.tokens_per_s,
            train_time_s=(train_tokens / step.tokens_per_s) if train_tokens else None,
            train_predicted_mfu=step.predicted_mfu,
            pipeline_bubble_fraction=step.bubble_fraction,
            checkpoint_bytes=ckpt,
            checkpoint_write_s=checkpoint_write_s(ckpt, storage_bytes_per_s),
            assumptions=(*assumptions, f"checkpoint written at {storage_bytes_per_s / 1e9:g} GB/s"),
            warnings=tuple(warnings),
        )
    cached = prompt_tokens + output_tokens // 2
    per_replica = math.ceil(concurrency / max(1, replicas))
    dec = decode_step(
        model, gpu, weights_bytes_per_gpu=weights_bytes_per_gpu,
        kv_bytes_per_sequence_per_gpu=kv_bytes_per_sequence_per_gpu, concurrency=per_replica,
        context_tokens=cached, tp=tp, pp=pp, precision=choice.precision, efficiencies=efficiencies, link=link,
    )
    assumptions.append(
        f"decode at {concurrency} concurrent sequence(s)"
        + (f" over {replicas} replicas ({per_replica} each)" if replicas > 1 else "")
        + f" with {cached} cached tokens each (prompt {prompt_tokens} + half of {output_tokens} output tokens);"
        " continuous batching at a steady batch, no speculative decoding"
    )
    pre = prefill_s(model, gpu, prompt_tokens, tp=tp, precision=choice.precision, efficiencies=efficiencies,
                    link=link)
    ckpt = checkpoint_size_bytes if checkpoint_size_bytes is not None else checkpoint_bytes(
        weights_bytes=weights_total)
    return PerformanceEstimate(
        compute_precision=choice.precision,
        prefill_s=pre,
        decode_tokens_per_s_per_user=dec.tokens_per_s_per_user,
        decode_tokens_per_s_total=concurrency / dec.step_s,
        decode_step_s=dec.step_s,
        decode_bound=dec.bound,
        tp_communication_s_per_step=dec.communication_s,
        checkpoint_bytes=ckpt,
        checkpoint_write_s=checkpoint_write_s(ckpt, storage_bytes_per_s),
        assumptions=tuple(assumptions),
        warnings=tuple(warnings),
    )


SERVER_GPUS = 8
"""GPUs per server assumed by ``plan`` estimates: tensor parallelism beyond 8 GPUs crosses the network."""


def performance_to_json(estimate: PerformanceEstimate) -> dict[str, Any]:
    """The ``performance`` section of ``anchorgpu plan --json``: every field, warnings as {code, message}."""
    out = asdict(estimate)
    out["assumptions"] = list(estimate.assumptions)
    out["warnings"] = [{"code": code, "message": message} for code, message in estimate.warnings]
    return out


def plan_performance(
    plan: Plan, *, prompt_tokens: int | None = None, output_tokens: int | None = None,
    train_tokens: int | None = None, mfu: float | None = None, mbu: float | None = None,
    global_batch_tokens: int | None = None, network_bytes_per_s: float = DEFAULT_NETWORK_BYTES_PER_S,
    storage_bytes_per_s: float = DEFAULT_STORAGE_BYTES_PER_S,
) -> dict[str, Any]:
    """Speed, time and checkpoint figures for a :class:`~anchorgpu.planner.plan.Plan`, as the ``performance``
    JSON section. Uses the plan's own per-GPU weights, KV-cache geometry, layout and checkpoint size.

    Serving: ``prompt_tokens`` defaults to the context minus the output, ``output_tokens`` to
    min(256, context/2). Training: ``train_tokens`` gives ``train_time_s``. Without a GPU, or for a
    diffusion pipeline, the figures are null and ``assumptions`` says why.

    >>> from anchorgpu.planner import Workload, plan
    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> from anchorgpu.planner.performance import _toy_gpu
    >>> section = plan_performance(plan(llama_3_1_8b(), Workload(context_tokens=4096, concurrency=8), gpu=_toy_gpu()))
    >>> section["decode_bound"], section["decode_tokens_per_s_total"] > section["decode_tokens_per_s_per_user"]
    ('memory', True)
    """
    from anchorgpu.planner import memory as mm
    from anchorgpu.planner.inputs import KV_CACHE_DTYPES

    efficiencies = Efficiencies(mfu=mfu if mfu is not None else DEFAULT_EFFICIENCIES.mfu,
                                mbu=mbu if mbu is not None else DEFAULT_EFFICIENCIES.mbu)
    for name, value in (("prompt", prompt_tokens), ("output-tokens", output_tokens), ("tokens", train_tokens),
                        ("global-batch", global_batch_tokens)):
        if value is not None and value < 1:
            raise InvalidWorkload(f"--{name} {value}: must be at least 1")
    model, gpu, lay, w = plan.model, plan.gpu, plan.layout, plan.workload
    if not isinstance(model, ModelSpec):
        return performance_to_json(PerformanceEstimate(
            compute_precision="bf16", assumptions=("speed is not estimated for diffusion pipelines",)))
    if gpu is None:
        return performance_to_json(PerformanceEstimate(
            compute_precision="bf16", assumptions=("no GPU named: speed needs a GPU (--gpu)",)))
    whole_weights = int(plan.breakdown.get("weights_whole_model_bytes", plan.per_gpu.weights_bytes * lay.tp * lay.pp))
    common: dict[str, Any] = dict(
        gpus=lay.gpus, tp=lay.tp, pp=lay.pp, weights_bytes_per_gpu=plan.per_gpu.weights_bytes,
        weights_format=plan.precision.weights or "bf16", gpus_per_server=SERVER_GPUS,
        efficiencies=efficiencies, network_bytes_per_s=network_bytes_per_s, storage_bytes_per_s=storage_bytes_per_s,
    )
    if w.task == "inference":
        ctx = w.context_tokens or model.max_context_tokens
        output = output_tokens if output_tokens is not None else min(256, max(1, ctx // 2))
        prompt = prompt_tokens if prompt_tokens is not None else max(1, ctx - output)
        cached = prompt + output // 2
        kv_seq = mm.kv_cache_bytes(model, context_tokens=cached, sequences=1, tp=lay.tp, pp=lay.pp, block_size=1,
                                   bytes_per_value=KV_CACHE_DTYPES[plan.precision.kv_cache])
        estimate = estimate_performance(
            model, gpu, task="inference", **common, kv_bytes_per_sequence_per_gpu=kv_seq, prompt_tokens=prompt,
            output_tokens=output, concurrency=w.concurrency or 1, replicas=lay.dp, checkpoint_size_bytes=whole_weights)
    else:
        estimate = estimate_performance(
            model, gpu, task=w.task, **common, train_tokens=train_tokens,
            seq_tokens=w.seq_tokens or min(model.max_context_tokens, 4096), micro_batch=w.micro_batch,
            recompute=w.recompute or "none", zero=lay.zero, global_batch_tokens=global_batch_tokens,
            checkpoint_size_bytes=plan.checkpoint_bytes or whole_weights)
    return performance_to_json(estimate)


def attach_performance(plan: Plan, **options: Any) -> Plan:
    """``plan`` with its ``performance`` section attached under ``Plan.extra`` (what ``plan_to_json`` emits).

    ``options`` are those of :func:`plan_performance` (prompt_tokens, output_tokens, train_tokens, mfu, mbu …).
    """
    from dataclasses import replace

    return replace(plan, extra={**plan.extra, "performance": plan_performance(plan, **options)})


# ---------------------------------------------------------------------------------- doctest helpers


def _toy_model() -> ModelSpec:
    """A two-layer dense model for the doctests (h=64, 4 heads of 16, V=100)."""
    from anchorgpu.architectures.spec import ParamBreakdown

    h, layers, vocab = 64, 2, 100
    params = ParamBreakdown(embeddings=vocab * h, position_embeddings=0, attention=layers * 4 * h * h,
                            mlp=layers * 3 * h * 4 * h, experts=0, shared_experts=0, router=0,
                            norms=(2 * layers + 1) * h, head=vocab * h)
    return ModelSpec(
        name="toy", model_type="llama", family="toy", num_layers=layers, hidden_size=h, intermediate_size=4 * h,
        num_attention_heads=4, num_kv_heads=4, head_dim=16, vocab_size=vocab, max_context_tokens=4096,
        tie_word_embeddings=False, attention_kind="mha", gated_mlp=True, params=params,
        params_active=params.total, linear_groups=(), layer_windows=(None,) * layers,
    )


def _toy_gpu() -> GpuSpec:
    """An H100-SXM-like GPU for the doctests (989 TFLOP/s BF16, 3.35 TB/s, NVLink 900 GB/s, 8 per board)."""
    from anchorgpu.hardware.spec import Peak

    return GpuSpec(
        name="toy-h100", display_name="toy", aliases=(), vendor="NVIDIA", architecture="Hopper", form_factor="SXM5",
        memory_bytes=80 * 10**9, memory_headline="80 GB", memory_unit="GB", memory_type="HBM3",
        memory_bandwidth_bytes_per_s=3.35e12,
        peaks={"bf16": Peak(status="known", flops_per_s=989e12), "fp8": Peak(status="known", flops_per_s=1979e12),
               "fp4": Peak(status="absent")},
        fp8_hardware=True, fp4_hardware=False, interconnect="NVLink 4", interconnect_bandwidth_bytes_per_s=900e9,
        pcie_gen="Gen5 x16", pcie_bandwidth_bytes_per_s=128e9, tdp_w=700, compute_capability="9.0",
        rocm_gfx_target=None, partitioning="", sources=(), scaleup_domain_gpus=8,
    )
