"""The speed model's constants as frozen values: what each software stack reaches of the datasheet
(:class:`StackConstants`), the bands around a prediction (:class:`Band`) and the whole calibration with its stated
constants and how each GPU's runs fell (:class:`Calibration`). Read from ``data/calibration.json`` by
:mod:`~anchorgpu.planner.speed.calibration`. Constants are kept per software stack (CUDA and ROCm), because the same
datasheet peak is reached to a different degree by each. Pure; stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.speed.evidence import MIN_HELD_OUT, GpuEvidence, engine_kind, evidence_kind
from anchorgpu.planner.speed.launches import LayerLaunches

__all__ = [
    "Band",
    "Calibration",
    "Stack",
    "StackConstants",
    "band_kind_of",
    "stack_of",
]

Stack = Literal["cuda", "rocm"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StackConstants:
    """What one software stack reaches of the datasheet (fitted unless the file says otherwise).

    Training compute: ``train_matmul_efficiency`` of the dense BF16 peak for large matrix products,
    halved when the per-GPU width ``h/tp`` equals ``train_matmul_half_width`` (small products fill the
    tensor cores less); ``fp8_matmul_efficiency`` and ``fp4_matmul_efficiency`` of the dense FP8 and FP4
    peaks (low-precision kernels reach less of their peak; FP8 serving products take the training FP8/BF16 ratio, FP4
    ones ``fp4_matmul_efficiency`` itself, fitted on serving rows alone: :meth:`Calibration.serve_precision_efficiency`); ``attention_efficiency`` of the
    BF16 peak for flash attention (FlashAttention-3 / cuDNN class), on the FLOPs it executes (a causal kernel skips the
    masked half of the score pairs; the stated ``fa2_hopper_attention_efficiency`` for FlashAttention-2-class kernels
    on Hopper and newer); ``elementwise_bytes_per_hidden`` bytes of memory traffic per token,
    layer and hidden unit for the memory-bound operators (norms, activations, rotary, residuals, casts)
    over a forward and backward pass. Serving: ``decode_mbu`` of memory bandwidth for weight and KV reads,
    ``serve_matmul_efficiency`` of the peak for batched products, halved when the per-GPU width ``h/tp`` equals
    ``serve_matmul_half_width`` (a decode step's products have few rows, so their shape matters more than in
    training), ``roofline_exponent`` how sharply a decode step's products turn from reading their weights to
    multiplying (``(m^p + c^p)^(1/p)``), and the fixed costs of a step:
    ``per_step_s`` (scheduler, sampling) and ``per_layer_step_s`` (kernel launches and synchronisation),.
    ``scaleup_latency_s`` is the fixed cost of one collective inside a server (NCCL over NVSwitch, RCCL
    over an Infinity Fabric mesh). ``moe_expert_half_tokens``: a mixture of experts' routed-expert products reach
    half their efficiency when each expert gets this many of the step's tokens (a grouped GEMM's rows per expert
    are ``tokens * k / E`` once every expert runs, at least one for an expert a token touches: few rows fill its
    tiles poorly), fitted on MoE serving rows alone. Training reads the same falloff for its grouped expert products
    (an EP group's tokens meet at each expert, ``tokens * ep * k / E`` rows a micro-batch); no training row is
    fitted, so expert parallelism's larger products are a benefit the layout chooser sees, not a tuned one.
    ``moe_host_s_per_expert_gemm``: host seconds per product a local expert launches in a training micro-batch, which
    the GPU waits for after a dropless MoE layer's tokens-per-expert sync (``experts.expert_launch_s``), fitted on
    every third Megatron-Bridge MoE training row alone.
    """

    train_matmul_efficiency: float
    train_matmul_half_width: float
    fp8_matmul_efficiency: float
    fp4_matmul_efficiency: float
    attention_efficiency: float
    elementwise_bytes_per_hidden: float
    decode_mbu: float
    serve_matmul_efficiency: float
    serve_matmul_half_width: float
    roofline_exponent: float
    per_step_s: float
    per_layer_step_s: float
    scaleup_latency_s: float
    moe_expert_half_tokens: float = 0.0
    moe_host_s_per_expert_gemm: float = 0.0
    pytorch_elementwise_bytes_per_hidden: float = 0.0  # 0: as elementwise_bytes_per_hidden


@dataclass(frozen=True, slots=True, kw_only=True)
class Band:
    """Multiplicative band around a prediction, from the calibration residuals: ``[pred*low, pred*high]``."""

    low: float
    high: float

    def holding(self, evidence: GpuEvidence | None) -> Band:
        """This band widened to hold one GPU's own runs where they fell off-centre: the same spread around that
        GPU's median measured/predicted ratio as around the prediction, joined to the band itself. Only a GPU with
        at least :data:`~anchorgpu.planner.speed.evidence.MIN_HELD_OUT` held-out runs of the kind moves it (fitted
        runs were pulled toward the prediction); the prediction stays the model's.

        >>> b = Band(low=0.883, high=1.192)
        >>> b.holding(GpuEvidence(rows=10, held_out=10, basis="held-out", median=1.379, low=1.086, high=1.537))
        Band(low=0.883, high=1.644)
        >>> b.holding(GpuEvidence(rows=5, held_out=1, basis="all", median=1.5, low=1.4, high=1.6)) is b
        True
        """
        if evidence is None or evidence.basis != "held-out" or evidence.held_out < MIN_HELD_OUT:
            return self
        m = evidence.median
        low = min(self.low, math.floor(m * self.low * 1000) / 1000)
        high = max(self.high, math.ceil(m * self.high * 1000) / 1000)
        return self if (low, high) == (self.low, self.high) else Band(low=low, high=high)


@dataclass(frozen=True, slots=True, kw_only=True)
class Calibration:
    """The whole file: constants per stack, stated constants, bands by phase, and provenance."""

    version: int
    stacks: dict[str, StackConstants]
    link_efficiency: float
    latency_s: dict[str, float]
    overlap_exposed_fraction: float
    ring_step_latency_s: dict[str, float] = field(default_factory=dict)  # NCCL's ring model: "base", then per step
    optimizer_bytes_per_param: float
    network_bytes_per_s: float
    host_memory_bytes_per_s: dict[str, float] = field(default_factory=dict)  # per GPU: "x86", "superchip"
    host_s_per_sequence_step: dict[str, float] = field(default_factory=dict)  # a serving engine's host work, per host
    bands: dict[str, Band]
    provenance: dict[str, Any]
    caveats: dict[str, str] = field(default_factory=dict)  # per stack: what its rows leave uncertain, said in plans
    launches: LayerLaunches = LayerLaunches()  # kernels a layer launches by block (scales per_layer_step_s)
    moe_tile_rows: float = 0.0  # a grouped product's smallest tile: fewer rows per expert cost no more (0: no floor)
    # TensorRT-LLM's MoE kernel: seconds a GPU's routed row (a token's copy for one expert) costs beyond the roofline,
    # by CUDA compute capability ("10.0": B200/GB200); a family absent costs none (engine_terms.trtllm_moe_s_per_token)
    trtllm_moe_s_per_routed_row: dict[str, float] = field(default_factory=dict)
    # a launch-bound kernel's time on a GPU family over Hopper's (what per_layer_step_s is fitted on), by CUDA compute
    # capability; scales the per-layer fixed cost (step_constants); a family absent: 1.0
    kernel_floor_ratio: dict[str, float] = field(default_factory=dict)
    # TensorRT-LLM's TRTLLM-gen MoE kernel: its routed products' small-row falloff (half_tokens), by CUDA compute
    # capability, in place of the fitted moe_expert_half_tokens; a family absent keeps the fit (speed.moe_backend)
    trtllm_gen_moe_expert_half_tokens: dict[str, float] = field(default_factory=dict)
    # vLLM's Marlin MoE kernel (MXFP4 experts where triton_kernels is absent, speed.moe_backend): the rate its routed
    # products reach with many rows an expert as a share of the GPU's BF16 peak, and their small-row falloff
    # (half_tokens), by CUDA compute capability; a family absent keeps the planner's rates and fit
    vllm_marlin_moe_peak_share: dict[str, float] = field(default_factory=dict)
    vllm_marlin_moe_expert_half_tokens: dict[str, float] = field(default_factory=dict)
    # TensorRT-LLM's decode attention: the share of a GPU's memory bandwidth it reaches reading an FP8 KV cache, by GPU
    # name; a GPU absent (or a dense model) reads at decode_mbu (engine_terms.trtllm_kv_read_fraction)
    trtllm_decode_attention_kv_fraction: dict[str, float] = field(default_factory=dict)
    # TensorRT-LLM's NVFP4 products: the share of a GPU's dense FP4 peak its measured GEMMs reach, by GPU name;
    # FP4 serving products scale fp4_matmul_efficiency by it over B200's (serve_precision_efficiency); absent: 1
    fp4_gemm_peak_share: dict[str, float] = field(default_factory=dict)
    # serving engines' BF16 and per-tensor FP8 GEMMs: the share of a GPU's dense peak they reach, by precision and GPU
    # name, and the GPUs the fitted serve_matmul_efficiency is theirs (the reference, each taking 1); another stated
    # GPU's BF16/FP8 serving products scale by its share over the reference's mean (serve_gemm_ratio); absent: 1
    serve_gemm_peak_share: dict[str, dict[str, float]] = field(default_factory=dict)
    serve_gemm_reference: tuple[str, ...] = ()
    # TensorRT-LLM's own TP all-reduce inside an NVLink server: its fixed cost, by GPU name; a GPU absent takes
    # latency_s["scale-up"] (engine_terms.allreduce_latency_s)
    trtllm_allreduce_latency_s: dict[str, float] = field(default_factory=dict)
    # TensorRT-LLM's context attention with an FP8 KV cache: the share of the BF16 peak its causal pairs run at, and
    # the extra key pairs a query costs, by CUDA compute capability; absent: attention_efficiency, none
    # (attention_rate.trtllm_prompt_attention_peak_share)
    trtllm_context_attention_peak_share: dict[str, float] = field(default_factory=dict)
    trtllm_context_attention_extra_pairs: dict[str, float] = field(default_factory=dict)
    # NCCL's all-gather / reduce-scatter inside an NVLink server: the fixed cost of each of the two collectives of an
    # expert-parallel exchange wider than TP (attention DP), by GPU name and group size; a GPU or size absent takes
    # the link's latency (engine_terms.ep_exchange_latency_s)
    ep_exchange_latency_s: dict[str, dict[int, float]] = field(default_factory=dict)
    fa2_hopper_attention_efficiency: float = 0.0  # FlashAttention-2-class kernels on Hopper and newer (0: as flash)
    # fused attention's rate by head size over head dimension 128's, by CUDA compute capability major version, and the
    # pairs a query a sliding-window layer costs beyond its window (speed.attention_rate; empty / 0: none)
    attention_head_dim_rate: dict[str, dict[int, float]] = field(default_factory=dict)
    # training's fused attention on a stated GPU over the reference family's (train_attention_reference, a compute
    # capability major) at the same head size, by GPU name and head dimension (attention_rate.train_attention_rate_ratio;
    # a GPU absent: attention_head_dim_rate of its own family)
    train_attention_hopper_ratio: dict[str, dict[int, float]] = field(default_factory=dict)
    train_attention_reference: str = ""
    window_attention_extra_tokens: float = 0.0
    # NCCL all-to-all's measured share of the scale-up link, by GPU name (an EP dispatch inside a server; absent:
    # link_efficiency)
    alltoall_link_efficiency: dict[str, float] = field(default_factory=dict)
    # a fused (flash) attention kernel's backward over its forward in matrix-product FLOPs (2.0: the FLOP count's)
    fused_attention_backward_ratio: float = 2.0
    # the CTAs (one an NCCL channel) a data-parallel collective holds while it runs: products beside it lose that
    # share of the SMs (data_parallel.collective_sm_share; 0: none)
    collective_ctas: float = 0.0
    # bytes a routed token moves outside fused kernels for biased experts (per hidden value) and a clamped GLU (per
    # intermediate value), forward and backward and forward alone (empty: none charged)
    moe_unfused_expert_bytes: dict[str, float] = field(default_factory=dict)
    # bytes a token's routed copies move a hidden value in Megatron-Core's all-to-all dispatcher's permutations, in
    # all and forward alone (experts.permutation_bytes; empty: none charged)
    moe_permutation_bytes: dict[str, float] = field(default_factory=dict)
    origin: Literal["calibrated", "user"] = "calibrated"  # "user": the user's --mfu/--mbu replace fitted efficiencies
    user_efficiencies: tuple[str, ...] = ()  # which of "mfu", "mbu" the user gave (origin "user"); the others fitted
    evidence: dict[str, dict[str, GpuEvidence]] = field(default_factory=dict)  # per GPU name, per kind of run
    # how much faster (a fraction) a serving layout must be predicted than the planner's first to be chosen over it:
    # the median disagreement of the model between two layouts of one workload (layout_margin.layout_spread)
    layout_margin: float = 0.0
    # the same per class of the worse link the two layouts cross ("scale-up", "pcie-or-network":
    # topology.layout_margin_class); a class absent: layout_margin
    layout_margins: dict[str, float] = field(default_factory=dict)
    # how much faster (a fraction) a training layout must be predicted than the chooser's first that fits to replace
    # it, unless simpler (layout_margin.training_layout_spread; layouts.choose_training_layout)
    training_layout_margin: float = 0.0

    def layout_margin_of(self, margin_class: str) -> float:
        """The serving chooser's margin between two layouts of ``margin_class`` (:attr:`layout_margins`; the pooled
        :attr:`layout_margin` for a class the calibration has no value of)."""
        return self.layout_margins.get(margin_class, self.layout_margin)

    def evidence_for(self, gpu: GpuSpec, kind: str) -> GpuEvidence | None:
        """How ``gpu``'s own measured runs of ``kind`` (:data:`~anchorgpu.planner.speed.evidence.EVIDENCE_KINDS`,
        or ``kind@engine`` for one engine's) fell around the model; ``None`` where it has none."""
        return self.evidence.get(gpu.name, {}).get(kind)

    def serving_evidence(self, gpu: GpuSpec, kind: str, engine: str) -> tuple[GpuEvidence | None, str | None]:
        """(evidence, engine) of a serving plan: the planned engine's own rows on ``gpu`` where at least
        :data:`~anchorgpu.planner.speed.evidence.MIN_HELD_OUT` of them were held out, else every engine's (engine
        None)."""
        own = self.evidence_for(gpu, engine_kind(kind, engine))
        if own is not None and own.held_out >= MIN_HELD_OUT:
            return own, engine
        return self.evidence_for(gpu, kind), None

    def stack(self, gpu: GpuSpec) -> StackConstants:
        return self.stacks[stack_of(gpu)]

    def per_layer_step_s(self, gpu: GpuSpec) -> float:
        """A serving step's fixed cost per layer on ``gpu``: its stack's fitted ``per_layer_step_s`` (fitted on mostly
        Hopper rows) at the GPU family's small-kernel floor over Hopper's (:attr:`kernel_floor_ratio`, by CUDA compute
        capability; a family absent: 1.0). The plan (step_constants), the sweep and the assumption line read it."""
        return self.stack(gpu).per_layer_step_s * self.kernel_floor_ratio.get(gpu.compute_capability or "", 1.0)

    def band(self, gpu: GpuSpec, phase: str, kind: str | None = None) -> Band:
        """The band of ``phase`` (train, serve) for the GPU's stack and, where the held-out rows of a ``kind`` of
        run (``moe``: a mixture of experts, trained or served; ``pp``: serving over pipeline stages; ``cp``: dense
        training with context parallelism) fell apart from
        the rest, that kind's; else of the phase over all stacks."""
        stack = stack_of(gpu)
        if kind is not None:
            for name in (f"{stack}-{phase}-{kind}", f"{phase}-{kind}"):
                if name in self.bands:
                    return self.bands[name]
        return self.bands.get(f"{stack}-{phase}") or self.bands[phase]

    def band_for(self, gpu: GpuSpec, phase: str, kind: str | None = None, engine: str | None = None) -> Band:
        """:meth:`band`, widened by how ``gpu``'s own held-out runs of the kind fell (:meth:`Band.holding`): a
        serving plan's by its ``engine``'s runs where enough were held out (:meth:`serving_evidence`), a training
        plan's by the GPU's training runs. The stack-wide band says how far runs fell around the model on every GPU;
        where this GPU's runs sat to one side (RTX PRO 6000's dense serving at a median 1.38x), the band a plan on
        it shows reaches them. With the user's efficiencies (``origin`` user) the band is theirs, unwidened."""
        band = self.band(gpu, phase, kind)
        if self.origin == "user" or not self.evidence:
            return band
        key = evidence_kind(phase, kind)
        evidence = self.serving_evidence(gpu, key, engine)[0] if engine else self.evidence_for(gpu, key)
        return band.holding(evidence)

    def serve_precision_efficiency(self, gpu: GpuSpec, precision: str, *, block_fp8: bool = False) -> float:
        """A wide serving product's share of the ``precision`` peak: ``serve_matmul_efficiency`` scaled by the
        training FP8/BF16 ratio for FP8 and by :meth:`serve_gemm_ratio` (a GPU whose measured BF16/FP8 GEMMs reach
        less of their peak than the reference Hopper GPUs'; not for FP8 weights in blocks, ``block_fp8``, whose
        measured kernels reach no less); for FP4 the serving fit's own ``fp4_matmul_efficiency`` (no training row
        is FP4, so no training constant enters it and a serving change cannot move the training fit through it),
        scaled by :meth:`fp4_gemm_ratio` (a GPU whose measured FP4 GEMMs reach more or less of their peak than B200's)."""
        k = self.stack(gpu)
        if precision == "fp4":
            return k.fp4_matmul_efficiency * self.fp4_gemm_ratio(gpu)
        ratio = 1.0 if block_fp8 and precision == "fp8" else self.serve_gemm_ratio(gpu, precision)
        return k.serve_matmul_efficiency * self.low_precision_ratio(gpu, precision) * ratio

    def serve_gemm_ratio(self, gpu: GpuSpec, precision: str) -> float:
        """The share of its dense ``precision`` peak ``gpu``'s measured BF16 or FP8 serving GEMMs reach over the
        reference GPUs' mean (:attr:`serve_gemm_peak_share`, :attr:`serve_gemm_reference`: the fitted
        ``serve_matmul_efficiency`` is theirs); 1.0 for a reference GPU and where the GPU, the precision or the
        reference is absent.

        >>> from anchorgpu.hardware import get_gpu
        >>> from anchorgpu.planner.speed.calibration import calibration
        >>> cal = calibration()
        >>> round(cal.serve_gemm_ratio(get_gpu("b200"), "fp8"), 3), cal.serve_gemm_ratio(get_gpu("h200"), "fp8")
        (0.847, 1.0)
        """
        return _share_ratio(self.serve_gemm_peak_share.get(precision), gpu.name, self.serve_gemm_reference)

    def train_gemm_ratio(self, gpu: GpuSpec, precision: str) -> float:
        """How much of its dense peak a training product on ``gpu`` reaches against the fitted one: for BF16, the
        same measured GEMM share over the reference Hopper GPUs' as serving takes (:meth:`serve_gemm_ratio`; the
        fitted ``train_matmul_efficiency`` rests on A100 and H100 rows, and AIConfigurator's BF16 tables hold the
        Blackwell shares below Hopper's at training's rows too: m 8,192-65,536 H100 0.776, B200 0.674, GB200 0.640,
        GB300 0.743, benchmarks/hardening/stop61_mboss.md); 1.0 for FP8 and FP4, whose fitted efficiencies already
        include Blackwell rows (the MXFP8 ones, block-scaled: serving's ``fp8_block`` rule, no lower than Hopper's);
        1.0 with the user's own efficiency (``origin`` user: their MFU is the share they gave).

        >>> from anchorgpu.hardware import get_gpu
        >>> from anchorgpu.planner.speed.calibration import calibration
        >>> cal = calibration()
        >>> round(cal.train_gemm_ratio(get_gpu("gb200"), "bf16"), 3), cal.train_gemm_ratio(get_gpu("gb200"), "fp8")
        (0.831, 1.0)
        >>> cal.train_gemm_ratio(get_gpu("h100"), "bf16"), cal.train_gemm_ratio(get_gpu("a100"), "bf16")
        (1.0, 1.0)
        """
        if precision != "bf16" or self.origin == "user":
            return 1.0
        return self.serve_gemm_ratio(gpu, "bf16")

    def fp4_gemm_ratio(self, gpu: GpuSpec) -> float:
        """The share of its dense FP4 peak ``gpu``'s measured NVFP4 GEMMs reach over B200's
        (:attr:`fp4_gemm_peak_share`; the fitted ``fp4_matmul_efficiency`` is B200's own), 1.0 where either is absent.

        >>> from anchorgpu.hardware import get_gpu
        >>> from anchorgpu.planner.speed.calibration import calibration
        >>> cal = calibration()
        >>> round(cal.fp4_gemm_ratio(get_gpu("rtx-pro-6000")), 2), cal.fp4_gemm_ratio(get_gpu("b200"))
        (1.58, 1.0)
        """
        return _share_ratio(self.fp4_gemm_peak_share, gpu.name, ("b200",))

    def low_precision_ratio(self, gpu: GpuSpec, precision: str) -> float:
        """How much less of its peak an FP8/FP4 product reaches than a BF16 one (1 for BF16)."""
        k = self.stack(gpu)
        if precision == "fp8":
            return k.fp8_matmul_efficiency / k.train_matmul_efficiency
        if precision == "fp4":
            return k.fp4_matmul_efficiency / k.train_matmul_efficiency
        return 1.0


def band_kind_of(*, moe: bool, phase: str, pp: int, cp: int = 1) -> str | None:
    """The kind whose held-out rows make a band (:meth:`Calibration.band`) and evidence of their own: ``moe`` for a
    mixture of experts, trained or served; ``pp`` for serving over pipeline stages; ``cp`` for dense training with
    context parallelism (ring attention, whose measured runs fell furthest of the dense ones); else None. The
    calibration keys its rows by it and every plan and recommendation reads its band by it.

    >>> band_kind_of(moe=True, phase="train", pp=1), band_kind_of(moe=False, phase="serve", pp=4)
    ('moe', 'pp')
    >>> band_kind_of(moe=False, phase="train", pp=4) is None, band_kind_of(moe=False, phase="train", pp=1, cp=2)
    (True, 'cp')
    """
    if moe:
        return "moe"
    if phase == "serve":
        return "pp" if pp > 1 else None
    return "cp" if cp > 1 else None


def stack_of(gpu: GpuSpec) -> Stack:
    """``rocm`` for AMD GPUs, ``cuda`` for NVIDIA."""
    return "rocm" if gpu.vendor == "AMD" else "cuda"


def _share_ratio(by_gpu: Mapping[str, float] | None, name: str, references: tuple[str, ...]) -> float:
    """GPU ``name``'s measured share of its peak in ``by_gpu`` over the mean of the ``references``' shares (the GPUs
    the fitted efficiency is theirs): 1.0 for a reference GPU and where the GPU or every reference is absent."""
    if not by_gpu or name in references:
        return 1.0
    share = by_gpu.get(name)
    reference = [by_gpu[ref] for ref in references if ref in by_gpu]
    return share / (sum(reference) / len(reference)) if share and reference else 1.0
