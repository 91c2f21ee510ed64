"""What one micro-batch costs a GPU of a training layout before data parallelism: its computation, tensor-,
context- and expert-parallel exchanges and MoE launches, the parts :func:`~anchorgpu.planner.speed.training.training_step`
adds data parallelism, offload, the pipeline and the optimizer to. Pure; stdlib only.

They depend on the layout's TP (and sequence parallelism), PP, CP, EP and virtual stages and the step's settings, not on its data parallelism or
ZeRO stage, so the layout chooser reads them (memoised, :func:`micro_step`) for a bound on a layout's speed that
layouts differing only in those share (:func:`~anchorgpu.planner.speed.training.tokens_per_s_bound`), and the full
step of a layout reuses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.memory.activations import sequence_parallel_share
from anchorgpu.planner.pipeline_layout import PipelineLayout, busiest_rank_layers
from anchorgpu.planner.speed.attention_rate import timed_prefill_attention_flops_per_token, train_attention_rate_ratio
from anchorgpu.planner.speed.constants import Calibration, StackConstants
from anchorgpu.planner.speed.context_parallel import context_parallel_s
from anchorgpu.planner.speed.dequant import (
    QLORA_BASE_FORMAT,
    dequant_bytes_per_layer,
    dequant_expert_bytes_per_layer,
    dequant_passes,
)
from anchorgpu.planner.speed.experts import (
    MoeDispatcher,
    expert_launch_s,
    expert_rows_factor,
    moe_product_shares,
    permutation_bytes,
    ranks_reached,
    unfused_expert_bytes,
)
from anchorgpu.planner.speed.flops import (
    MOE_FORWARD_AGAIN,
    Recompute,
    TrainKind,
    attention_flops_per_token,
    causal_training_flops_per_token,
    lm_head_params,
    training_flops_per_token,
)
from anchorgpu.planner.speed.links import (
    ACTIVATION_BYTES,
    PeakChoice,
    allreduce_s,
    expert_dispatch_s,
    group_link,
    hopper_or_newer,
    peak_for,
)
from anchorgpu.planner.speed.pipeline import slowest_stage_layers

__all__ = ["MicroStep", "micro_step"]


@dataclass(frozen=True, slots=True)
class MicroStep:
    """One micro-batch on one GPU (seconds), and what the rest of the step reads of it."""

    choice: PeakChoice
    model_flops_per_token: float
    hardware_flops_per_token: float
    ceiling_flops_per_token: float  # model FLOPs with attention causal, as run: the ceiling's (flops.causal_...)
    compute_s: float
    tp_s: float
    cp_s: float
    ep_s: float
    launch_s: float
    stage_layers: float  # the busiest rank's layers
    act_bytes: float  # a micro-batch's activations at a layer boundary, one GPU's tokens (before the TP split)
    linear_s: float  # of compute_s, tp_s and ep_s, what grows in proportion to the tokens (the rest never shrinks)


class _StepShape(NamedTuple):
    """What a micro-batch's terms read of the model, GPU and step settings whatever the layout (:func:`_step_shape`)."""

    k: StackConstants
    pytorch: bool
    ew_bytes: float  # elementwise bytes per hidden value
    choice: PeakChoice
    model_f: float
    hw_f: float
    ceiling_f: float  # causal_training_flops_per_token
    attn_passes: float  # forward-times of attention in the FLOP count (the backward twice the forward)
    attn_run_passes: float  # forward-times the kernels run (a fused kernel's backward recomputes the scores)
    attn_bwd_passes: float  # of attn_run_passes, the backward's
    matmul_f: float  # before the routed experts' rows factor
    attn_run_f: float
    att_rate: float
    mm_peak_eff: float  # the matmul efficiency before its width falloff
    expert_share: float
    route_share: float
    passes: float  # of the elementwise operators
    unfused_bytes: float  # a routed token's bytes outside the fused kernels (0.0 without a mixture of experts)
    volumes: float  # TP all-reduce volumes per layer
    head_f: float  # the LM head's share of matmul_f: it stays at 16 bits when the blocks' products run in FP8/FP4
    dequant_bytes: float  # a layer's 4-bit weights dequantized in a micro-batch, bytes (QLoRA only; speed.dequant)
    dequant_expert_bytes: float  # the routed experts' part of it (held 1/EP a rank under expert parallelism)


@partial(memo_on_frozen, frozen=3)
def _step_shape(model: ModelSpec, gpu: GpuSpec, cal: Calibration, seq_tokens: int, recompute: Recompute,
                kind: TrainKind, precision: str, attention_kernel: str, train_stack: str,
                base_format: str = QLORA_BASE_FORMAT) -> _StepShape:
    k = cal.stack(gpu)
    pytorch = train_stack == "pytorch"
    if pytorch and attention_kernel == "flash":  # PyTorch's SDPA picks its FlashAttention-2 backend (stated fa2)
        attention_kernel = "fa2"
    ew_bytes = (k.pytorch_elementwise_bytes_per_hidden or k.elementwise_bytes_per_hidden) if pytorch \
        else k.elementwise_bytes_per_hidden
    choice = peak_for(gpu, precision)
    bf16 = peak_for(gpu, "bf16").flops_per_s
    # PyTorch's op-level selective policy: every other product of a block and every pointwise operation run again,
    # the attention output kept (planner.memory.op_sac)
    op_sac = pytorch and recompute == "selective"
    model_f, hw_f = training_flops_per_token(model, seq_tokens, recompute=recompute, kind=kind, op_sac=op_sac)
    attn = attention_flops_per_token(model, seq_tokens, causal=False)
    # the attention core has no weight: its backward (dQ, dK, dV) runs whole under LoRA too
    attn_passes = 3.0 + (0.0 if op_sac else {"none": 0.0, "selective": 1.0, "moe": 0.0, "full": 1.0}[recompute])
    attn_f = attn_passes * attn
    matmul_f = hw_f - attn_f
    # the time: what the kernel computes (a causal flash kernel skips the masked half the MFU count above includes).
    # The FLOP count gives the backward twice the forward's products; a fused (flash) kernel's backward runs
    # fused_attention_backward_ratio of them, as it computes the score matrix again instead of reading it
    bwd_count = 2.0
    bwd_run = bwd_count if attention_kernel == "unfused" else bwd_count * cal.fused_attention_backward_ratio / 2.0
    attn_run_passes = attn_passes - bwd_count + bwd_run
    # a fused kernel's time: sliding windows charged their per-query extra, the rate scaled by head size and, where
    # measured, by the GPU's own rate against Hopper's (speed.attention_rate)
    attn_run_f = attn_f if attention_kernel == "unfused" else attn_run_passes * timed_prefill_attention_flops_per_token(
        model, seq_tokens, cal.window_attention_extra_tokens)
    fa2 = attention_kernel == "fa2" and cal.fa2_hopper_attention_efficiency and hopper_or_newer(gpu)
    att_rate = bf16 * (cal.fa2_hopper_attention_efficiency if fa2 else k.attention_efficiency)
    if attention_kernel != "unfused":
        att_rate *= train_attention_rate_ratio(model, gpu, cal)
    # Blackwell's BF16 GEMMs reach less of their peak than the Hopper ones the efficiency is fitted on
    # (Calibration.train_gemm_ratio, measured)
    mm_peak_eff = (k.train_matmul_efficiency * cal.low_precision_ratio(gpu, choice.precision)
                   * cal.train_gemm_ratio(gpu, choice.precision))
    expert_share, route_share = moe_product_shares(model)
    passes = 1.0 + (1.0 / 3.0 if recompute == "full" or op_sac else 0.0)
    unfused = (unfused_expert_bytes(model, cal.moe_unfused_expert_bytes, recompute)
               if not pytorch and model.moe is not None else 0.0)
    # two volumes forward, two backward; the recomputed forward again: whole layers' two, or the MoE blocks' one
    volumes = 6.0 if recompute == "full" else 4.0
    if recompute == "moe" and model.moe is not None:
        volumes += model.moe.num_moe_layers / model.num_layers
    # the output layer is left out of the low-precision recipes: torchao's convert_to_float8_training under
    # torchtitan's filter of "output" and OLMo-core's modules_to_ignore {"lm_head.w_out"}; Megatron-Core's
    # output_layer is a ColumnParallelLinear, not a Transformer Engine module, so fp8_autocast leaves it at BF16
    head_f = 0.0
    if choice.precision != "bf16":  # forward and backward (LoRA: the input gradient only) of its V x h product
        head_f = (3.0 if kind == "full" else 2.0) * 2.0 * lm_head_params(model)
    ceiling_f = causal_training_flops_per_token(model, seq_tokens, kind=kind)
    # QLoRA's 4-bit base dequantized to 16 bits before each pass that multiplies by it (speed.dequant)
    passes_ = dequant_passes(recompute, op_sac=op_sac) if kind == "qlora" else 0.0
    dequant = dequant_bytes_per_layer(model, base_format) * passes_ if passes_ else 0.0
    dequant_expert = (dequant_expert_bytes_per_layer(model, base_format) * passes_
                      if passes_ and model.moe is not None else 0.0)
    return _StepShape(k, pytorch, ew_bytes, choice, model_f, hw_f, ceiling_f, attn_passes, attn_run_passes, bwd_run, matmul_f,
                      attn_run_f, att_rate, mm_peak_eff, expert_share, route_share, passes, unfused, volumes, head_f,
                      dequant, dequant_expert)


def _compute_micro_step(
    model: ModelSpec, gpu: GpuSpec, cal: Calibration, tp: int, pp: int, cp: int, ep: int, virtual_stages: int,
    tp_overlap: bool, ep_overlap: bool, seq_tokens: int, micro_batch: int, recompute: Recompute, kind: TrainKind,
    precision: str, gpus_per_server: int, network_bytes_per_s: float | None, attention_kernel: str, train_stack: str,
    pipeline_layout: PipelineLayout | None, sequence_parallel: bool, moe_dispatcher: MoeDispatcher = "alltoall",
    base_format: str = QLORA_BASE_FORMAT,
) -> MicroStep:
    shape = _step_shape(model, gpu, cal, seq_tokens, recompute, kind, precision, attention_kernel, train_stack,
                        base_format if kind == "qlora" else QLORA_BASE_FORMAT)
    k, pytorch, choice, attn_run_f, att_rate = shape.k, shape.pytorch, shape.choice, shape.attn_run_f, shape.att_rate
    h, layers = model.hidden_size, model.num_layers
    stage_layers = float(slowest_stage_layers(layers, pp, virtual_stages, busiest_rank_layers(pipeline_layout)))
    imbalance = stage_layers * pp / layers  # the busiest rank's share of the layers over an even share
    tokens_rank = micro_batch * seq_tokens / cp  # tokens one GPU holds in a micro-batch

    # compute (the layout's share of _step_shape's FLOPs)
    matmul_f = shape.matmul_f
    width = h / tp
    mm_eff = shape.mm_peak_eff * width / (width + k.train_matmul_half_width)
    split = tp * pp
    excess_f = 0.0  # the routed experts' products past their full efficiency (expert_rows_factor), per token
    if shape.expert_share:
        # the routed experts' grouped products: an EP group's tokens meet at each expert, tokens_rank * ep * k / E
        # rows an expert, at the serving fit's rows-to-efficiency falloff (calibration moe_expert_half_tokens)
        factor = expert_rows_factor(tokens_rank * ep, shape.route_share, k.moe_expert_half_tokens, cal.moe_tile_rows)
        excess_f = matmul_f * shape.expert_share * (factor - 1.0)
        matmul_f *= 1.0 + shape.expert_share * (factor - 1.0)
    compute_s = imbalance * (matmul_f * tokens_rank / split / (choice.flops_per_s * mm_eff)
                             + attn_run_f * tokens_rank / split / att_rate)
    if shape.head_f:  # the LM head at the BF16 rate, not the FP8/FP4 one (_step_shape)
        bf16_eff = (k.train_matmul_efficiency * cal.train_gemm_ratio(gpu, "bf16")
                    * width / (width + k.train_matmul_half_width))
        compute_s += imbalance * shape.head_f * tokens_rank / split * (
            1.0 / (peak_for(gpu, "bf16").flops_per_s * bf16_eff) - 1.0 / (choice.flops_per_s * mm_eff))
    elementwise_s = (tokens_rank * stage_layers * shape.ew_bytes * h / tp * shape.passes
                     / gpu.memory_bandwidth_bytes_per_s)
    if not sequence_parallel and tp > 1:
        # the norms, dropout and residual adds on the whole sequence on every TP rank: their share of the traffic
        # (as of the kept activations, sequence_parallel_share) t times over, the rest split by t as before
        elementwise_s *= 1.0 + sequence_parallel_share(model) * (tp - 1)
    compute_s += elementwise_s
    # not in proportion to the tokens: the experts' falloff (tokens x factor: a part in proportion, and a part that
    # grows less, never shrinking: experts.expert_rows_factor) and the dequantization (once a micro-batch)
    fixed_s = imbalance * excess_f * tokens_rank / split / (choice.flops_per_s * mm_eff) if excess_f else 0.0
    if shape.dequant_bytes:  # memory-bound, at the share of the bandwidth the other copies get (speed.dequant)
        # of the weights a rank holds: its TP share of the dense linears, its EP share of the experts (TP's without EP)
        expert = shape.dequant_expert_bytes
        held = (shape.dequant_bytes - expert) / tp + expert / (ep if ep > 1 else tp)
        dequant_s = stage_layers * held / (gpu.memory_bandwidth_bytes_per_s * k.decode_mbu)
        compute_s += dequant_s
        fixed_s += dequant_s
    if not pytorch and model.moe is not None:
        # biased experts' fc2 bias and a clamped GLU run outside Megatron-Core's fused kernels (gpt-oss): their
        # bytes a routed token at memory bandwidth, split by TP as the elementwise term (unfused_expert_bytes)
        moe_layers_ = stage_layers * model.moe.num_moe_layers / layers
        # and the dispatcher's permutations of the routed copies (experts.permutation_bytes), split by TP likewise
        permuted = permutation_bytes(model, cal.moe_permutation_bytes, ep, recompute, moe_dispatcher)
        compute_s += (tokens_rank * moe_layers_ * (shape.unfused_bytes + permuted) / tp
                      / gpu.memory_bandwidth_bytes_per_s)

    # tensor parallelism (sequence parallel: reduce-scatter + all-gather = one all-reduce volume; without it, that
    # all-reduce itself)
    tp_link_ = group_link(gpu, tp, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
    volumes = shape.volumes
    if model.moe is not None and ep > 1 and tp > 1 and not model.params.shared_experts:
        # under EP the experts are not split by TP (expert TP 1): Megatron-Core's MoE layer takes its sequence-parallel
        # shard of the tokens as it is (MoELayer.forward refuses TP without sequence parallelism in training) and the
        # dispatcher gathers over the expert TP group only when it is larger than 1, so a MoE layer has no TP
        # collective around its MLP: only the attention's, once forward and once backward, and once more where whole
        # layers are recomputed (the MoE block's own recompute runs none). A shared expert is a TP-split dense MLP
        # with its gather and scatter (SharedExpertMLP), so a model with one keeps them
        again = 1.0 if recompute in MOE_FORWARD_AGAIN else 0.0
        volumes -= (2.0 + again) * model.moe.num_moe_layers / layers
    act_bytes = tokens_rank * h * ACTIVATION_BYTES
    tp_once = allreduce_s(act_bytes, tp, tp_link_, efficiency=cal.link_efficiency)
    tp_s = volumes * stage_layers * tp_once
    # its bytes' share (twice the bytes, less the latency paid once either way): in proportion to the tokens
    tp_grow_s = volumes * stage_layers * (allreduce_s(2.0 * act_bytes, tp, tp_link_, efficiency=cal.link_efficiency)
                                          - tp_once) if tp_s else 0.0
    if tp_overlap:
        tp_s *= cal.overlap_exposed_fraction
        tp_grow_s *= cal.overlap_exposed_fraction

    # context parallelism: K and V exchanged between the ranks that share a sequence (speed.context_parallel)
    cp_s = 0.0
    if cp > 1:
        cp_link = group_link(gpu, tp * cp, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
        cp_s = context_parallel_s(model, tp, pp, cp, cp_link, cal.link_efficiency, tokens_rank,
                                  attn_run_f * tokens_rank / split / att_rate, shape.attn_run_passes,
                                  shape.attn_bwd_passes, stage_layers, pytorch=pytorch)

    # expert parallelism: dispatch + combine, forward and backward, per MoE layer
    ep_s = ep_grow_s = 0.0
    if model.moe is not None and ep > 1:
        # the experts are not split by TP under EP (expert tensor parallelism 1, as the memory's shard_share
        # holds them): an EP group is ep consecutive GPUs, each sending its TP share of the stage's tokens; across
        # servers a token crosses the network once per server it goes to (expert_dispatch_s)
        moe_layers = stage_layers * model.moe.num_moe_layers / layers
        # dispatch and combine forward and backward, and forward again when the MoE blocks are recomputed
        passes = 6 if recompute in MOE_FORWARD_AGAIN else 4
        # DeepEP (the flex dispatcher's deepep backend) sends a token once to each EP rank holding any of its
        # experts (its dispatch layout's is_token_in_rank), where the all-to-all dispatcher sends one permuted copy
        # per routed expert (experts.ranks_reached); across servers its kernel pipelines the network hop and the
        # scale-up hop (collectives.expert_dispatch_s)
        deepep = moe_dispatcher == "deepep"
        rows = ranks_reached(model, ep) if deepep else None
        once, twice = (expert_dispatch_s(
            h * ACTIVATION_BYTES, tokens, model.moe.experts_per_token, ep, gpu, gpus_per_server=gpus_per_server,
            network_bytes_per_s=network_bytes_per_s, efficiency=cal.link_efficiency,
            scaleup_efficiency=cal.alltoall_link_efficiency.get(gpu.name), rows_per_token=rows,
            overlapped_hops=deepep)
            for tokens in (tokens_rank / tp, 2.0 * (tokens_rank / tp)))
        ep_s = passes * moe_layers * once
        ep_grow_s = passes * moe_layers * (twice - once)  # its bytes' share: latencies paid once either way
        if ep_overlap:  # beside another micro-batch's computation: the stated exposed share, as TP overlap's
            ep_s *= cal.overlap_exposed_fraction
            ep_grow_s *= cal.overlap_exposed_fraction
    launch_s = expert_launch_s(model, ep, stage_layers, k.moe_host_s_per_expert_gemm, kind=kind,
                               recompute=recompute)
    return MicroStep(choice, shape.model_f, shape.hw_f, shape.ceiling_f, compute_s, tp_s, cp_s, ep_s, launch_s, stage_layers,
                     act_bytes, compute_s - fixed_s + tp_grow_s + ep_grow_s)


micro_step = memo_on_frozen(_compute_micro_step, frozen=3)
""":func:`_compute_micro_step` memoised on the (frozen) model, GPU and calibration by identity and the rest by value:
a layout search reads it once for its speed bound and again for the full step, and layouts that differ only in
data parallelism or ZeRO stage share it."""
