"""Training step time from its parts. Pure; stdlib only.

One optimizer step of a layout ``tp x cp x pp x dp`` (``ep`` inside ``tp x dp`` for MoE) is ``m``
micro-batches per data-parallel rank, each of ``b`` sequences of ``s`` tokens, through ``pp`` stages
(each with ``v`` virtual chunks when interleaved). Per micro-batch and GPU:

* **compute**: matrix products at the compute precision's dense peak times a shape-dependent efficiency
  (``e * w / (w + w0)`` with ``w = h / tp``), attention at the BF16 peak times the flash-attention
  efficiency on the score pairs the kernel computes (a causal flash kernel skips the masked half; ``attention_kernel``
  ``unfused`` computes them all, as Megatron-LM did before flash attention; ``fa2`` is FlashAttention-2 class, slower
  on Hopper and newer; a fused kernel's backward forms the scores again, ``fused_attention_backward_ratio`` forwards
  where the FLOP count says 2), and the memory-bound operators (norms, activations, casts) at memory bandwidth. A mixture of
  experts' routed products take longer when each expert gets few rows (``tokens * ep * k / E`` a micro-batch: the
  EP group's tokens meet at its experts), at the falloff fitted on MoE serving rows (``expert_rows_factor``);
* **tensor parallelism**: four all-reduce volumes of ``b*s/cp*h`` 16-bit values per layer (two forward,
  two backward; six with full recompute); sequence parallelism swaps each for a reduce-scatter plus an
  all-gather of the same volume. Overlapped with GEMMs (``tp_overlap``) only a stated fraction is exposed. Without
  sequence parallelism (stated off: ``sequence_parallel=False``; ``None`` is on with TP > 1) the traffic is the same,
  but the norms, dropout and residual adds run on the whole sequence on every TP rank (their share of the memory-bound
  operators' traffic, :func:`~anchorgpu.planner.memory.activations.sequence_parallel_share`, ``t`` times over) and
  stage-to-stage transfers carry the whole sequence, not its ``1/t``. Under expert parallelism a MoE layer without a
  shared expert pays only its attention's volumes (Megatron-Core's MoE layer routes its sequence-parallel shard as it
  is, with expert TP 1);
* **context parallelism** (ring attention): each rank passes its K/V chunk around the ring ``cp - 1`` times
  forward and twice that backward, hidden behind the attention blocks as far as they last (Megatron-Core's ring). On
  the PyTorch-native stack, PyTorch's experimental context parallelism as its code runs it, compiled: one all-gather
  of the K/V (repeated to the query heads) in each forward and in the backward, and float32 dK/dV around the ring,
  each waited on where it is issued, so none is hidden (:mod:`.context_parallel`);
* **expert parallelism**: dispatch and combine all-to-alls of the routed tokens, forward and backward, over an
  EP group of ``ep`` consecutive GPUs (the experts are not split by TP under EP); overlapped with another
  micro-batch's computation (``ep_overlap``: Megatron-Core's combined 1F1B schedule, DeepSeek's DualPipe) only the
  stated exposed fraction stays on the critical path, as for TP overlap;
* **MoE launches**: the host time of launching each local expert's products after a dropless MoE layer's
  tokens-per-expert sync, which the GPU waits for (:func:`~anchorgpu.planner.speed.experts.expert_launch_s`, fitted on
  MoE training rows); recomputing the MoE blocks (``moe``) or whole layers runs their forward again, all-to-alls,
  products and launches included;
* **FSDP / ZeRO-3**: parameters all-gathered forward and backward in every micro-batch, prefetched one
  layer ahead: only what the compute does not cover is exposed; gradients reduce-scattered once per step; on the
  PyTorch-native stack every micro-batch, with FSDP2's copies out of the gather buffer and into the scatter buffer
  on the compute stream (:func:`~anchorgpu.planner.speed.data_parallel.fsdp2_copies_s`; ``fsdp1``: none);
* **activation offload** (``offload_activation_layers``, Megatron-Core's CPU offloading): the offloaded layers'
  activations to the host in the forward pass and back in the backward pass over the host link, exposed only where
  a copy outlasts its pass (:func:`~anchorgpu.planner.speed.offload.activation_offload_s`);

and per step: the **pipeline bubble**, ``(p-1)/v`` micro-batch times once a step has ``m >= p`` micro-batches
(Narayanan et al. 2021, section 2.2) and up to ``p - 1`` with fewer (:func:`~.pipeline.pipeline_bubble_stage_times`),
``m(p-1)`` where the stages run one after another (``schedule`` ``sequential``: QLoRA's ``device_map`` split on the
PyTorch stack, :func:`~.pipeline.pipeline_schedule`), **point-to-point** transfers between stages (every hop of a
sequential schedule on the critical path: :func:`~.pipeline.p2p_transfers_per_microbatch`), the **data-parallel gradient sync** not hidden behind the
last backward pass (under ZeRO-2 every micro-batch's own reduce too, :mod:`~anchorgpu.planner.speed.zero2`), and the memory-bound **optimizer** update. The data-parallel terms, with the links and ring
latencies of a group across servers, are :mod:`~anchorgpu.planner.speed.data_parallel`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner._frozen import builder, fast_init, memo_on_frozen
from anchorgpu.planner.memory.activations import keeps_fp8_input_copies, layer_activation_bytes
from anchorgpu.planner.pipeline_layout import PipelineLayout
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.data_parallel import data_parallel_terms
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT, gathered_bytes_per_param
from anchorgpu.planner.speed.experts import MoeDispatcher
from anchorgpu.planner.speed.flops import Recompute, TrainKind
from anchorgpu.planner.speed.links import PeakChoice, group_link, p2p_s, server_gpus
from anchorgpu.planner.speed.micro_step import micro_step
from anchorgpu.planner.speed.offload import activation_offload_s, host_optimizer_s, optimizer_traffic_bytes_per_param
from anchorgpu.planner.speed.pipeline import (
    DEFAULT_GLOBAL_BATCH_TOKENS,
    PipelineSchedule,
    microbatches_for,
    p2p_transfers_per_microbatch,
    pipeline_bubble_fraction,
    pipeline_bubble_stage_times,
    slowest_stage_layers,
)
from anchorgpu.planner.speed.train_layout import (
    AttentionKernel,
    TrainLayout,
    TrainSplit,
    _check,
    _check_interleaving,
    sequence_parallel_of,
)

__all__ = [
    "BREAKDOWN_KEYS",
    "DEFAULT_GLOBAL_BATCH_TOKENS",
    "TrainingStep",
    "microbatches_for",
    "pipeline_bubble_fraction",
    "pipeline_bubble_stage_times",
    "slowest_stage_layers",
    "tokens_per_s_bound",
    "training_step",
]

BREAKDOWN_KEYS = ("compute", "tp_comm", "pp_bubble", "pp_p2p", "cp_comm", "dp_sync", "fsdp_comm", "ep_alltoall",
                  "moe_launch", "activation_offload", "optimizer")


@fast_init
@dataclass(frozen=True, slots=True, kw_only=True)
class TrainingStep:
    """One optimizer step: its time by part (seconds), throughput, MFU and the ceiling beside them."""

    step_s: float
    breakdown_s: dict[str, float]
    tokens_per_step: int
    microbatches: int
    tokens_per_s: float
    model_flops_per_token: float
    hardware_flops_per_token: float
    tflops_per_gpu: float  # model FLOPs per GPU per second / 1e12
    mfu: float
    peak_flops_per_s: float
    precision: str
    ceiling_tokens_per_s: float
    bubble_fraction: float


_new_step = builder(TrainingStep)  # TrainingStep(...) without the class call (once per step timed)


def training_step(
    model: ModelSpec, gpu: GpuSpec, lay: TrainSplit, seq_tokens: int, micro_batch: int = 1, *,
    global_batch_tokens: int = DEFAULT_GLOBAL_BATCH_TOKENS, recompute: Recompute = "none",
    kind: TrainKind = "full", precision: str = "bf16", gpus_per_server: int = 8,
    network_bytes_per_s: float | None = None, grad_bytes_per_value: int = 2, cal: Calibration | None = None,
    attention_kernel: AttentionKernel = "flash", train_stack: str = "megatron", offload_activation_layers: int = 0,
    optimizer_state: str = "fp32", fsdp1: bool = False, moe_dispatcher: MoeDispatcher = "alltoall",
    schedule: PipelineSchedule = "1f1b", base_format: str = QLORA_BASE_FORMAT,
) -> TrainingStep:
    """Step time and throughput of one training layout (see the module docstring for the parts); ``schedule``: how
    the stack runs the pipeline stages (:func:`~.pipeline.pipeline_schedule`); ``base_format``: QLoRA's base format
    (the plan's weights), whose bits its dequantization reads (:mod:`~.dequant`); ``gpus_per_server``'s default is the
``SERVER_GPUS`` a plan's estimate times a layout with (it leaves it out). ``seq_tokens`` and ``micro_batch`` may
    come by position: a plan's estimate passes every other argument by keyword, and a call of more than 30 stack
    slots (a keyword takes two) compiles with its keywords in a dictionary built and unpacked (``CALL_FUNCTION_EX``,
    ``tests/planner/test_hot_calls.py``).

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> st = training_step(toy_model(), toy_gpu(), TrainLayout(gpus=1), seq_tokens=128, global_batch_tokens=1024)
    >>> st.microbatches, sorted(st.breakdown_s) == sorted(BREAKDOWN_KEYS), st.tokens_per_s < st.ceiling_tokens_per_s
    (8, True, True)
    """
    cal = cal or calibration()
    if lay.tp * lay.pp * lay.cp * lay.dp != lay.gpus:  # refused (the memo below counts the GPUs from the split)
        _check(model, lay, seq_tokens)
    b = _layout_terms(model, gpu, cal, lay.tp, lay.pp, lay.cp, lay.dp, lay.ep, lay.zero, lay.virtual_stages,
                      lay.tp_overlap, lay.ep_overlap, seq_tokens, micro_batch, recompute, kind, precision,
                      gpus_per_server, network_bytes_per_s, grad_bytes_per_value, attention_kernel, lay.offload,
                      train_stack, offload_activation_layers, lay.pipeline_layout, optimizer_state,
                      sequence_parallel_of(lay), fsdp1, moe_dispatcher, base_format)
    m = microbatches_for(global_batch_tokens, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq_tokens)
    _check_interleaving(lay, m, train_stack)
    bubble_s = pipeline_bubble_stage_times(lay.pp, m, lay.virtual_stages, schedule) * b.stage_s
    breakdown = {
        "compute": m * b.compute_s, "tp_comm": m * b.tp_s, "pp_bubble": bubble_s,
        "pp_p2p": m * p2p_transfers_per_microbatch(lay.pp, schedule) * b.p2p_s, "cp_comm": m * b.cp_s,
        "dp_sync": b.sync_s + m * b.micro_sync_s,
        "fsdp_comm": m * b.fsdp_s, "ep_alltoall": m * b.ep_s, "moe_launch": m * b.launch_s,
        "activation_offload": m * b.offload_s, "optimizer": b.optimizer_s,
    }
    step_s = sum(breakdown.values())
    tokens_step = m * lay.dp * micro_batch * seq_tokens
    tokens_per_s = tokens_step / step_s
    model_f, peak = b.model_flops_per_token, b.choice.flops_per_s
    return _new_step(
        step_s=step_s, breakdown_s=breakdown, tokens_per_step=tokens_step, microbatches=m,
        tokens_per_s=tokens_per_s, model_flops_per_token=model_f, hardware_flops_per_token=b.hardware_flops_per_token,
        tflops_per_gpu=tokens_per_s * model_f / lay.gpus / 1e12,
        mfu=tokens_per_s * model_f / (lay.gpus * peak), peak_flops_per_s=peak,
        precision=b.choice.precision, ceiling_tokens_per_s=b.ceiling_tokens_per_s,
        bubble_fraction=bubble_s / step_s,
    )


BOUND_SLACK = 1e-9
"""How far above the parts it adds up :func:`tokens_per_s_bound` puts its bound: a sum's rounding (a few units in the
last place of a dozen terms) is a millionth of that, however the interpreter adds them up."""


def tokens_per_s_bound(
    model: ModelSpec, gpu: GpuSpec, lay: TrainSplit, *, seq_tokens: int, micro_batch: int = 1,
    global_batch_tokens: int = DEFAULT_GLOBAL_BATCH_TOKENS, recompute: Recompute = "none", kind: TrainKind = "full",
    precision: str = "bf16", gpus_per_server: int = 8, network_bytes_per_s: float | None = None,
    cal: Calibration | None = None, attention_kernel: AttentionKernel = "flash", train_stack: str = "megatron",
    moe_dispatcher: MoeDispatcher = "alltoall", schedule: PipelineSchedule = "1f1b",
    base_format: str = QLORA_BASE_FORMAT,
) -> float:
    """At least :func:`training_step`'s ``tokens_per_s`` of the same arguments, for a fraction of its work: the step
    without the parts that are never negative and need the data parallelism (FSDP's gathers, the gradient sync, the
    optimizer), the stage-to-stage transfers and the activation offload, its pipeline bubble over the micro-batch's
    time without them either; a touch above (:data:`BOUND_SLACK`). The same for every ZeRO stage of a layout (the
    parts it adds up are :mod:`~anchorgpu.planner.speed.micro_step`'s, memoised); refused where the step is.

    >>> from anchorgpu.planner.speed._toys import toy_gpu, toy_model
    >>> lay = TrainLayout(gpus=4, tp=2, pp=2)
    >>> st = training_step(toy_model(), toy_gpu(), lay, seq_tokens=128, global_batch_tokens=1024)
    >>> st.tokens_per_s <= tokens_per_s_bound(toy_model(), toy_gpu(), lay, seq_tokens=128, global_batch_tokens=1024)
    True
    """
    cal = cal or calibration()
    _check(model, lay, seq_tokens)
    b = micro_step(model, gpu, cal, lay.tp, lay.pp, lay.cp, lay.ep, lay.virtual_stages, lay.tp_overlap, lay.ep_overlap,
                   seq_tokens, micro_batch, recompute, kind, precision, gpus_per_server, network_bytes_per_s,
                   attention_kernel, train_stack, lay.pipeline_layout, sequence_parallel_of(lay), moe_dispatcher,
                   base_format)
    m = microbatches_for(global_batch_tokens, dp=lay.dp, micro_batch=micro_batch, seq_tokens=seq_tokens)
    _check_interleaving(lay, m, train_stack)
    per_micro = b.compute_s + b.tp_s + b.cp_s + b.ep_s + b.launch_s
    step_s = (m + pipeline_bubble_stage_times(lay.pp, m, lay.virtual_stages, schedule)) * per_micro
    return m * lay.dp * micro_batch * seq_tokens / step_s * (1.0 + BOUND_SLACK)


@dataclass(frozen=True, slots=True)
class _LayoutTerms:
    """What a step of one layout costs whatever its global batch: the times of one micro-batch by part (seconds),
    the per-step parts that do not grow with the micro-batches, and the FLOPs and peak the throughput divides by."""

    choice: PeakChoice
    model_flops_per_token: float
    hardware_flops_per_token: float
    compute_s: float  # per micro-batch, as the ones below
    tp_s: float
    cp_s: float
    ep_s: float
    launch_s: float
    fsdp_s: float
    micro_sync_s: float  # ZeRO-2's and FSDP's own gradient reduce a micro-batch's backward did not hide
    offload_s: float  # the activation offload's copies the computation does not hide
    p2p_s: float  # one stage-to-stage transfer (0.0 without pipeline stages)
    stage_s: float  # one micro-batch's forward and backward on one rank: the unit of the pipeline bubble
    sync_s: float  # per step, as the one below
    optimizer_s: float
    ceiling_tokens_per_s: float


def _compute_layout_terms(
    model: ModelSpec, gpu: GpuSpec, cal: Calibration, tp: int, pp: int, cp: int, dp: int, ep: int,
    zero: int, virtual_stages: int, tp_overlap: bool, ep_overlap: bool, seq_tokens: int, micro_batch: int,
    recompute: Recompute, kind: TrainKind, precision: str, gpus_per_server: int, network_bytes_per_s: float | None,
    grad_bytes_per_value: int, attention_kernel: AttentionKernel = "flash", offload: str = "none",
    train_stack: str = "megatron", offload_activation_layers: int = 0, pipeline_layout: PipelineLayout | None = None,
    optimizer_state: str = "fp32", sequence_parallel: bool = True, fsdp1: bool = False,
    moe_dispatcher: MoeDispatcher = "alltoall", base_format: str = QLORA_BASE_FORMAT,
) -> _LayoutTerms:
    lay = TrainLayout(gpus=tp * pp * cp * dp, tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, zero=zero, virtual_stages=virtual_stages,
                      tp_overlap=tp_overlap, ep_overlap=ep_overlap, offload=offload, pipeline_layout=pipeline_layout,
                      sequence_parallel=sequence_parallel)
    k = cal.stack(gpu)
    _check(model, lay, seq_tokens)
    # one micro-batch's computation, TP, CP and EP exchanges and MoE launches (speed.micro_step)
    micro = micro_step(model, gpu, cal, tp, pp, cp, ep, virtual_stages, tp_overlap, ep_overlap, seq_tokens, micro_batch,
                       recompute, kind, precision, gpus_per_server, network_bytes_per_s, attention_kernel, train_stack,
                       pipeline_layout, sequence_parallel, moe_dispatcher, base_format)
    choice, stage_layers, act_bytes = micro.choice, micro.stage_layers, micro.act_bytes
    compute_s, tp_s, cp_s, ep_s, launch_s = micro.compute_s, micro.tp_s, micro.cp_s, micro.ep_s, micro.launch_s

    # data parallelism: FSDP's gathers every micro-batch, each beside its own pass, and its gradient scatter beside
    # the backward's gather; DDP's and ZeRO-1's sync once a step, ZeRO-2's every micro-batch (data_parallel_terms)
    # across servers the data-parallel link (the NICs) is free beside the products, the host's launches and the
    # collectives that stay inside a server (TP, CP, EP over NVLink), so its traffic hides behind all of them
    server = server_gpus(gpu, gpus_per_server)
    nic_free_s = (compute_s + launch_s + (tp_s if tp * cp <= server else 0.0) + (cp_s if tp * cp <= server else 0.0)
                  + (ep_s if ep <= server else 0.0))
    dpt = data_parallel_terms(model, gpu, cal, lay, stage_layers=stage_layers, compute_s=compute_s,
                              network_window_s=nic_free_s,
                              trains_base=kind == "full", gpus_per_server=gpus_per_server,
                              network_bytes_per_s=network_bytes_per_s, grad_bytes_per_value=grad_bytes_per_value,
                              train_stack=train_stack, fsdp1=fsdp1,
                              param_bytes=gathered_bytes_per_param(model, kind))
    fsdp_s = dpt.fsdp_s

    # activations offloaded to the host (Megatron-Core's CPU offloading, one stage): the copies' exposed part
    offload_s = 0.0
    if offload_activation_layers:
        layer_bytes = layer_activation_bytes(model, s=seq_tokens // lay.cp, b=micro_batch, t=lay.tp, sp=sequence_parallel,
                                             recompute=recompute,
                                             fp8_linear_inputs=keeps_fp8_input_copies(train_stack, precision))
        offload_s = activation_offload_s(gpu, cal, offloaded_bytes=offload_activation_layers * layer_bytes,
                                         compute_s=compute_s)

    per_micro = compute_s + tp_s + cp_s + ep_s + launch_s + fsdp_s + dpt.micro_sync_s + offload_s

    # pipeline: the bubble, in stage times of per_micro once the step's micro-batches are known (training_step), and
    # stage-to-stage transfers: one forward and one backward per micro-batch on the critical path (interleaved chunks
    # overlap their other transfers with compute, as Megatron-LM does)
    p2p_one = 0.0
    if lay.pp > 1:
        pp_link = group_link(gpu, lay.gpus, gpus_per_server=gpus_per_server, network_bytes_per_s=network_bytes_per_s)
        # a stage sends its TP rank's 1/t of the sequence with sequence parallelism, the whole of it without
        # (Megatron-Core's get_forward_backward_func: the shape's sequence is seq / t only under sequence parallelism)
        p2p_one = p2p_s(act_bytes / (lay.tp if sequence_parallel else 1), pp_link, efficiency=cal.link_efficiency)

    # optimizer: memory-bound update of the local (sharded) parameters, its traffic by the state's precision
    local = dpt.local_params
    traffic = optimizer_traffic_bytes_per_param(cal.optimizer_bytes_per_param, optimizer_state)
    if lay.offload != "none":  # the step on the CPU, and the updated 16-bit parameters sent back (--offload)
        opt_s = host_optimizer_s(gpu, cal, local, traffic)
    else:
        opt_s = local * traffic / (gpu.memory_bandwidth_bytes_per_s * k.decode_mbu)

    return _LayoutTerms(
        choice=choice, model_flops_per_token=micro.model_flops_per_token,
        hardware_flops_per_token=micro.hardware_flops_per_token, compute_s=compute_s, tp_s=tp_s,
        cp_s=cp_s, ep_s=ep_s, launch_s=launch_s, fsdp_s=fsdp_s,
        micro_sync_s=dpt.micro_sync_s, offload_s=offload_s, p2p_s=p2p_one, stage_s=per_micro, sync_s=dpt.sync_s, optimizer_s=opt_s,
        # the roofline: every GPU at the precision's dense peak on the least work a step runs, attention causal as the
        # kernels run it (not the MFU count, whose masked half would put the bound below the prediction at long
        # sequences)
        ceiling_tokens_per_s=lay.gpus * choice.flops_per_s / micro.ceiling_flops_per_token)


_layout_terms = memo_on_frozen(_compute_layout_terms, frozen=3)

