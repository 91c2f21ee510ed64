"""The sentences a serving estimate states as its assumptions: the request and saturation, the calibrated constants
of the GPU's stack, the fixed cost per layer of an architecture, expert parallelism, the prompt queue (a training
estimate's are :mod:`.training_lines`'). Each is
memoised on the values it states (they recur across the plans of a sweep or a layout search). Pure.
"""

from __future__ import annotations

import math
from functools import lru_cache

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import memo_on_frozen
from anchorgpu.planner.sglang import (
    CLIP_MAX_NEW_TOKENS,
    RATIO_DECAY_STEPS,
    SGLANG_MAX_PREFILL_TOKENS,
    admission_tokens,
    initial_new_token_ratio,
    new_token_ratio_floor,
)
from anchorgpu.planner.speed.attention_rate import trtllm_prompt_attention_peak_share
from anchorgpu.planner.speed.batching import prompt_bound_output_tokens
from anchorgpu.planner.speed.caveats import PROMPT_QUEUE_CAVEAT_LABEL, caveat_said
from anchorgpu.planner.speed.constants import Calibration, stack_of
from anchorgpu.planner.speed.evidence import STACK_NAMES
from anchorgpu.planner.speed.launches import LayerLaunches, launch_ratio, launches_per_layer
from anchorgpu.planner.speed.links import host_kind

__all__ = ["expert_parallel_line", "expert_tp_line", "launches_line", "pp_host_passes_line", "prompt_attention_apart_line",
           "prompt_queue_line", "serving_constants_line", "serving_line"]


@memo_on_frozen
def launches_line(model: ModelSpec, launches: LayerLaunches, block_fp8: bool = False) -> str:
    """How the fixed cost per layer scales for an architecture whose layers launch more kernels than a Llama layer's
    (empty for a Llama-style layer, which the fitted cost is); ``block_fp8``: weights FP8 in blocks."""
    ratio = launch_ratio(model, launches, block_fp8=block_fp8)
    if ratio == 1.0:
        return ""
    return (f"fixed cost per layer {ratio:.2f}x a Llama layer's: a decode step launches "
            f"{launches_per_layer(model, launches, block_fp8=block_fp8):.1f} kernels per layer of {model.name} against "
            f"{launches.reference} (multi-head latent attention, MoE routing and grouped products, shared experts"
            + ("; weights FP8 in blocks quantise each product's input first" if block_fp8 else "")
            + "; counts read from vLLM's model code)")


@lru_cache(maxsize=64)
def expert_parallel_line(ep: int, tp: int, gather_bytes: float = 2.0) -> str:
    """How a serving layout with expert parallelism wider than TP (attention data parallelism) is timed;
    ``gather_bytes``: a gathered value's bytes (16 bit, or TensorRT-LLM's quantised FP8/NVFP4 inputs)."""
    replicas = ep // tp
    values = ("16-bit values both ways" if gather_bytes == 2.0 else
              f"the tokens gathered at {gather_bytes:g} byte a value, quantised first as TensorRT-LLM does for these "
              "weights, and the outputs returned in 16 bit")
    return (f"expert parallelism over {ep} GPUs, wider than TP {tp}: each GPU's experts serve the tokens of the "
            f"{replicas} replicas of its EP group, and each MoE layer all-gathers the group's tokens and "
            f"reduce-scatters the experts' outputs over the group's link (each GPU receives the other {replicas - 1} "
            f"replica{'' if replicas == 2 else 's'}' tokens and returns their outputs, {values}, whichever experts "
            "they are routed to), as vLLM's default expert-parallel communication (allgather_reducescatter) and "
            "TensorRT-LLM's CUTLASS MoE under attention data parallelism move them (the all-to-all kernels both also "
            "offer, DeepEP's among them, send only each token's routed copies); the replicas step together, each "
            "with its own prompts, so a step carries a prompt chunk whenever one of them has one (vLLM aligns its "
            "data-parallel ranks' forward passes), and the busiest replica sets every step's time while the experts "
            "serve the tokens the replicas bring, a lighter one's fewer; even routing assumed (a skewed router makes "
            "the busiest GPU the step's pace)")


def expert_tp_line(num_experts: int, tp: int, ep: int) -> str:
    """How a serving layout with expert parallelism smaller than TP is held and timed: EP x expert TP = TP, as
    TensorRT-LLM (``moe_tp_size x moe_ep_size = tp_size``) and SGLang (``--ep-size`` with MoE TP = TP / EP) run it
    (:func:`~anchorgpu.planner.memory.serving_expert_tp`).

    >>> expert_tp_line(128, 8, 4)[:72]
    'Experts: EP 4 x expert TP 2 over the TP 8 group: each GPU holds 32 of th'
    """
    split = tp // ep
    return (f"Experts: EP {ep} x expert TP {split} over the TP {tp} group: each GPU holds {num_experts // ep} of the "
            f"{num_experts} experts of a layer, each split {split} ways (1/{tp} of the routed experts' bytes, as with "
            f"EP {tp}), and runs the routed rows of its own experts (1/{ep} of a token's), its products {split} times "
            f"narrower than whole experts' (timed as EP {tp}'s: the step has no expert-width term); every GPU has every token (attention split by TP), so the MoE output is "
            f"summed by the TP group's all-reduce, as with EP {tp}, with no all-to-all (TensorRT-LLM moe_tp_size x "
            "moe_ep_size = tp_size; SGLang --ep-size with MoE TP = TP / EP)")


@lru_cache(maxsize=1024)
def serving_line(conc: int, prompt: int, output: int, sat: int, reservation: str, cap: int) -> str:
    """The serving assumption: a handful of request sizes and capacities recur across the plans of a sweep or a
    layout search (memoised on them, like the serving-engine line of the memory plan); ``reservation`` the
    engine's admission (``serving_plan.KvReservation``)."""
    held = (said("prompt + output tokens each, reserved up front") if reservation == "full" else
            _sglang_admission(output) if reservation == "ratio" else  # SGLang's clause stays English (its page line too)
            said("the average cached length"))
    ratio = prompt / output  # 4 or 0.5 as such, 200,000 not 2e+05
    queue = said("; the {waiting:,} request(s) beyond saturation wait in the engine's queue: the figures are those of "
                 "the {sat:,} running, and the wait is not in TTFT", waiting=conc - sat, sat=sat) \
        if 1 <= sat < conc else ""
    return said("serving at {conc:,} concurrent request(s) of {prompt:,} prompt + {output:,} output tokens with "
                "continuous batching and chunked prefill (each step carries prompt/output = {ratio} prefill tokens "
                "per output token); saturation at {sat:,} sequences (KV capacity at {held}, engine cap {cap:,})"
                "{queue}", conc=conc, prompt=prompt, output=output,
                ratio=f"{ratio:,.0f}" if ratio >= 10 else f"{ratio:.2g}", sat=sat, held=held, cap=cap, queue=queue)


def _sglang_admission(output: int) -> str:
    """SGLang's admission in the serving line's words (``sglang.admission_tokens``)."""
    charge, _ = admission_tokens(1, output)
    return (f"the average cached length plus SGLang's charge for the output each running request may still write, "
            f"new_token_ratio x what is left (counted up to {CLIP_MAX_NEW_TOKENS:,} tokens): {charge:.3g} tokens a "
            f"request at the ratio's floor of {new_token_ratio_floor():g}, where a steady benchmark holds it (it falls "
            f"from {initial_new_token_ratio():g} over {RATIO_DECAY_STEPS} decode steps; requests started together "
            "at one length keep running out of slots, retract and run fewer), with room for the next request's "
            "prompt + output")


_CONSTANTS_LINES: dict[tuple[int, int, str, bool], tuple[GpuSpec, Calibration, str]] = {}


def serving_constants_line(gpu: GpuSpec, cal: Calibration, precision: str, *, block_fp8: bool = False) -> str:
    """The calibrated serving constants of a GPU's stack, as one assumption: it depends on the (frozen) GPU and
    calibration, the compute precision and whether FP8 weights are scaled in blocks only, so every plan on that GPU
    shares it (memoised by identity). Batched products are stated at the share of the precision's peak the step
    times them at (:meth:`~anchorgpu.planner.speed.constants.Calibration.serve_precision_efficiency`: the FP8 and FP4
    ratios and a GPU's measured GEMM share), not the BF16 fit alone."""
    key = (id(gpu), id(cal), precision, block_fp8)
    hit = _CONSTANTS_LINES.get(key)
    if hit is not None and hit[0] is gpu and hit[1] is cal:
        return hit[2]
    k = cal.stack(gpu)
    name = STACK_NAMES[stack_of(gpu)]
    label = said("calibrated {name} constants", name=name) if cal.origin == "calibrated" else \
        said("{name} constants with your efficiencies", name=name)
    host = host_kind(gpu)
    caveat = cal.caveats.get(stack_of(gpu))  # calibration.json's, its figures as values (caveats.caveat_said)
    line = said("{label}: memory reads at {mbu:.0%} of {bandwidth_tb_s:.2f} TB/s, batched products at {share:.0%} of "
                "the dense {precision} peak, {step_ms:.2f} ms per step + {layer_us:.0f} us per layer of fixed cost; the "
                "engine's CPU {host_us:.1f} us per running sequence a step ({host}, stated), overlapped with the GPU's "
                "step: the step is the longer of the two{caveat}", label=label, mbu=k.decode_mbu,
                bandwidth_tb_s=gpu.memory_bandwidth_bytes_per_s / 1e12,
                share=cal.serve_precision_efficiency(gpu, precision, block_fp8=block_fp8), precision=precision.upper(),
                step_ms=k.per_step_s * 1e3, layer_us=cal.per_layer_step_s(gpu) * 1e6,
                host_us=cal.host_s_per_sequence_step[host] * 1e6,
                host=said("a Grace superchip") if host == "superchip" else said("an x86 host"),
                caveat=said("; {caveat}", caveat=caveat_said(caveat)) if caveat else "")
    if len(_CONSTANTS_LINES) >= 256:
        _CONSTANTS_LINES.clear()
    _CONSTANTS_LINES[key] = (gpu, cal, line)
    return line


def prompt_attention_apart_line(context: tuple[float, float] | None, prompt_tokens: int,
                                attention_efficiency: float) -> str:
    """The assumption a TensorRT-LLM serving estimate adds (``engine_terms.prompt_attention_apart``): a step's prompt
    chunk and its decodes run their attention as two kernels, so their times add; and the rate the prompt's kernel
    is timed at: TensorRT-LLM's measured context-attention figures ``context`` (R, E:
    ``attention_rate.trtllm_context_attention``) at this ``prompt_tokens`` prompt, or the fitted
    ``attention_efficiency`` where there are none.

    >>> prompt_attention_apart_line(None, 2048, 0.5).startswith("TensorRT-LLM runs a step's prompt attention")
    True
    >>> "0.45 of the BF16 peak for a 2,048-token prompt" in prompt_attention_apart_line((0.806, 820.0), 2048, 0.5)
    True
    """
    head = ("TensorRT-LLM runs a step's prompt attention and its decodes' attention as two kernels, one after the "
            "other (its attention op: the context requests, then the generation requests), so a step that carries a "
            "prompt chunk is timed with the chunk's attention added to the decodes' KV read, not hidden under it")
    if context is None:
        return (f"{head}; the prompt's attention arithmetic at the fitted attention_efficiency, "
                f"{attention_efficiency:.2f} of the BF16 peak (no measured context-attention rate for this GPU or a "
                "16-bit KV cache)")
    share, extra = context
    rate = trtllm_prompt_attention_peak_share(share, extra, prompt_tokens)
    return (f"{head}; the prompt's attention at {rate:.2f} of the BF16 peak for a {prompt_tokens:,}-token prompt "
            f"(TensorRT-LLM's context kernel on an FP8 KV cache, measured by AIConfigurator 0.12.0: {share:.3f} of "
            f"the peak on the causal pairs plus {extra:,.0f} key pairs a query; scaled by head size)")


@lru_cache(maxsize=256)
def pp_host_passes_line(pp: int, host_s_per_sequence: float, binds: bool, binds_at_saturation: bool) -> str:
    """TensorRT-LLM's host work over ``pp`` pipeline stages (``engine_terms.host_passes_per_cycle``): its PP loop
    walks every running request once a micro-batch, ``pp`` times a cycle, so a replica's output is capped at
    1 / (pp x ``host_s_per_sequence``) tokens/s; its ranks before the last wait for each forward, so one pass a cycle
    adds to the GPUs' step (``engine_terms.host_waited_passes``); ``binds`` / ``binds_at_saturation``: the host sets
    the pace at the plan's concurrency / at saturation.

    >>> line = pp_host_passes_line(4, 10.7e-6, False, True)
    >>> print(line[line.index("42.8"):line.index(" however")])
    42.8 us per running sequence a cycle (4 x 10.7 us), which caps a pipeline replica at 23,364 output tokens/s
    >>> print(line[line.index("so one pass"):line.index(" instead")])
    so one pass (10.7 us per running sequence a cycle) adds to the GPUs' step
    """
    cycle_s = pp * host_s_per_sequence
    return (f"TensorRT-LLM's PP loop (_executor_loop_pp) runs its host pass (scheduling, responses) over every running "
            f"request once per micro-batch, {pp} times a cycle over {pp} stages: {cycle_s * 1e6:,.1f} us per running "
            f"sequence a cycle ({pp} x {host_s_per_sequence * 1e6:.1f} us), which caps a pipeline replica at "
            f"{1.0 / cycle_s:,.0f} output tokens/s however many sequences run; every rank but the last waits for "
            f"each forward (_forward_step_inter_pp synchronizes), so one pass ({host_s_per_sequence * 1e6:.1f} us per "
            "running sequence a cycle) adds to the GPUs' step instead of running beside it; "
            + _host_pace(binds, binds_at_saturation))


def _host_pace(binds: bool, binds_at_saturation: bool) -> str:
    """Where the host's cap of :func:`pp_host_passes_line` sets the pace."""
    if binds and binds_at_saturation:
        return "at this plan's concurrency and at saturation the host sets the pace (host-bound)"
    if binds:
        return "at this plan's concurrency the host sets the pace (host-bound), at saturation the GPU's step"
    if binds_at_saturation:
        return "at saturation the host sets the pace (host-bound), at this plan's concurrency the GPU's step is the longer"
    return "the GPU's step is the longer at this plan's concurrency and at saturation: the cap does not bind"


_STEP_BUDGET = {
    "vllm": ("vLLM", "max_num_batched_tokens", "vllm serve --max-num-batched-tokens"),
    "sglang": ("SGLang", "chunked_prefill_size", "sglang.launch_server --chunked-prefill-size"),
    "trtllm": ("TensorRT-LLM", "max_num_tokens", "trtllm-serve --max_num_tokens"),
}
"""Each engine's step budget, the setting this tool's ``--max-num-batched-tokens`` plans
(:func:`~anchorgpu.planner.engine_limits.engine_limits`), and the engine's own flag for it: vLLM's
``max_num_batched_tokens`` (vllm-project/vllm@00024d31 ``vllm/v1/core/sched/scheduler.py``: the ``token_budget`` a
step); SGLang's ``chunked_prefill_size`` (sgl-project/sglang@001067ff ``python/sglang/srt/server_args.py``, "the
maximum number of tokens in a chunk for the chunked prefill"; with ``max_prefill_tokens`` beside it:
:data:`~anchorgpu.planner.sglang.SGLANG_MAX_PREFILL_TOKENS`); TensorRT-LLM's ``max_num_tokens`` (NVIDIA/TensorRT-LLM
``tensorrt_llm/commands/serve.py``, trtllm-serve ``--max_num_tokens``, "maximum number of batched input tokens after
padding is removed in each batch")."""


def prompt_queue_line(per_replica: int, replicas: int, prompt: int, output: int, budget_tokens: int,
                      ttft_s: float, engine: str = "vllm") -> str | None:
    """The line saying the prompts queue, where the engine's step budget cannot hold the steady state of
    ``per_replica`` users (:func:`~anchorgpu.planner.speed.batching.prompt_bound_output_tokens`: ``B + B * I / O``
    tokens a step over ``T``), else None; ``ttft_s``: the time to first token the plan gives, most of it that wait.
    The users a replica holds under the budget, ``T / (1 + I / O)``, and the budget its users need are named: this
    tool's ``--max-num-batched-tokens`` and ``engine``'s own setting (:data:`_STEP_BUDGET`; SGLang's
    ``--max-prefill-tokens`` too where the budget passes its default).

    >>> print(prompt_queue_line(64, 1, 4000, 10, 8192, 4.03))  # doctest: +ELLIPSIS
    Prompts queue: 64 users of 4,000 prompt + 10 output tokens need 25,664 tokens a step (their decodes and their ...
    >>> prompt_queue_line(20, 1, 4000, 10, 8192, 0.5) is None
    True
    >>> prompt_queue_line(64, 1, 4000, 10, 8192, 4.03, "trtllm").endswith(
    ...     "--max-num-batched-tokens 25664 (trtllm-serve --max_num_tokens 25664) keeps the steps within the budget")
    True
    """
    if prompt_bound_output_tokens(per_replica, prompt, output, budget_tokens) is None:
        return None
    needed = math.ceil(per_replica * (1 + prompt / output))
    fewer = max(1, int(budget_tokens / (1 + prompt / output))) * replicas
    where = "a replica" if replicas > 1 else ""
    name, setting, flag = _STEP_BUDGET.get(engine, _STEP_BUDGET["vllm"])
    launch = f"{flag} {needed}"
    if engine == "sglang" and needed > SGLANG_MAX_PREFILL_TOKENS:  # no more prompts join a batch past it
        launch += f" and --max-prefill-tokens {needed}"
    return (f"{PROMPT_QUEUE_CAVEAT_LABEL}: {per_replica:,} users {where + ' ' if where else ''}of {prompt:,} prompt + "
            f"{output:,} output tokens need {needed:,} tokens a step (their decodes and their prompts spread over the "
            f"outputs), over {name}'s step budget of {budget_tokens:,} tokens ({setting}): every step "
            f"is full and a new prompt waits its turn, its first token after about {ttft_s:.1f} s; fewer users (at "
            f"most {fewer:,}) or --max-num-batched-tokens {needed} ({launch}) keeps the steps within the budget")
