"""Serving speed under continuous batching with chunked prefill. Pure; stdlib only.

A decode step for ``B`` running sequences (and the prefill tokens that share it) costs, per replica:

* **fixed**: the engine's per-step cost (scheduling, sampling) plus a per-layer cost for kernel launches
  and synchronisation - what bounds one-user speeds of large and MoE models;
* **weights**: the larger of reading the weights this GPU holds (MoE: the dense part plus the experts the
  step's tokens are routed to) at the achieved bandwidth, and the batched products at the achieved peak;
* **attention**: the larger of reading every sequence's KV cache (MLA latents and sliding windows as the
  cache holds them) and the attention arithmetic;
* **tensor parallelism**: two all-reduces per layer of the step's tokens, each with its latency;
* pipeline stages run one after another for a token: the per-GPU work is paid ``pp`` times.

At a steady state every request needs ``I`` prompt tokens per ``O`` output tokens, so a step that emits
``B`` tokens also carries ``B * I / O`` prefill tokens (chunked prefill shares the step). Time to first
token is the prompt's chunks, each sharing a step with the other running sequences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.speed.calibration import Calibration, calibration
from anchorgpu.planner.speed.flops import attention_flops_per_token, forward_matmul_params
from anchorgpu.planner.speed.links import ACTIVATION_BYTES, Link, group_link, peak_for

__all__ = ["DecodeStep", "ServingEstimate", "ServingSetup", "decode_step", "moe_expert_fraction_read",
           "serving_estimate"]


def moe_expert_fraction_read(model: ModelSpec, batch_tokens: float) -> float:
    """Expected fraction of routed experts a step touches: ``1 - (1 - k/E)^T`` for ``T`` tokens.

    Assumes uniform, independent routing (real routers are skewed, which lowers the fraction).

    >>> from anchorgpu.planner.speed._toys import toy_model
    >>> moe_expert_fraction_read(toy_model(), 64)
    1.0
    """
    if model.moe is None:
        return 1.0
    k, e = model.moe.experts_per_token, model.moe.num_experts
    return float(1.0 - (1.0 - k / e) ** max(batch_tokens, 1.0))


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ServingSetup:
    """One replica's serving configuration: what each GPU holds and how the replica is split."""

    weights_bytes_per_gpu: float
    kv_bytes_per_sequence_per_gpu: float  # at the average cached length
    precision: str = "bf16"  # matmul precision of the weights (fp8 / fp4 / bf16)
    tp: int = 1
    pp: int = 1
    replicas: int = 1
    max_num_batched_tokens: int = 8192
    gpus_per_server: int = 8


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStep:
    """One step of a replica: its time by part and the bound that held."""

    step_s: float
    fixed_s: float
    weights_s: float
    attention_s: float
    communication_s: float
    bound: str  # "memory", "compute" or "fixed"


def _link(gpu: GpuSpec, setup: ServingSetup) -> Link:
    return group_link(gpu, setup.tp, gpus_per_server=setup.gpus_per_server)


@dataclass(frozen=True, slots=True)
class _StepConstants:
    """What every step of one (model, GPU, compute precision, TP, PP, server size, calibration, ideal) shares:
    rates, efficiencies, the link and the model's per-step terms. Each rate is the product the step formula
    divides by, formed once in the same order."""

    mbu: float
    mm_eff: float
    att_eff: float
    bw: float
    peak: float
    bf16: float
    matmul_params: int
    link: Link | None
    fixed_s: float
    elementwise_s_per_token: float
    mem_rate: float  # bw * mbu
    matmul_rate: float  # peak * mm_eff
    attention_rate: float  # bf16 * att_eff
    routed_share: float | None  # MoE: routed-expert share of the parameters; None for a dense model
    miss_per_token: float  # MoE: 1 - k/E, the chance one token skips a given expert
    allreduce_share: float  # 2 (tp - 1) / tp: the share of a message a ring all-reduce moves per GPU
    allreduce_rate: float  # link bandwidth x efficiency
    allreduce_latency_s: float


_STEP_MEMO: dict[tuple[int, int, str, int, int, int, int, bool],
                 tuple[ModelSpec, GpuSpec, Calibration, _StepConstants]] = {}


def _constants(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, cal: Calibration, ideal: bool) -> _StepConstants:
    """The per-step constants, memoised on what they depend on: the (frozen) model, GPU and calibration by
    identity, and the setup's precision, TP, PP and server size; any plan of that model on that GPU and split
    reuses them."""
    key = (id(model), id(gpu), setup.precision, setup.tp, setup.pp, setup.gpus_per_server, id(cal), ideal)
    hit = _STEP_MEMO.get(key)
    if hit is not None and hit[0] is model and hit[1] is gpu and hit[2] is cal:
        return hit[3]
    k = cal.stack(gpu)
    bw = gpu.memory_bandwidth_bytes_per_s
    choice = peak_for(gpu, setup.precision)
    link = None
    if setup.tp > 1:
        link = _link(gpu, setup)
        if ideal:
            link = Link(kind=link.kind, bytes_per_s=link.bytes_per_s, latency_s=0.0, description=link.description)
    mbu = 1.0 if ideal else k.decode_mbu
    mm_eff = 1.0 if ideal else k.serve_matmul_efficiency * cal.low_precision_ratio(gpu, choice.precision)
    att_eff = 1.0 if ideal else k.attention_efficiency
    bf16 = peak_for(gpu, "bf16").flops_per_s
    moe = model.moe
    link_eff = 1.0 if ideal else cal.link_efficiency
    # memory-bound operators between the products (norms, activations, residuals, rotary): one forward
    # pass is a third of the training traffic per token, layer and hidden unit
    consts = _StepConstants(
        mbu=mbu, mm_eff=mm_eff, att_eff=att_eff, bw=bw, peak=choice.flops_per_s, bf16=bf16,
        matmul_params=forward_matmul_params(model), link=link,
        fixed_s=0.0 if ideal else k.per_step_s + model.num_layers * k.per_layer_step_s,
        elementwise_s_per_token=(0.0 if ideal else model.num_layers / setup.pp * k.elementwise_bytes_per_hidden / 3.0
                                 * model.hidden_size / setup.tp / bw),
        mem_rate=bw * mbu, matmul_rate=choice.flops_per_s * mm_eff, attention_rate=bf16 * att_eff,
        routed_share=model.params.experts / model.params_total if moe is not None and model.params_total else None,
        miss_per_token=1.0 - moe.experts_per_token / moe.num_experts if moe is not None else 1.0,
        allreduce_share=2.0 * (setup.tp - 1) / setup.tp,
        allreduce_rate=link.bytes_per_s * link_eff if link is not None else 1.0,
        allreduce_latency_s=link.latency_s if link is not None else 0.0)
    if len(_STEP_MEMO) >= 1024:
        _STEP_MEMO.clear()
    _STEP_MEMO[key] = (model, gpu, cal, consts)
    return consts


def decode_step(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, batch: float, prefill_tokens: float = 0.0,
                prompt_tokens: int = 0, cached_tokens: int = 1, cal: Calibration | None = None,
                ideal: bool = False) -> DecodeStep:
    """A step of ``batch`` decoding sequences plus ``prefill_tokens`` prompt tokens on one replica.

    ``ideal`` gives the roofline ceiling: datasheet peaks and bandwidth, no fixed cost, no latency.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> one, many = (decode_step(toy_model(), toy_gpu(), s, batch=b) for b in (1, 64))
    >>> one.step_s < many.step_s < 64 * one.step_s
    True
    """
    cal = cal or calibration()
    step, fixed, weights_s, attention_s, comm, bound = _step(
        model, setup, _constants(model, gpu, setup, cal, ideal), batch, prefill_tokens,
        attention_flops_per_token(model, 2 * cached_tokens, causal=True),
        attention_flops_per_token(model, prompt_tokens, causal=True) if prefill_tokens and prompt_tokens else 0.0)
    return DecodeStep(step_s=step, fixed_s=fixed, weights_s=weights_s, attention_s=attention_s,
                      communication_s=comm, bound=bound)


_Step = tuple[float, float, float, float, float, str]


def _step(model: ModelSpec, setup: ServingSetup, c: _StepConstants, batch: float, prefill_tokens: float,
          decode_attn_flops: float, prefill_attn_flops: float) -> _Step:
    """:func:`decode_step`'s fields in order, once its constants and the attention FLOPs per token (decoding at
    the cached length, prefill at the prompt's; 0 without prefill) are known."""
    return _steps(model, setup, c, decode_attn_flops, prefill_attn_flops, ((batch, prefill_tokens),))[0]


def _steps(model: ModelSpec, setup: ServingSetup, c: _StepConstants, decode_attn_flops: float,
           prefill_attn_flops: float, loads: tuple[tuple[float, float], ...]) -> list[_Step]:
    """:func:`_step` for each (decoding sequences, prefill tokens) of ``loads`` on one setup: a serving estimate
    takes three per set of constants, and what they share is read once."""
    weights0, kv_per_sequence = setup.weights_bytes_per_gpu, setup.kv_bytes_per_sequence_per_gpu
    pp, split = setup.pp, setup.tp * setup.pp
    routed, miss = c.routed_share, c.miss_per_token
    mem_rate, matmul_params, matmul_rate = c.mem_rate, c.matmul_params, c.matmul_rate
    attention_rate, elementwise, fixed = c.attention_rate, c.elementwise_s_per_token, c.fixed_s
    layers2, hidden = 2 * model.num_layers, model.hidden_size
    out: list[_Step] = []
    for batch, prefill_tokens in loads:
        tokens = batch + prefill_tokens
        weights = weights0
        if routed is not None:  # the experts the step's tokens touch (moe_expert_fraction_read)
            weights *= 1 - routed + routed * float(1.0 - miss ** max(tokens, 1.0))
        matmul_s = tokens * 2.0 * matmul_params / split / matmul_rate
        weights_read_s = weights / mem_rate
        weights_s = matmul_s if matmul_s > weights_read_s else weights_read_s  # max(weights_read_s, matmul_s)
        kv_s = batch * kv_per_sequence / mem_rate
        attn_flops = batch * decode_attn_flops
        if prefill_tokens and prefill_attn_flops:
            attn_flops += prefill_tokens * prefill_attn_flops
        attn_compute_s = attn_flops / split / attention_rate
        attention_s = attn_compute_s if attn_compute_s > kv_s else kv_s  # max(kv_s, attn_compute_s)
        per_gpu = pp * (weights_s + attention_s + tokens * elementwise)
        comm = 0.0
        if c.link is not None:  # two ring all-reduces per layer of the step's activations (allreduce_s)
            message = tokens * hidden * ACTIVATION_BYTES
            if message > 0:
                comm = layers2 * (c.allreduce_latency_s + c.allreduce_share * message / c.allreduce_rate)
        memory_part = weights_read_s + kv_s
        compute_part = matmul_s + attn_compute_s
        bound = "fixed" if fixed > per_gpu else ("memory" if memory_part >= compute_part else "compute")
        out.append((fixed + per_gpu + comm, fixed, pp * weights_s, pp * attention_s, comm, bound))
    return out


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class ServingEstimate:
    """Serving figures at the requested concurrency and at saturation, with the ceilings beside them."""

    concurrency: int
    per_replica: int
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    decode_tokens_per_s_per_user: float
    saturation_concurrency: int
    max_output_tokens_per_s: float
    bound: str
    ttft_s_ceiling: float
    tpot_s_ceiling: float
    output_tokens_per_s_ceiling: float
    max_output_tokens_per_s_ceiling: float


def serving_estimate(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, prompt_tokens: int, output_tokens: int,
                     concurrency: int, saturation_concurrency: int, cal: Calibration | None = None) -> ServingEstimate:
    """TTFT, TPOT and tokens/s at ``concurrency`` (over all replicas) and at ``saturation_concurrency``.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> e = serving_estimate(toy_model(), toy_gpu(), s, prompt_tokens=100, output_tokens=50, concurrency=4,
    ...                      saturation_concurrency=256)
    >>> e.output_tokens_per_s < e.max_output_tokens_per_s <= e.max_output_tokens_per_s_ceiling
    True
    """
    if prompt_tokens < 1 or output_tokens < 1 or concurrency < 1:
        raise InvalidWorkload("prompt, output tokens and concurrency must each be at least 1")
    cal = cal or calibration()
    per_replica = math.ceil(concurrency / setup.replicas)
    sat_replica = max(1, saturation_concurrency // setup.replicas)
    # every step here decodes at the average cached length and prefills the prompt: attention FLOPs per token
    decode_attn = attention_flops_per_token(model, 2 * (prompt_tokens + output_tokens // 2), causal=True)
    prompt_attn = attention_flops_per_token(model, prompt_tokens, causal=True)
    # steady state at the requested and the saturating concurrency (prefill tokens per step: B * I / O), and
    # the first token: the prompt's chunks, each sharing a step with the other running sequences
    prefill, sat_prefill = per_replica * prompt_tokens / output_tokens, sat_replica * prompt_tokens / output_tokens
    others = per_replica - 1
    budget = max(1, setup.max_num_batched_tokens - others)
    chunks, chunk = math.ceil(prompt_tokens / budget), min(prompt_tokens, budget)
    figures = []
    loads = ((per_replica, prefill), (sat_replica, sat_prefill), (others, chunk))
    for ideal in (False, True):
        step, sat, first = _steps(model, setup, _constants(model, gpu, setup, cal, ideal), decode_attn, prompt_attn,
                                  loads)
        tps = setup.replicas * per_replica / step[0] if concurrency >= setup.replicas else concurrency / step[0]
        figures.append((step[0], tps, setup.replicas * sat_replica / sat[0], chunks * first[0], step[5]))
    (tpot, tps, top, ttft, out_bound), (tpot_c, tps_c, top_c, ttft_c, _) = figures
    return ServingEstimate(
        concurrency=concurrency, per_replica=per_replica, ttft_s=ttft, tpot_s=tpot,
        output_tokens_per_s=tps, decode_tokens_per_s_per_user=1.0 / tpot,
        saturation_concurrency=setup.replicas * sat_replica, max_output_tokens_per_s=top, bound=out_bound,
        ttft_s_ceiling=ttft_c, tpot_s_ceiling=tpot_c, output_tokens_per_s_ceiling=tps_c,
        max_output_tokens_per_s_ceiling=top_c,
    )
