"""The sentences a training estimate states as its assumptions: the step, expert parallelism and the host time its
launches wait for, the network between servers, a larger global batch, how FSDP and a QLoRA base are gathered and
reduced, and a PyTorch-native stack. Each is memoised on the values it states where they recur across the layouts
of a search. Pure; the serving ones are :mod:`.assumption_lines`'."""

from __future__ import annotations

from functools import lru_cache

from anchorgpu.errors import Said, said
from anchorgpu.planner.speed.caveats import GLOBAL_BATCH_CAVEAT_LABEL

__all__ = ["NETWORK_LABEL", "expert_launch_line", "larger_batch_line", "megatron_fsdp_line", "network_line",
           "pytorch_fsdp_line", "pytorch_stack_line", "qlora_gather_line", "step_line", "training_expert_parallel_line"]


@lru_cache(maxsize=256)
def training_expert_parallel_line(ep: int, tp: int, dp: int, cp: int, k: int, server_gpus: int,
                                  overlap: float | None = None) -> str:
    """How a training layout with expert parallelism is timed (:func:`~anchorgpu.planner.speed.training`);
    ``overlap``: the exposed share of the all-to-alls when they are overlapped (``--ep-overlap``), else None."""
    from anchorgpu.planner.memory import expert_data_parallel

    group = expert_data_parallel(tp=tp, dp=dp, cp=cp, ep=ep)
    across = said(", in two hops across their {servers} servers (a token crosses the network once to each server "
                  "holding one of its experts, then the scale-up link, as DeepEP does; a plain all-to-all sends every "
                  "copy over the network)", servers=ep // server_gpus) if ep > server_gpus else ""
    overlapped = _EP_NOT_OVERLAPPED if overlap is None else said(
        "; overlapped with another micro-batch's computation, {exposed:.0%} of the all-to-all time left exposed (a "
        "stated share, as for TP overlap)", exposed=overlap)
    # copies and gpus: the English plural (a translation agrees its nouns with k and group itself)
    return said("expert parallelism EP {ep}: each GPU holds 1/{ep} of its stage's routed experts, not split by TP; "
                "each MoE layer dispatches and combines each token's {k} routed {copies} over {ep} consecutive GPUs, "
                "forward and backward{across}{overlapped}; expert gradients are reduced over the {group} {gpus} "
                "holding the same experts; even routing assumed (a skewed router makes the busiest GPU the step's "
                "pace)", ep=ep, k=k, copies="copy" if k == 1 else "copies", across=across, overlapped=overlapped,
                group=group, gpus="GPUs" if group > 1 else "GPU")


_EP_NOT_OVERLAPPED = said("; not overlapped with computation (--ep-overlap times Megatron-Core's "
                          "--overlap-moe-expert-parallel-comm or DeepSeek's DualPipe)")


NETWORK_LABEL = "network between servers"
"""The label of :func:`network_line`, by which the CLI's table finds it among a plan's speed assumptions."""


_NETWORK_STATED = said("as stated (--network-gbit-per-gpu)")
_NETWORK_DEFAULT = said("the calibration's default (calibration.json network_gbit_per_s_per_gpu: one 400 Gb/s InfiniBand "
                        "NDR or 400 GbE port a GPU, as HGX clusters have; --network-gbit-per-gpu states your cluster's)")


@lru_cache(maxsize=256, typed=True)  # a layout's, the same for every request on it (typed: 16 and 16.0 say apart)
def network_line(gpus: int, server_gpus: int, gbit_per_s: float, stated: bool) -> str:
    """Which server-to-server bandwidth a training layout of ``gpus`` GPUs that spans servers (or scale-up domains) of
    ``server_gpus`` was timed at: the user's (``stated``) or the calibration's default.

    >>> network_line(16, 8, 12.5, True)
    'network between servers: 12.5 Gb/s a GPU each way, as stated (--network-gbit-per-gpu); the 16 GPUs span servers of 8'
    """
    source = _NETWORK_STATED if stated else _NETWORK_DEFAULT
    # NETWORK_LABEL spelt out: a message id is a literal
    if server_gpus <= 8:
        return said("network between servers: {rate:g} Gb/s a GPU each way, {source}; the {gpus} GPUs span servers of "
                    "{server_gpus}", rate=gbit_per_s, source=source, gpus=gpus, server_gpus=server_gpus)
    return said("network between servers: {rate:g} Gb/s a GPU each way, {source}; the {gpus} GPUs span scale-up domains "
                "of {server_gpus}", rate=gbit_per_s, source=source, gpus=gpus, server_gpus=server_gpus)


@lru_cache(maxsize=256)
def expert_launch_line(local_experts: float, gemms: int, host_s_per_gemm: float, per_micro_s: float) -> str:
    """The host time a MoE training step waits for (:func:`~anchorgpu.planner.speed.experts.expert_launch_s`)."""
    return said("MoE launches: {experts:g} routed experts a GPU x {gemms} products each per MoE layer and micro-batch, "
                "{host_us:.0f} us of host time a product (calibrated on Megatron-Bridge's MoE runs), {wait_s:.3g} s a "
                "micro-batch the GPU waits for after each layer's tokens-per-expert sync; more expert parallelism "
                "(fewer experts a GPU), CUDA graphs or a fused grouped product shrink it", experts=local_experts,
                gemms=gemms, host_us=host_s_per_gemm * 1e6, wait_s=per_micro_s)


@lru_cache(maxsize=1024)
def step_line(microbatches: int, micro_batch: int, seq: int, tokens: int, precision: str, efficiency: float,
               width: int, mfu_count_ratio: float = 1.0, user_mfu: bool = False, gemm_ratio: float = 1.0) -> str:
    """The training-step assumption, memoised on its values (they recur across the layouts of a search).
    ``mfu_count_ratio``: MFU's count of a token's FLOPs (:func:`~.flops.training_flops_per_token`, attention over the
    whole sequence) over the causal work the kernels run (:func:`~.flops.causal_training_flops_per_token`), which is
    also MFU's ceiling: said wherever it passes 1.0 by a hundredth or more. ``user_mfu``: the efficiency is the
    user's ``mfu``, not a fitted one, and holds for every shape (``overrides.calibrated`` drops the shape term).
    ``gemm_ratio``: this GPU's measured GEMM share over the Hopper GPUs' the efficiency is fitted on
    (``Calibration.train_gemm_ratio``, BF16 on Blackwell), which the products run at and the line states.

    >>> step_line(4, 1, 131072, 2**21, "bf16", 0.66, 4096, 1.7).split("; ")[-1][:74]
    'MFU counts 6·N·D plus attention over the whole sequence, as the Llama 3 pa'
    >>> step_line(4, 1, 2048, 2**21, "bf16", 0.4, 4096, user_mfu=True).split("; ")[1]
    'BF16 products at the 40% of the dense peak you gave (mfu), at every width h/tp'
    >>> step_line(4, 1, 2048, 2**21, "bf16", 0.66, 4096, gemm_ratio=0.862).split("; ")[1][:98]
    'BF16 products at a calibrated 57% of the dense peak for large shapes (66% fitted on Hopper x 0.862'
    """
    upper = precision.upper()
    return said("step = {microbatches:,} micro-batch{es} of {micro_batch:,} x {seq:,} tokens per data-parallel rank "
                "({tokens:,} tokens); {products}{head}; MFU counts 6·N·D plus attention{counted}",
                microbatches=microbatches, es="es" if microbatches != 1 else "", micro_batch=micro_batch, seq=seq,
                tokens=tokens, products=_products(upper, efficiency, width, user_mfu, gemm_ratio),
                head=_lm_head(upper) if precision.lower() != "bf16" else "",
                counted=_counted(round(mfu_count_ratio, 2)) if round(mfu_count_ratio, 2) > 1.0 else _AS_LLAMA3)


@lru_cache(maxsize=64)
def _products(precision: str, efficiency: float, width: int, user_mfu: bool, gemm_ratio: float) -> Said:
    """The step line's products clause (:func:`step_line`)."""
    if user_mfu:
        return said("{precision} products at the {efficiency:.0%} of the dense peak you gave (mfu), at every width h/tp",
                    precision=precision, efficiency=efficiency)
    return said("{precision} products at a calibrated {efficiency:.0%} of the dense peak for large shapes ({hopper}less "
                "for h/tp = {width:,})", precision=precision, efficiency=efficiency * gemm_ratio,
                hopper=said("{fitted:.0%} fitted on Hopper x {ratio:.3f}, this GPU's measured GEMM share over "
                            "Hopper's; ", fitted=efficiency, ratio=gemm_ratio)
                if round(gemm_ratio, 3) != 1.0 else "", width=width)


@lru_cache(maxsize=8)
def _lm_head(precision: str) -> Said:
    """The step line's clause on an FP8/FP4 step's LM head and MFU (:func:`step_line`)."""
    return said("; the LM head stays at BF16, as the FP8/FP4 recipes leave it; MFU is over the {precision} dense peak, "
                "the precision the products run in (a BF16 run's is over the BF16 peak, so the two MFUs are not on one "
                "scale)", precision=precision)


@lru_cache(maxsize=64)
def _counted(ratio: float) -> Said:
    """The step line's MFU-count clause at ``ratio`` rounded to the hundredths it prints (a float rounds and formats to
    the same two decimals, so the memo keyed on them writes the line as the unrounded ratio would)."""
    return said(" over the whole sequence, as the Llama 3 paper does, the masked half a causal kernel skips included: "
                "{ratio:.2f}x the FLOPs a step runs before recompute, so MFU over {ratio:.2f} is the share of the peak "
                "the work run uses, and MFU's ceiling is {ratio:.2f}, the tokens/s ceiling's (every GPU at the peak on "
                "the causal work)", ratio=ratio)


_AS_LLAMA3 = said(", as the Llama 3 paper does")


def larger_batch_line(batch_tokens: int, microbatches: int, idle_share: float, larger_tokens: int,
                      larger_tokens_per_s: float, tokens_per_s: float) -> str:
    """What the planner's default global batch costs a step where it leaves few micro-batches per data-parallel rank:
    the pipeline bubble and the gradient sync the last micro-batch cannot hide, and this layout's speed at a larger
    batch (the batch is a training choice, stated rather than made for the user)."""
    flag = f"{larger_tokens // 2**20}M" if larger_tokens % 2**20 == 0 else str(larger_tokens)  # as --global-batch reads it
    return (f"{GLOBAL_BATCH_CAVEAT_LABEL}: not given, so the default {batch_tokens:,} tokens: each data-parallel rank runs "
            f"{microbatches:,} micro-batch{'es' if microbatches != 1 else ''} a step, and the pipeline bubble and the "
            f"gradient sync the last one cannot hide take {idle_share:.0%} of the step. At --global-batch "
            f"{flag} this layout would run at {larger_tokens_per_s:,.0f} tok/s "
            f"({larger_tokens_per_s / tokens_per_s:.2f}x), and another layout may then be faster; the batch is a "
            "training choice the planner leaves to you")


_FSDP_WINDOWS = said("a micro-batch's forward gather runs beside its forward pass (a third of its computation) and "
                     "its backward gather and its gradient scatter share the link beside its backward pass (the other "
                     "two thirds); what the gathers cannot hide is in fsdp_comm, what the scatter adds is in dp_sync")


@lru_cache(maxsize=16)
def qlora_gather_line(dense_bytes: float) -> str:
    """How a sharded QLoRA base is gathered, as the step is timed (``dense_bytes``: bytes a parameter on average,
    :func:`~anchorgpu.planner.speed.dequant.gathered_bytes_per_param`)."""
    return said("FSDP / ZeRO-3 of a QLoRA base: the parameter gathers move it as stored, the 4-bit linears packed (half "
                "a byte a weight; their block constants are kept whole on every GPU, not gathered) and the embeddings, "
                "LM head and norms in 16 bit, {dense:.2f} bytes a parameter on average (bitsandbytes' quant_storage, "
                "as answer.ai's fsdp_qlora shards it), dequantized after the gather; only the adapters have gradients, "
                "whose sync is not timed. What the gathers cannot hide is in fsdp_comm", dense=dense_bytes)


@lru_cache(maxsize=4)
def pytorch_fsdp_line(pipelined: bool) -> str:
    """When FSDP on the PyTorch-native stack reduces the gradients, as the step is timed
    (:func:`~anchorgpu.planner.speed.data_parallel.scatters_each_micro_batch`); ``pipelined``: with pipeline stages."""
    if pipelined:
        return said("FSDP on the PyTorch-native stack with pipeline stages: PyTorch's pipelining schedule turns "
                    "gradient sync off between micro-batches (set_requires_gradient_sync(False)) and reduce-scatters "
                    "once after the last backward, so the scatter shares only the last micro-batch's backward with its "
                    "gather; {windows}", windows=_FSDP_WINDOWS)
    return said("FSDP on the PyTorch-native stack reduce-scatters every micro-batch's gradients in that micro-batch's "
                "backward, at the gradients' reduce precision (PyTorch FSDP2 and FSDP1 sync each backward unless told "
                "not to, and torchtitan's, OLMo-core's and Composer's loops over micro-batches do not tell them): "
                "{windows}, and only the last layer's scatter waits at the step's end. Gathers are timed in 16 bit "
                "(torchao's FP8 all-gather is not assumed) and HSDP as FSDP over the whole data-parallel group",
                windows=_FSDP_WINDOWS)


@lru_cache(maxsize=1)
def megatron_fsdp_line() -> str:
    """When FSDP on Megatron-Core (Megatron-FSDP) reduces the gradients, as the step is timed."""
    return said("FSDP on Megatron-Core runs as Megatron-FSDP (data_parallel_sharding_strategy optim_grads_params), "
                "which reduce-scatters every micro-batch's gradients in that micro-batch's backward (its gradient "
                "buffer is sharded, so it cannot accumulate them whole): {windows}, and only the last layer's scatter "
                "waits at the step's end", windows=_FSDP_WINDOWS)


@lru_cache(maxsize=8)
def pytorch_stack_line(elementwise_bytes: float, fused_bytes: float, fa2_efficiency: float) -> str:
    """What ``--train-stack pytorch`` changes in a training step's time (the constants as the calibration has them),
    and how the device-measured transformers runs (``data/eager_stack.json``) fell around it."""
    from anchorgpu.planner.eager_stack import pytorch_speed_line

    return said("Speed of a PyTorch-native stack (--train-stack pytorch: torchtitan, FSDP training scripts, OLMo-core, "
                "llm-foundry): the norms, activations, rotary embeddings and casts around the products move "
                "{elementwise:.0f} bytes a token, layer and hidden unit, against {fused:.0f} in Megatron-Core with "
                "Transformer Engine (fitted on the PyTorch-native runs of the calibration set, the others held out), "
                "and attention runs as PyTorch's SDPA picks it on Hopper and newer, a FlashAttention-2-class kernel at "
                "{fa2:.0%} of the BF16 peak (stated). {measured}", elementwise=elementwise_bytes, fused=fused_bytes,
                fa2=fa2_efficiency, measured=pytorch_speed_line())
