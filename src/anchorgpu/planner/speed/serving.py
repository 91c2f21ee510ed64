"""Serving speed under continuous batching with chunked prefill. Pure; stdlib only.

A decode step for ``B`` running sequences (and the prefill tokens that share it) costs, per replica:

* **fixed**: the engine's per-step cost (scheduling, sampling) plus a per-layer cost for kernel launches
  and synchronisation - what bounds one-user speeds of large and MoE models;
* **host**: the engine's CPU work for each running sequence (its new token, stop checks, the next step's
  schedule), done while the GPU runs the previous step (an overlap scheduler), so a step takes the larger of the
  two: it binds only when thousands of sequences share a short step (a small mixture of experts), and more on a
  Grace superchip's CPU than on an x86 host's;
* **weights**: the larger of reading the weights this GPU holds (MoE: the dense part plus the experts the
  step's tokens are routed to) at the achieved bandwidth, and the batched products at the achieved peak
  (a share that grows with the per-GPU width ``h/tp`` of the products; a MoE's routed-expert products also with
  the rows each expert the step touches gets, ``tokens * k / E`` once every expert runs: :func:`expert_rows_factor`);
* **attention**: the larger of reading every sequence's KV cache (MLA latents and sliding windows as the
  cache holds them; a MoE's FP8 cache on TensorRT-LLM at the share of the bandwidth its decode attention kernels
  are measured to reach, :func:`~anchorgpu.planner.speed.engine_terms.trtllm_kv_read_fraction`) and the attention
  arithmetic; on TensorRT-LLM, which runs a prompt chunk's attention as a kernel of its own after the decodes'
  (:func:`~anchorgpu.planner.speed.engine_terms.prompt_attention_apart`), the chunk's arithmetic is added instead;
* **tensor parallelism**: two all-reduces per layer of the step's tokens, each with its latency;
* **expert parallelism** wider than TP (attention data parallelism: ``--tp 1 --dp 8 --ep 8``): each GPU's experts
  serve the tokens of the ``ep / tp`` replicas of its EP group (the rows per expert and the experts touched follow),
  and every MoE layer all-gathers the group's tokens and reduce-scatters the experts' outputs over the group's link:
  each GPU receives the other ``ep / tp - 1`` replicas' tokens and sends its outputs back, whatever ``k``, as vLLM's
  default expert-parallel communication (``all2all_backend`` ``allgather_reducescatter``, vllm/config/parallel.py)
  and TensorRT-LLM's CUTLASS MoE under attention data parallelism (``CutlassFusedMoE.forward_chunk``: ``allgather``
  of the inputs, then ``reducescatter``) move them;
* **pipeline stages** work on different micro-batches at once: the running sequences are split into up to
  ``pp`` micro-batches, each stage takes one per tick (its layers, its share of the fixed costs, its TP
  all-reduces, the hidden states sent on to the next stage), and a token is out after ``pp`` ticks; one
  sequence alone still waits for every stage in turn.

The steady state and the time to first token built from these steps are :mod:`anchorgpu.planner.speed.batching`'s.
At a steady state every request needs ``I`` prompt tokens per ``O`` output tokens, so the steps that emit
``B`` tokens also carry ``B * I / O`` prefill tokens on average (chunked prefill shares the step): spread
over every step when there are at least a chunk's worth per step (over pipeline stages, per micro-batch), else
as whole chunks (up to the step's token budget) in that share of the steps (of the micro-batches). Time to
first token is the prompt's chunks, each sharing a step with the other running sequences.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import fast_init
from anchorgpu.planner.speed.attention_rate import prompt_extra_pairs_factor, timed_prefill_attention_flops_per_token
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.experts import (
    ep_gather_bytes,
    expert_rows_factor,
    moe_expert_fraction_read,
    moe_product_shares,
    routed_weight_bytes_share_per_gpu,
)
from anchorgpu.planner.speed.flops import (
    decode_attention_flops_per_token,
    unsampled_prompt_share,
)
from anchorgpu.planner.speed.links import ACTIVATION_BYTES
from anchorgpu.planner.speed.step_constants import (  # the per-step constants; ServingSetup re-exported
    ServingSetup,
    _constants,
    _StepConstants,
    serve_shape_factor,
)

__all__ = ["DecodeStep", "ServingSetup", "decode_step", "ep_gather_bytes", "expert_rows_factor",
           "moe_expert_fraction_read", "moe_product_shares", "routed_weight_bytes_share_per_gpu", "serve_shape_factor",
           "soft_roofline"]

_INF = float("inf")  # a time no finite one reaches: the lean roofline's test for a finite term


def soft_roofline(memory_s: float, compute_s: float, exponent: float) -> float:
    """A product's time from its two limits: ``(m^p + c^p)^(1/p)``, the larger of them far from the ridge and
    more than either near it, where reading the weights and multiplying overlap least (``p`` fitted, ``inf``
    would be the sharp roofline ``max(m, c)``).

    >>> soft_roofline(1.0, 1.0, 2.0), soft_roofline(10.0, 1.0, 8.0) == 10.0
    (1.4142135623730951, False)
    """
    if memory_s <= 0.0 or compute_s <= 0.0:
        return memory_s if memory_s >= compute_s else compute_s
    # where the larger term is finite its own ratio (big / big) ** p is 1.0 exactly, so it is not formed (the same
    # value: a finite number over itself is 1.0, and the sum of the two terms is the same in either order)
    time_s: float
    if memory_s >= compute_s and memory_s < _INF:
        time_s = memory_s * (1.0 + (compute_s / memory_s) ** exponent) ** (1.0 / exponent)
    elif compute_s > memory_s and compute_s < _INF:
        time_s = compute_s * ((memory_s / compute_s) ** exponent + 1.0) ** (1.0 / exponent)
    else:  # an infinite or undefined term: the whole formula
        big = memory_s if memory_s >= compute_s else compute_s
        time_s = big * ((memory_s / big) ** exponent + (compute_s / big) ** exponent) ** (1.0 / exponent)
    return time_s


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeStep:
    """One step of a replica: its time by part and the bound that held."""

    step_s: float
    fixed_s: float
    weights_s: float
    attention_s: float
    communication_s: float
    bound: str  # "memory", "compute", "fixed" or "host"


def decode_step(model: ModelSpec, gpu: GpuSpec, setup: ServingSetup, *, batch: float, prefill_tokens: float = 0.0,
                prompt_tokens: int = 0, cached_tokens: int = 1, cal: Calibration | None = None,
                ideal: bool = False) -> DecodeStep:
    """A step of ``batch`` decoding sequences plus ``prefill_tokens`` prompt tokens on one replica.

    ``ideal`` gives the roofline ceiling: datasheet peaks and bandwidth, no fixed cost, no latency. The prompt tokens
    are of prompts ``prompt_tokens`` long, the LM head run at the last of each (without a length, at every one).

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> s = ServingSetup(weights_bytes_per_gpu=1e9, kv_bytes_per_sequence_per_gpu=1e6)
    >>> one, many = (decode_step(toy_model(), toy_gpu(), s, batch=b) for b in (1, 64))
    >>> one.step_s < many.step_s < 64 * one.step_s
    True
    """
    cal = cal or calibration()
    c = _constants(model, gpu, setup, cal, ideal)
    step, fixed, weights_s, attention_s, comm, bound, _ = _step(
        setup, c, batch, prefill_tokens, decode_attention_flops_per_token(model, cached_tokens),
        timed_prefill_attention_flops_per_token(model, prompt_tokens, c.window_extra_tokens)
        * prompt_extra_pairs_factor(c.prompt_extra_pairs, prompt_tokens) if prefill_tokens and prompt_tokens else 0.0,
        head_skip=unsampled_prompt_share(prompt_tokens))
    return DecodeStep(step_s=step, fixed_s=fixed, weights_s=weights_s, attention_s=attention_s,
                      communication_s=comm, bound=bound)


def _work(c: _StepConstants, weights_read_s: float, matmul_s: float, kv_s: float, attn_flops_per_gpu: float,
          tokens: float, decode_flops_per_gpu: float = 0.0,
          prompt_flops_per_gpu: float = 0.0) -> tuple[float, float, float, float, float, float]:
    """A tick's GPU work (:func:`_dense_step` forms the same terms inline): (work, weights' time, attention's time,
    and the weight read, KV read and attention compute times the bound is read from). Where the engine runs the
    prompt chunk's attention as a kernel of its own (``c.prompt_attention_apart``), attention is the larger of the KV
    read and the decodes' arithmetic (``decode_flops_per_gpu``) plus the prompt's (``prompt_flops_per_gpu``); else
    the larger of the KV read and all of it."""
    weights_s = soft_roofline(weights_read_s, matmul_s, c.knee)
    attn_compute_s = attn_flops_per_gpu / c.attention_rate
    if c.prompt_attention_apart and prompt_flops_per_gpu:  # the prompt's kernel after the decodes': their sum
        decode_s = decode_flops_per_gpu / c.attention_rate
        attention_s = (kv_s if kv_s >= decode_s else decode_s) + prompt_flops_per_gpu / c.prompt_attention_rate
    else:
        attention_s = kv_s if kv_s >= attn_compute_s else attn_compute_s
    return (weights_s + attention_s + tokens * c.elementwise_s_per_token, weights_s, attention_s, weights_read_s, kv_s,
            attn_compute_s)


def _tick(setup: ServingSetup, c: _StepConstants, batch: float, prefill_tokens: float, decode_attn_flops: float,
          prefill_attn_flops: float, padded_batch: float, ceiling: _StepConstants | None = None,
          group_ratio: float = 1.0, *, head_skip: float) -> tuple[float, ...]:
    """One micro-batch through one pipeline stage (the whole replica when ``pp`` is 1): its time, then its fixed,
    weights, attention and communication parts, and the memory and compute parts that say the bound; last, the
    same tick's time under the ``ceiling`` constants (the roofline: ``_constants(..., ideal=True)``), from the
    sizes already formed (0.0 without them). Either time is what a tick of those constants alone gives.

    ``group_ratio``: under expert parallelism wider than TP, the tokens each replica of the EP group brings to the
    MoE layers, on average, over this replica's (1.0 when they all carry the same). The group's tokens are what
    this GPU's experts serve (their share of the products, the experts they touch) and what it gathers from the
    other replicas; the replica's own tokens are what its attention and dense products take.

    ``head_skip``: the share of the prompt tokens the LM head never multiplies (the engine computes logits only at
    the positions it samples: :func:`~anchorgpu.planner.speed.flops.unsampled_prompt_share`); their products are the
    rest of a token's, the head's taken off at the rate it runs at. Decoded tokens (and padded rows) pass it."""
    tokens = (batch if batch >= padded_batch else padded_batch) + prefill_tokens
    weights = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu  # the bytes the step streams
    routed = c.routed_share
    group = tokens * group_ratio if group_ratio != 1.0 else tokens  # the EP group's tokens per replica
    expert_tokens = group * c.expert_token_scale  # the tokens this GPU's experts are sent (its replicas' under EP)
    touched = 1.0
    if routed is not None:  # the experts the step's tokens touch (moe_expert_fraction_read)
        touched = float(1.0 - c.miss_per_token ** (expert_tokens if expert_tokens >= 1.0 else 1.0))
        weights *= 1 - routed + routed * touched
        if setup.whole_dense_extra_bytes:  # dense layers attention DP keeps whole: each GPU reads all of them
            weights += setup.whole_dense_extra_bytes
    split = c.split
    matmul_flops = tokens * 2.0 * c.matmul_params / split
    if group_ratio != 1.0:  # the routed experts' share of the products follows the group's tokens (1/ep a GPU)
        matmul_flops = (tokens + c.expert_share * (group - tokens)) * 2.0 * c.matmul_params / split
    kv_bytes = batch * setup.kv_bytes_per_sequence_per_gpu  # the sequences' own caches, no padding
    attn_flops = batch * decode_attn_flops
    prompt_flops = 0.0
    if prefill_tokens and prefill_attn_flops:
        prompt_flops = prefill_tokens * prefill_attn_flops
        attn_flops += prompt_flops
    attn_flops_per_gpu = attn_flops / split
    message = tokens * c.hidden_size * ACTIVATION_BYTES
    gathered = 0.0
    if c.ep_per_stage:  # EP wider than TP: the other replicas' tokens, which each GPU gathers; where this replica
        # brings more than the group's mean (a prompt chunk the others lack), the collective lasts as long as the
        # GPUs that gather it, so a GPU of a mean replica's gathering is timed
        gathered = (expert_tokens - (group if group < tokens else tokens)) * c.hidden_size * ACTIVATION_BYTES
    mem_rate = c.mem_rate
    matmul_s = matmul_flops / c.matmul_rate
    expert_rate = c.expert_rate
    if c.expert_kernel_rate and c.expert_share:  # the routed experts' products on a kernel of its own rate (vLLM's
        # Marlin on Hopper): taken off at the step's rate, charged at the kernel's
        expert_rate = c.expert_kernel_rate
        matmul_s += (c.expert_share * group * 2.0 * c.matmul_params / split
                     * (1.0 / expert_rate - 1.0 / c.expert_rate))
    if c.expert_share and c.expert_half_tokens and tokens > 0:  # the routed experts' products (expert_rows_factor):
        # the rows of each expert the step touches, at least one tile's
        # the experts' products (expert_share of the step's, at the EP group's tokens) take the falloff alone
        extra = (c.expert_half_tokens * touched / (expert_tokens * c.route_share)
                 if expert_tokens * c.route_share >= c.expert_tile_rows * touched
                 else c.expert_half_tokens / c.expert_tile_rows)
        matmul_s += c.expert_share * group * 2.0 * c.matmul_params / split / expert_rate * extra
    skipped = prefill_tokens * head_skip  # prompt tokens whose logits are never computed
    if skipped:
        matmul_s -= skipped * 2.0 * c.head_params / split / c.head_rate
    # a step holding a prompt chunk reads its decodes' caches c.mixed_kv_factor times where they outgrow the L2 (vLLM's
    # FlashAttention 2 on SM 8.x, speed.mixed_attention); the ceiling reads them once
    kv_read = kv_bytes * c.mixed_kv_factor if kv_bytes > c.mixed_kv_l2_bytes and prefill_tokens else kv_bytes
    work, weights_s, attention_s, weights_read_s, kv_s, attn_compute_s = _work(
        c, weights / mem_rate, matmul_s, kv_read / c.kv_rate, attn_flops_per_gpu, tokens,
        batch * decode_attn_flops / split, prompt_flops / split)
    comm = 0.0
    if message > 0:
        if c.link is not None:  # two all-reduces per layer of the stage (allreduce_s, inline)
            comm = c.allreduce_per_stage * (c.allreduce_latency_s + c.allreduce_share * message / c.allreduce_rate)
        if c.pp_link is not None and c.pp_link.kind != "none":  # the hidden states to the next stage
            comm += c.pp_link.latency_s + message / c.p2p_rate
        if c.ep_per_stage:  # EP wider than TP: the group's tokens gathered, the experts' outputs scattered back
            comm += c.ep_per_stage * (c.ep_latency_s + c.ep_token_bytes * gathered / c.ep_rate)
    top = 0.0
    if ceiling is not None:  # the roofline constants have no fixed cost, elementwise time or latency: each of
        # those terms is 0.0, and adding it would change no value, so they are left out
        k = ceiling
        kv_top, attn_top = kv_bytes / k.mem_rate, attn_flops_per_gpu / k.attention_rate
        read_top, product_top = weights / k.mem_rate, matmul_flops / k.matmul_rate
        if skipped:
            product_top -= skipped * 2.0 * k.head_params / split / k.head_rate
        top = soft_roofline(read_top, product_top, k.knee)
        if k.prompt_attention_apart and prompt_flops:  # the prompt's kernel after the decodes' (_work)
            attn_top = batch * decode_attn_flops / split / k.attention_rate
            top += prompt_flops / split / k.prompt_attention_rate
        top += kv_top if kv_top >= attn_top else attn_top
        if message > 0:
            comm_top = 0.0
            if k.link is not None:
                comm_top = k.allreduce_per_stage * (k.allreduce_share * message / k.allreduce_rate)
            if k.pp_link is not None and k.pp_link.kind != "none":
                comm_top += message / k.p2p_rate
            if k.ep_per_stage:
                comm_top += k.ep_per_stage * (k.ep_token_bytes * gathered / k.ep_rate)
            top += comm_top
    return (c.fixed_s + work + comm, c.fixed_s, weights_s, attention_s, comm, weights_read_s + kv_s,
            matmul_s + attn_compute_s, top)


def _step(setup: ServingSetup, c: _StepConstants, batch: float, prefill_tokens: float, decode_attn_flops: float,
          prefill_attn_flops: float, padded_batch: float = 0.0, one_chunk: bool = False,
          first_token: bool = False, ceiling: _StepConstants | None = None, chunks: float = 1.0,
          group_ratio: float = 1.0, *, head_skip: float) -> tuple[float, float, float, float, float, str, float]:
    """:func:`decode_step`'s fields in order, once its constants and the attention FLOPs per token (decoding at
    the cached length, prefill at the prompt's; 0 without prefill) are known. ``padded_batch``: the rows a
    captured graph multiplies when it is larger than the batch (the padding rows read no KV cache).

    Pipeline stages work on different micro-batches at once: the ``batch`` is split into up to ``pp``
    micro-batches, each stage takes one per tick, and every micro-batch's token is out after a cycle: the larger
    of one stage's work on all of them and one micro-batch's way through all ``pp`` stages. ``one_chunk``: the
    prompt tokens are one prompt's chunk, so they travel in one micro-batch instead of being spread over all of
    them (prompt tokens in every step): every stage does the chunk's extra work once in the cycle, and with
    ``first_token`` the cycle is at least the chunk's own way through every stage (a time to first token).
    ``chunks`` (from 1 up to the micro-batches): how many of a cycle's micro-batches carry such a chunk, as when
    the prompts need more than one chunk a cycle but fewer than one in every micro-batch (each micro-batch has its
    own token budget; splitting a chunk over them would shrink every product, a MoE's expert rows most).

    Last, the same step's time under the ``ceiling`` constants (0.0 without them): one stage times both in one
    tick (:func:`_tick`). ``group_ratio``: the EP group's tokens per replica over this replica's (:func:`_tick`).
    ``head_skip``: the share of the prompt tokens the LM head never multiplies (:func:`_tick`)."""
    pp = setup.pp
    if pp == 1:  # one stage: the tick is the step (pp * x and x / 1.0 below leave every value as it is)
        step, fixed, weights_s, attention_s, comm, memory_s, compute_s, top = _tick(
            setup, c, batch / 1.0, prefill_tokens / 1.0, decode_attn_flops, prefill_attn_flops, padded_batch / 1.0,
            ceiling, group_ratio, head_skip=head_skip)
        # the bound: the fixed costs when they outweigh the GPUs' work, else the larger of memory and compute
        bound = "fixed" if fixed > step - fixed - comm else ("memory" if memory_s >= compute_s else "compute")
        host = c.host_s_per_sequence * batch  # the engine's CPU, overlapped: the step waits for the larger
        if not setup.host_overlap:  # scheduled between GPU steps instead: the step waits for both
            return step + host, fixed, weights_s, attention_s, comm, bound, top
        if prefill_tokens and c.host_serial_with_prompt:  # an eager, launch-bound prompt step: in series
            # (engine_terms.prompt_step_host_serial)
            return step + host, fixed, weights_s, attention_s, comm, "host" if host > step else bound, top
        if host > step:
            return host, fixed, weights_s, attention_s, comm, "host", top
        return step, fixed, weights_s, attention_s, comm, bound, top
    groups = min(float(pp), max(1.0, batch))
    each, padded_each = batch / groups, padded_batch / groups
    if not one_chunk or not prefill_tokens:
        t = _tick(setup, c, each, prefill_tokens / groups, decode_attn_flops, prefill_attn_flops,
                  padded_each, None, group_ratio, head_skip=head_skip)
        parts, bound_of = tuple(pp * x for x in t[:5]), t
    else:
        heavy = _tick(setup, c, each, prefill_tokens, decode_attn_flops, prefill_attn_flops,
                      padded_each, None, group_ratio, head_skip=head_skip)
        light = _tick(setup, c, each, 0.0, decode_attn_flops, 0.0, padded_each, None, group_ratio, head_skip=0.0)
        n = chunks
        stage_load = [(groups - n) * a + n * b for a, b in zip(light[:5], heavy[:5], strict=True)]
        if first_token:  # the chunk's micro-batch goes through every stage in turn
            through = [pp * b for b in heavy[:5]]
        else:  # the others keep their pace through the stages; each stage adds the chunks' extra work once each
            through = [pp * a + n * (b - a) for a, b in zip(light[:5], heavy[:5], strict=True)]
        parts, bound_of = (tuple(through) if through[0] >= stage_load[0] else tuple(stage_load)), heavy
    step, fixed, weights_s, attention_s, comm = parts
    per_gpu = step - fixed - comm
    bound = "fixed" if fixed > per_gpu else ("memory" if bound_of[5] >= bound_of[6] else "compute")
    # the engine's CPU works through every micro-batch's sequences a cycle (TensorRT-LLM: through all of them at
    # each micro-batch, engine_terms.host_passes_per_cycle); TensorRT-LLM's ranks before the last wait for each
    # forward, so their micro-batches' host work adds to the GPUs' (engine_terms.host_waited_passes)
    host = c.host_s_per_sequence * batch
    if c.host_waited_s_per_sequence:
        step += c.host_waited_s_per_sequence * batch
    if not setup.host_overlap:
        step += host
    elif host > step:
        step, bound = host, "host"
    top = 0.0 if ceiling is None else _step(setup, ceiling, batch, prefill_tokens, decode_attn_flops,
                                             prefill_attn_flops, padded_batch, one_chunk, first_token,
                                             chunks=chunks, group_ratio=group_ratio, head_skip=head_skip)[0]
    return step, fixed, weights_s, attention_s, comm, bound, top
