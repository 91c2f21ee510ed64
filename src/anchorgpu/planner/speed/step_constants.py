"""The per-step constants of the serving model (:mod:`.serving`): a replica's setup, and the rates, links and fixed
costs every step of one (model, GPU, setup, calibration) shares, formed once for the prediction and once for the
roofline ceiling and memoised. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.formats import format_for_model
from anchorgpu.planner.speed.attention_rate import attention_rate_ratio, trtllm_context_attention
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.engine_terms import (  # allreduce_latency_s, prompt_attention_apart and
    # trtllm_kv_read_applies also imported from here by the catalog sweep (sweep_serving_ticks)
    allreduce_latency_s,
    ep_exchange_latency_s,
    host_passes_per_cycle,
    host_waited_passes,
    prompt_attention_apart,
    prompt_step_host_serial,
    trtllm_kv_read_applies,
    trtllm_kv_read_fraction,
    trtllm_moe_s_per_token,
)
from anchorgpu.planner.speed.experts import (
    dense_layers,
    moe_product_shares,
    routed_rows_per_token_share,
    routed_weight_bytes_share_per_gpu,
)
from anchorgpu.planner.speed.flops import forward_matmul_params, lm_head_params
from anchorgpu.planner.speed.launches import absorbed_dequant_bytes, fuses_norms_into_allreduce, launch_ratio
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, Link, data_parallel_link, group_link, host_kind, peak_for
from anchorgpu.planner.speed.mixed_attention import mixed_step_kv_read_factor, mixed_step_l2_kv_bytes
from anchorgpu.planner.speed.moe_backend import expert_half_tokens, marlin_expert_rate
from anchorgpu.planner.speed.product_shares import mixed_rate

__all__ = ["ServingSetup", "allreduce_latency_s", "prompt_attention_apart", "routed_rows_per_token_share",
           "serve_shape_factor", "trtllm_kv_read_applies"]


def serve_shape_factor(width: float, half_width: float) -> float:
    """Share of the serving efficiency a product of per-GPU width ``h/tp`` reaches: ``w / (w + w0)``.

    >>> serve_shape_factor(2048, 2048), serve_shape_factor(8192, 0.0)
    (0.5, 1.0)
    """
    return width / (width + half_width)


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ServingSetup:
    """One replica's serving configuration: what each GPU holds and how the replica is split."""

    weights_bytes_per_gpu: float  # the weights one GPU holds (its most-loaded stage's)
    kv_bytes_per_sequence_per_gpu: float  # at the average cached length
    precision: str = "bf16"  # matmul precision of the weights (fp8 / fp4 / bf16)
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    max_num_batched_tokens: int = 8192
    gpus_per_server: int = 8
    graph_batch_sizes: tuple[int, ...] = ()  # captured decode graphs that pad a batch up (empty: no padding)
    ep: int = 1  # MoE: the GPUs a layer's routed experts are split over (1: split with TP)
    block_fp8: bool = False  # weights FP8 in blocks: each product quantises its input first (a launch more)
    host_overlap: bool = True  # the engine's host work runs beside the GPU's (False: vLLM before async scheduling)
    ep_gather_bytes: float = 2.0  # EP wider than TP: bytes a value of the gathered tokens takes (16 bit, or the
    # FP8/NVFP4 inputs TensorRT-LLM quantises before its all-gather: :func:`ep_gather_bytes`)
    quantized_share: float = 1.0  # share of a token's products whose weights are quantized (the rest run at BF16's
    # rate: 16-bit attention beside MXFP4 experts, a checkpoint's exclusions, the LM head; product_shares)
    expert_quantized_share: float = 1.0  # the same share of the routed experts' products
    head_quantized_share: float = 1.0  # the same share of the LM head's product (0.0: kept 16-bit beside a quantized
    # format; product_shares.head_quantized_share): the rate the head's product a prompt token skips runs at
    absorbed_dequant: bool = False  # MLA: the engine dequantises the absorbed latent weights from FP8 every step
    # (SGLang on ROCm: launches.absorbed_dequant_bytes), kernels and bytes of a fixed cost
    engine: str = "vllm"  # the engine whose kernels run the steps ("trtllm": its MoE kernel's per-row cost, its
    # decode attention's KV read)
    attention_dp: bool = False  # the TP ranks ran attention data-parallel (a measured row's attention_dp_weights):
    # a mixture of experts' dense layers are whole on every GPU, so they exchange nothing (no TP all-reduce)
    whole_dense_extra_bytes: float = 0.0  # and each GPU reads their whole weights a step, this much beyond its TP share
    # (experts.whole_dense_layers_extra_bytes)
    kv_fp8: bool = False  # the KV cache is FP8 (TensorRT-LLM's decode attention reads it at its own measured rate)
    moe_backend: str = ""  # TensorRT-LLM's MoE kernel (speed.moe_backend: "trtllm-gen" takes its measured falloff)
    adp_balance: bool = False  # TensorRT-LLM's attention_dp_config.enable_balance: the EP group's replicas prefill
    # their prompts in the same steps (speed.batching._steady)
    lookup_table_bytes_per_gpu: float = 0.0  # of weights_bytes_per_gpu, the tables a step only gathers rows from and
    # does not stream (an untied token embedding: speed.lookup_tables); a step reads the rest
    weights_format: str = "bf16"  # the weights' format (formats.format_for_model's name): a MoE's routed experts' share
    # of the weight bytes read (experts.routed_weight_bytes_share_per_gpu)


def _link(gpu: GpuSpec, setup: ServingSetup) -> Link:
    return group_link(gpu, setup.tp, gpus_per_server=setup.gpus_per_server)


@dataclass(frozen=True, slots=True)
class _StepConstants:
    """What every step of one (model, GPU, setup, calibration, ideal) shares: rates, links, fixed costs."""

    matmul_params: float  # the counts the tick multiplies and divides by are kept as (exact) floats
    link: Link | None
    pp_link: Link | None
    fixed_s: float  # per pipeline tick: the step's cost and the stage's layers' launches
    host_s_per_sequence: float  # the engine's CPU work per running sequence a step (a pipeline cycle: times the
    # host's passes over the running sequences in it, host_passes_per_cycle), overlapped with the GPU's
    host_waited_s_per_sequence: float  # the part of it a pipeline cycle waits for on top of the GPUs' work (the
    # stages' own micro-batches' host work, host_waited_passes); 0.0 where all of it is overlapped
    host_serial_with_prompt: bool  # a step carrying prompt tokens adds the host's pass to the GPU's work instead of
    # overlapping it (TensorRT-LLM's eager, launch-bound prompt step: engine_terms.prompt_step_host_serial)
    elementwise_s_per_token: float
    knee: float  # soft_roofline's exponent
    # each rate the step formula divides by, formed once in the same order
    mem_rate: float  # bw * mbu
    matmul_rate: float  # peak * mm_eff
    head_params: float  # the LM head's V x h, which serving multiplies only at the positions it samples
    head_rate: float  # the rate the LM head's product reaches (matmul_rate's 16-bit part where the format keeps it so)
    attention_rate: float  # bf16 * att_eff, scaled by head size (speed.attention_rate)
    window_extra_tokens: float  # a sliding-window layer's pairs a query beyond its window, in prefill (0 ideal)
    routed_share: float | None  # MoE: the routed experts' share of a GPU's weight bytes; None for a dense model
    miss_per_token: float  # MoE: 1 - k/E, the chance one token skips a given expert
    allreduce_share: float  # 2 (tp - 1) / tp: the share of a message a ring all-reduce moves per GPU
    allreduce_rate: float  # link bandwidth x efficiency
    allreduce_latency_s: float
    allreduce_per_stage: float  # 2 L / pp: two all-reduces per layer of a stage
    p2p_rate: float  # the stage-to-stage link's bandwidth x efficiency
    split: float  # tp x pp: the GPUs one replica's products are split over
    hidden_size: float
    expert_share: float  # MoE: the active routed experts' share of the products a token passes (0.0 dense)
    expert_rate: float  # MoE: the rate the routed experts' products reach (matmul_rate where all share one precision)
    expert_kernel_rate: float  # MoE: the rate a kernel of its own runs them at with many rows an expert, in place of
    # expert_rate (vLLM's Marlin on Hopper: speed.moe_backend.marlin_expert_rate); 0.0: expert_rate
    route_share: float  # MoE: k / E, the share of a step's tokens each routed expert gets
    expert_half_tokens: float  # MoE: the tokens per expert at which those products reach half their efficiency
    expert_tile_rows: float  # MoE: one tile of a grouped product; fewer rows per expert cost what a tile does
    expert_token_scale: float  # EP wider than TP: the replicas whose tokens one GPU's experts serve, ep / tp (else 1)
    ep_per_stage: float  # EP wider than TP: two collectives (all-gather, reduce-scatter) per MoE layer of a stage
    ep_token_bytes: float  # per token a GPU receives from the other replicas, in 16-bit token sets: the mean of the
    # gathered values' bytes and the 16-bit outputs' (1.0 when both are 16 bit)
    ep_rate: float  # the EP group's link bandwidth x efficiency
    ep_latency_s: float
    kv_rate: float  # the rate a decode step reads the KV cache: mem_rate, or the engine's attention kernel's measured
    mixed_kv_factor: float  # times a step holding a prompt chunk reads its decodes' KV cache (vLLM's FlashAttention 2
    # per query head: speed.mixed_attention.mixed_step_kv_read_factor); 1.0 elsewhere and for the ceiling
    mixed_kv_l2_bytes: float  # the decodes' KV bytes up to which that reread hits the L2 (mixed_step_l2_kv_bytes);
    # inf where the factor is 1.0, so the step's test of it fails at its first comparison
    prompt_attention_apart: bool  # the prompt chunk's attention runs as its own kernel after the decodes' (TensorRT-LLM:
    # engine_terms.prompt_attention_apart), so its time adds to the KV read rather than hiding under it
    prompt_attention_rate: float  # that kernel's rate on a prompt's causal pairs (TensorRT-LLM's measured, else
    prompt_extra_pairs: float  # attention_rate) and the key pairs a query costs beyond them (attention_rate module)


_STEP_MEMO: dict[tuple[int, int, str, int, int, int, int, int, float, float, float, float, bool, bool, str, bool, bool,
                      str, str],
                 tuple[ModelSpec, GpuSpec, Calibration, tuple[_StepConstants, _StepConstants]]] = {}


def _constants(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration, ideal: bool) -> _StepConstants:
    """The per-step constants of the prediction, or with ``ideal`` of the roofline ceiling (:func:`_pair`)."""
    return _pair(model, gpu, setup, cal)[ideal]


def _pair(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration) -> tuple[_StepConstants, _StepConstants]:
    """The per-step constants of the prediction and of the ceiling, memoised on what they depend on: the (frozen)
    model, GPU and calibration by identity, and every field of the setup :func:`_build` reads (precision and FP8 in
    blocks, TP, PP, EP and server size, the quantized shares, the engine and its MoE kernel, the weights' format); any
    plan of that model on that GPU and split reuses them."""
    key = (id(model), id(gpu), setup.precision, setup.tp, setup.pp, setup.gpus_per_server, id(cal), setup.ep,
           setup.ep_gather_bytes, setup.quantized_share, setup.expert_quantized_share, setup.head_quantized_share,
           setup.absorbed_dequant,
           setup.block_fp8, setup.engine, setup.attention_dp, setup.kv_fp8, setup.moe_backend, setup.weights_format)
    hit = _STEP_MEMO.get(key)
    if hit is not None and hit[0] is model and hit[1] is gpu and hit[2] is cal:
        return hit[3]
    pair = (_build(model, gpu, setup, cal, False), _build(model, gpu, setup, cal, True))
    if len(_STEP_MEMO) >= 1024:
        _STEP_MEMO.clear()
    _STEP_MEMO[key] = (model, gpu, cal, pair)
    return pair


def _build(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration, ideal: bool) -> _StepConstants:
    k = cal.stack(gpu)
    bw = gpu.memory_bandwidth_bytes_per_s
    choice = peak_for(gpu, setup.precision)
    link = pp_link = ep_link = None
    if setup.tp > 1:
        link = _ceiling_link(_link(gpu, setup), ideal)
    if setup.pp > 1:
        pp_link = _ceiling_link(group_link(gpu, setup.tp * setup.pp, gpus_per_server=setup.gpus_per_server), ideal)
    moe = model.moe
    wide_ep = moe is not None and setup.ep > setup.tp  # experts split over GPUs of other replicas (attention DP)
    if wide_ep:  # one stage's GPUs
        # over servers every GPU of the group in a server gathers through its own NIC (data_parallel_link)
        members = min(setup.ep, setup.gpus_per_server or 8)
        ep_link = _ceiling_link(data_parallel_link(gpu, setup.ep, members, gpus_per_server=setup.gpus_per_server),
                                ideal)
    # memory-bound operators between the products (norms, activations, residuals, rotary): one forward
    # pass is a third of the training traffic per token, layer and hidden unit
    mbu = 1.0 if ideal else k.decode_mbu
    shape = serve_shape_factor(model.hidden_size / setup.tp, k.serve_matmul_half_width)
    mm_eff = 1.0 if ideal else cal.serve_precision_efficiency(gpu, choice.precision,
                                                              block_fp8=setup.block_fp8) * shape
    att_eff = 1.0 if ideal else k.attention_efficiency
    bf16 = peak_for(gpu, "bf16").flops_per_s
    # the products of 16-bit weights (a share below 1) at BF16's rate, the rest at the format's
    low = choice.flops_per_s * mm_eff
    b16 = bf16 * (1.0 if ideal else cal.serve_precision_efficiency(gpu, "bf16") * shape)
    link_eff = 1.0 if ideal else cal.link_efficiency
    expert_share, route_share = moe_product_shares(model)
    # an engine dequantising MLA's absorbed weights every step: a cast and a scale before each of the two products
    # (their launches) and their traffic, the same at any batch (launches.absorbed_dequant_bytes)
    dequant = setup.absorbed_dequant and model.mla is not None
    dequant_s = absorbed_dequant_bytes(model, setup.tp) / setup.pp / (bw * mbu) if dequant and not ideal else 0.0
    kv_fraction = 0.0 if ideal else trtllm_kv_read_fraction(model, gpu, setup, cal)
    head_ratio = 1.0 if ideal else attention_rate_ratio(model, gpu, cal)
    context = None if ideal else trtllm_context_attention(gpu, cal, apart=prompt_attention_apart(setup.engine),
                                                          kv_fp8=setup.kv_fp8)
    fused_norms = fuses_norms_into_allreduce(model, setup.engine, setup.tp, attention_dp=setup.attention_dp)
    mixed = 1.0 if ideal else mixed_step_kv_read_factor(model, gpu, engine=setup.engine, tp=setup.tp,
                                                        attention_dp=setup.attention_dp, kv_fp8=setup.kv_fp8)
    return _StepConstants(
        matmul_params=float(forward_matmul_params(model)), link=link, pp_link=pp_link,
        # the per-layer launches at the GPU family's small-kernel floor over Hopper's (kernel_floor_ratio)
        fixed_s=0.0 if ideal else (k.per_step_s + model.num_layers / setup.pp * cal.per_layer_step_s(gpu)
                                   * launch_ratio(model, cal.launches, block_fp8=setup.block_fp8,
                                                  absorbed_dequant=dequant, norms_in_allreduce=fused_norms)
                                   + dequant_s),
        host_s_per_sequence=(0.0 if ideal else cal.host_s_per_sequence_step[host_kind(gpu)]
                             * host_passes_per_cycle(setup.engine, setup.pp)),
        host_waited_s_per_sequence=(0.0 if ideal else cal.host_s_per_sequence_step[host_kind(gpu)]
                                    * host_waited_passes(setup.engine, setup.pp)),
        host_serial_with_prompt=prompt_step_host_serial(setup.engine, tp=setup.tp, pp=setup.pp, moe=moe is not None),
        elementwise_s_per_token=(0.0 if ideal else model.num_layers / setup.pp * k.elementwise_bytes_per_hidden / 3.0
                                 * model.hidden_size / setup.tp / bw + trtllm_moe_s_per_token(model, gpu, setup, cal)),
        knee=1e3 if ideal else k.roofline_exponent,
        mem_rate=bw * mbu, matmul_rate=mixed_rate(low, b16, setup.quantized_share),
        attention_rate=bf16 * att_eff * head_ratio,
        window_extra_tokens=0.0 if ideal else cal.window_attention_extra_tokens,
        head_params=float(lm_head_params(model)), head_rate=mixed_rate(low, b16, setup.head_quantized_share),
        routed_share=(routed_weight_bytes_share_per_gpu(model, format_for_model(model, setup.weights_format),
                                                        tp=setup.tp, ep=setup.ep) if moe is not None else None),
        miss_per_token=1.0 - moe.experts_per_token / moe.num_experts if moe is not None else 1.0,
        allreduce_share=2.0 * (setup.tp - 1) / setup.tp,
        allreduce_rate=link.bytes_per_s * link_eff if link is not None else 1.0,
        allreduce_latency_s=allreduce_latency_s(gpu, link, setup.engine, cal) if link is not None else 0.0,
        allreduce_per_stage=2 * (model.num_layers - (dense_layers(model) if setup.attention_dp else 0)) / setup.pp,
        p2p_rate=pp_link.bytes_per_s * link_eff if pp_link is not None else 1.0,
        split=float(setup.tp * setup.pp), hidden_size=float(model.hidden_size),
        expert_share=expert_share, expert_rate=mixed_rate(low, b16, setup.expert_quantized_share),
        expert_kernel_rate=0.0 if ideal else marlin_expert_rate(setup.moe_backend, gpu, bf16, cal),
        route_share=route_share,
        expert_half_tokens=0.0 if ideal else expert_half_tokens(setup.moe_backend, gpu, k.moe_expert_half_tokens, cal),
        expert_tile_rows=cal.moe_tile_rows,
        expert_token_scale=setup.ep / setup.tp if wide_ep else 1.0,
        ep_per_stage=2.0 * moe.num_moe_layers / setup.pp if wide_ep and moe is not None else 0.0,
        # the other replicas' tokens, gathered at ep_gather_bytes a value and their outputs scattered back in 16 bit:
        # per collective, on average, (ep_gather_bytes + 2) / 4 of a 16-bit token set each
        ep_token_bytes=(setup.ep_gather_bytes + ACTIVATION_BYTES) / (2.0 * ACTIVATION_BYTES) if wide_ep else 0.0,
        ep_rate=ep_link.bytes_per_s * link_eff if ep_link is not None else 1.0,
        ep_latency_s=ep_exchange_latency_s(gpu, ep_link, setup.ep, cal) if ep_link is not None else 0.0,
        kv_rate=bw * kv_fraction if kv_fraction else bw * mbu,
        mixed_kv_factor=mixed, mixed_kv_l2_bytes=(math.inf if mixed == 1.0 else mixed_step_l2_kv_bytes(
            model, gpu, tp=setup.tp, pp=setup.pp, attention_dp=setup.attention_dp)),
        prompt_attention_apart=prompt_attention_apart(setup.engine),
        prompt_attention_rate=bf16 * att_eff * head_ratio if context is None else bf16 * context[0] * head_ratio,
        prompt_extra_pairs=0.0 if context is None else context[1])


def _ceiling_link(link: Link, ideal: bool) -> Link:
    """``link`` as the roofline ceiling sees it (``ideal``: no latency), else unchanged."""
    if not ideal:
        return link
    return Link(kind=link.kind, bytes_per_s=link.bytes_per_s, latency_s=0.0, description=link.description)
