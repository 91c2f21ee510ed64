"""The ``performance`` section of a plan: predictions with their band and the roofline ceiling beside them.

Pure. Reads a :class:`~anchorgpu.planner.plan.Plan` (its layout, per-GPU weights, KV-cache geometry and
workload) and returns the JSON-ready section: serving (``ttft_s``, ``tpot_s``, ``output_tokens_per_s``,
``max_output_tokens_per_s``, ``decode_tokens_per_s_per_user``) or training (``train_tokens_per_s``,
``train_tflops_per_gpu``, ``train_mfu``, ``step_time_s``, ``train_time_s``, ``gpu_hours``), each prediction with
``_low``/``_high`` from the calibration residuals and ``_ceiling`` from the datasheet; a training step's parts
(``step_time_breakdown_s``) are given without a band.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.global_batch import batch_timed_line
from anchorgpu.planner.inputs import default_seq_tokens
from anchorgpu.planner.media import request_within
from anchorgpu.planner.memory.activations import sequence_parallel_share
from anchorgpu.planner.run_steps import run_steps, run_steps_line
from anchorgpu.planner.sequence_parallel import speed_off_line
from anchorgpu.planner.serving_handoff import HANDED
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.caveats import (
    ENGINE_CAVEAT_LABEL,
    MOE_CAVEAT_LABEL,
    MOE_TRAIN_CAVEAT_LABEL,
    SPEED_CAVEAT_LABELS,
    TTFT_CAVEAT_LABEL,
)
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.dequant import QLORA_BASE_FORMAT
from anchorgpu.planner.speed.experts import expert_gemms_per_layer
from anchorgpu.planner.speed.figures import evidence_items, put_evidence, put_rate, put_time
from anchorgpu.planner.speed.flops import TrainKind, train_kind
from anchorgpu.planner.speed.handed_memos import handed_context
from anchorgpu.planner.speed.links import (
    compute_precision_for_training,
    host_kind,
)
from anchorgpu.planner.speed.overrides import Overrides, calibrated
from anchorgpu.planner.speed.pipeline import (
    FINETUNE_GLOBAL_BATCH_SEQUENCES,
    bubble_line,
    default_batch_tokens,
    pipeline_schedule,
    timed_batch_tokens,
)
from anchorgpu.planner.speed.serving_plan import (
    ENGINE_RESERVATION,
    KvReservation,
    context_of,
    saturation_concurrency,
    serving_band_kind,
    serving_performance,
)
from anchorgpu.planner.speed.serving_setup import SERVER_GPUS, serving_setup
from anchorgpu.planner.speed.topology import network_bytes_per_s_of, server_gpus
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import DEFAULT_GLOBAL_BATCH_TOKENS, training_step
from anchorgpu.planner.speed.training_context import training_context
from anchorgpu.planner.speed.training_lines import expert_launch_line, larger_batch_line, network_line, step_line
from anchorgpu.units import bytes_per_s_to_gbit_per_s

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = [
    "DEFAULT_STORAGE_BYTES_PER_S",
    "SERVER_GPUS",
    "ENGINE_CAVEAT_LABEL",
    "MOE_CAVEAT_LABEL",
    "MOE_TRAIN_CAVEAT_LABEL",
    "SPEED_CAVEAT_LABELS",
    "TTFT_CAVEAT_LABEL",
    "KvReservation",
    "attach_performance",
    "check_tokens_cover_a_step",
    "engine_reservation",
    "evidence_items",
    "performance_calibration",
    "plan_performance",
    "request_tokens",
    "saturation_concurrency",
    "serving_band_kind",
    "serving_setup",
    "train_layout",
]

DEFAULT_STORAGE_BYTES_PER_S = 2e9
IDLE_SHARE_TO_MENTION = 0.2
"""A training step whose pipeline bubble and unhidden gradient sync take this share of it or more, at the default
global batch, gets a line on what a larger batch would give (a threshold for saying it, not a model constant)."""
LARGER_BATCH_FACTOR = 4
"""The larger global batch that line prices: four times the step's tokens (the default 4M becomes 16M, the batch
Llama 3 405B trained at, arXiv:2407.21783 section 3.4.1)."""
"""Checkpoint write bandwidth: 2 GB/s, a typical single NVMe-backed or network volume. State yours."""


def train_layout(plan: Plan) -> TrainLayout:
    lay = plan.layout
    return TrainLayout(gpus=lay.gpus, tp=lay.tp, pp=lay.pp, cp=lay.cp, dp=lay.dp, ep=lay.ep, zero=lay.zero,
                       virtual_stages=lay.virtual_stages, tp_overlap=lay.tp_overlap, ep_overlap=lay.ep_overlap,
                       pipeline_layout=lay.pipeline_layout, sequence_parallel=lay.sequence_parallel)


def _training(plan: Plan, model: ModelSpec, train_tokens: int | None, out: dict[str, Any],
              assumptions: list[str], warnings: list[tuple[str, str]], cal: Calibration) -> None:
    assert plan.gpu is not None
    w = plan.workload
    lay = plan.layout  # what train_layout(plan) copies, read in place
    network = network_bytes_per_s_of(w.network_gbit_per_s_per_gpu)  # None: the calibration's
    ctx = training_context(plan.gpu, cal, model, lay.gpus, lay.tp, lay.pp, lay.cp, lay.dp, lay.ep, lay.zero,
                           lay.virtual_stages, lay.tp_overlap, lay.ep_overlap, w.task, w.train_stack, SERVER_GPUS,
                           lay.pipeline_layout, network)
    band = ctx.band
    precision = compute_precision_for_training(w.train_precision)  # plan() refused it where the GPU lacks it
    seq = default_seq_tokens(w, model.max_context_tokens)  # the sequence plan() sized the memory for
    default_tokens = default_batch_tokens(w.task, seq)
    kind: TrainKind = train_kind(w.task)
    schedule = pipeline_schedule(w.task, w.train_stack)  # QLoRA on the PyTorch stack: device_map, stages in turn
    base_format = plan.precision.weights or QLORA_BASE_FORMAT  # the format plan() resolved: QLoRA dequantizes it
    # the batch of speed.pipeline.step_microbatches: the memory's interleaved activations count the same micro-batches
    st = training_step(model, plan.gpu, lay, seq, w.micro_batch or 1,  # by position: test_hot_calls
                       global_batch_tokens=timed_batch_tokens(w.global_batch_tokens, dp=lay.dp,
                                                              micro_batch=w.micro_batch or 1, seq_tokens=seq,
                                                              default_tokens=default_tokens),
                       recompute=w.recompute or "none", kind=kind, precision=precision,  # at SERVER_GPUS a server
                       network_bytes_per_s=network,
                       grad_bytes_per_value=w.grad_bytes_per_value, cal=cal,
                       train_stack=w.train_stack, offload_activation_layers=w.offload_activation_layers,
                       optimizer_state=w.optimizer_state, schedule=schedule, base_format=base_format)
    put_rate(out, "train_tokens_per_s", st.tokens_per_s, st.ceiling_tokens_per_s, band)
    # MFU and TFLOP/s count attention over the whole sequence (flops.training_flops_per_token): their ceilings are the
    # ceiling rate's in that count, past 1.0 (the peak) by the masked half a causal kernel skips
    mfu_top = st.ceiling_tokens_per_s * st.model_flops_per_token / (lay.gpus * st.peak_flops_per_s)
    put_rate(out, "train_tflops_per_gpu", st.tflops_per_gpu, mfu_top * st.peak_flops_per_s / 1e12, band)
    put_rate(out, "train_mfu", st.mfu, mfu_top, band)
    # the step's band and ceiling follow from the throughput's: the step's tokens over the rate (as train_time_s)
    put_time(out, "step_time_s", st.step_s, st.tokens_per_step / st.ceiling_tokens_per_s, band)
    out["step_time_breakdown_s"] = dict(st.breakdown_s)
    out["microbatches"] = st.microbatches
    out["global_batch_tokens"] = st.tokens_per_step
    out["pipeline_bubble_fraction"] = st.bubble_fraction
    out["train_predicted_mfu"] = st.mfu  # name kept from the first contract
    if train_tokens:  # whole optimizer steps: the last one is a whole global batch (planner.run_steps)
        trained = run_steps(train_tokens, st.tokens_per_step) * st.tokens_per_step
        time_s = trained / st.tokens_per_s
        put_time(out, "train_time_s", time_s, trained / st.ceiling_tokens_per_s, band)
        put_time(out, "gpu_hours", time_s * lay.gpus / 3600.0, trained / st.ceiling_tokens_per_s * lay.gpus / 3600,
                 band)
    else:
        out["train_time_s"] = None
        out["gpu_hours"] = None
    # which batch the step is timed with: a stated one as given (plan() refused it unless it splits), else the default
    assumptions.append(batch_timed_line(st.tokens_per_step, stated=w.global_batch_tokens is not None,
                                        default_tokens=default_tokens, microbatches=st.microbatches,
                                        dp=lay.dp, micro_batch=w.micro_batch or 1, seq_tokens=seq,
                                        finetune_sequences=FINETUNE_GLOBAL_BATCH_SEQUENCES if kind != "full" else None))
    if train_tokens:
        assumptions.append(run_steps_line(train_tokens, st.tokens_per_step))
    k = ctx.stack
    assumptions.append(step_line(st.microbatches, w.micro_batch or 1, seq, st.tokens_per_step, precision,
                                  k.fp8_matmul_efficiency if precision != "bf16" else k.train_matmul_efficiency,
                                  model.hidden_size // lay.tp, round(mfu_top, 2), "mfu" in cal.user_efficiencies,
                                  cal.train_gemm_ratio(plan.gpu, precision)))
    if ctx.stack_line is not None:
        assumptions.append(ctx.stack_line)
    if ctx.tp_line is not None:
        assumptions.append(ctx.tp_line)
        if not lay.sequence_parallel:
            assumptions.append(speed_off_line(lay.tp, sequence_parallel_share(model), stages=lay.pp > 1))
        if ctx.tp_warning is not None:
            warnings.append(ctx.tp_warning)
    if ctx.dp_line is not None:
        assumptions.append(ctx.dp_line)
    server = server_gpus(plan.gpu, SERVER_GPUS)
    if lay.gpus > server:  # the layout spans servers: which network its traffic between them was timed at
        stated = w.network_gbit_per_s_per_gpu
        gbit = stated if stated is not None else bytes_per_s_to_gbit_per_s(cal.network_bytes_per_s)
        out["network_gbit_per_s_per_gpu"] = gbit
        assumptions.append(network_line(lay.gpus, server, gbit, stated=stated is not None))
    if ctx.fsdp_line is not None:
        assumptions.append(ctx.fsdp_line)
    if ctx.ep_line is not None:
        assumptions.append(ctx.ep_line)
    if lay.offload != "none":
        host = host_kind(plan.gpu)
        memory = {"superchip": "Grace's LPDDR5X", "x86": "the x86 host's DDR5"}[host]
        assumptions.append(
            f"--offload {lay.offload}: the optimizer step runs on the CPU at a GPU's share of {memory} "
            f"({cal.host_memory_bytes_per_s[host] / 1e9:.0f} GB/s, stated), "
            f"{st.breakdown_s['optimizer']:.3g} s a step with the updated parameters sent back over the host link"
            + (", and the parameters come from host memory forward and backward in every micro-batch (in fsdp_comm)"
               if lay.offload == "params" else "")
            + "; no measured offload run checks it")
    launch_s = st.breakdown_s.get("moe_launch", 0.0)
    if model.moe is not None and launch_s > 0:
        assumptions.append(expert_launch_line(
            model.moe.num_experts / lay.ep, expert_gemms_per_layer(kind, w.recompute or "none"),
            k.moe_host_s_per_expert_gemm, launch_s / st.microbatches))
    if lay.pp > 1:
        assumptions.append(bubble_line(lay.pp, lay.virtual_stages, st.microbatches, st.bubble_fraction, schedule))
        if ctx.layers_line is not None:
            assumptions.append(ctx.layers_line)
    # a larger batch shrinks a 1F1B bubble's share, not that of stages run one after another ((p-1)/p whatever m is)
    idle_s = (st.breakdown_s.get("pp_bubble", 0.0) if schedule == "1f1b" else 0.0) + st.breakdown_s.get("dp_sync", 0.0)
    if w.global_batch_tokens is None and idle_s >= IDLE_SHARE_TO_MENTION * st.step_s:
        larger = LARGER_BATCH_FACTOR * st.tokens_per_step
        wide = training_step(model, plan.gpu, lay, seq, w.micro_batch or 1,
                             global_batch_tokens=larger, recompute=w.recompute or "none", kind=kind,
                             precision=precision, network_bytes_per_s=network,
                             grad_bytes_per_value=w.grad_bytes_per_value, cal=cal, train_stack=w.train_stack,
                             offload_activation_layers=w.offload_activation_layers,
                             optimizer_state=w.optimizer_state, schedule=schedule, base_format=base_format)
        assumptions.append(larger_batch_line(st.tokens_per_step, st.microbatches, idle_s / st.step_s, larger,
                                             wide.tokens_per_s, st.tokens_per_s))
    assumptions.extend(ctx.caveats)
    put_evidence(ctx.evidence, out, assumptions)


def check_tokens_cover_a_step(train_tokens: int, global_batch_tokens: int | None,
                              default_tokens: int = DEFAULT_GLOBAL_BATCH_TOKENS) -> None:
    """Refuse a run shorter than one optimizer step: its time would be a fraction of a step that never completes.

    >>> check_tokens_cover_a_step(10**9, None)
    >>> check_tokens_cover_a_step(10**9, 10**12)
    Traceback (most recent call last):
    ...
    anchorgpu.errors.InvalidWorkload: --tokens 1,000,000,000 is less than one optimizer step of --global-batch 1,000,000,000,000 tokens: the run would not finish a step; lower --global-batch or raise --tokens
    """
    batch = global_batch_tokens or default_tokens
    if train_tokens < batch:
        given = said("--global-batch {batch:,} tokens", batch=batch) if global_batch_tokens \
            else said("{batch:,} tokens (the default --global-batch)", batch=batch)  # clauses a page translates too
        raise InvalidWorkload(said("--tokens {train_tokens:,} is less than one optimizer step of {given}: the run "
                                   "would not finish a step; lower --global-batch or raise --tokens",
                                   train_tokens=train_tokens, given=given))


def plan_performance(
    plan: Plan, *, prompt_tokens: int | None = None, output_tokens: int | None = None,
    train_tokens: int | None = None, storage_bytes_per_s: float = DEFAULT_STORAGE_BYTES_PER_S,
    mfu: float | None = None, mbu: float | None = None, cal: Calibration | None = None,
    kv_reservation: KvReservation | None = None, graph_batch_sizes: tuple[int, ...] = (), host_overlap: bool = True,
    absorbed_dequant: bool = False, engine: str | None = None,
) -> dict[str, Any]:
    """Speed, time and checkpoint figures for a plan, as the ``performance`` JSON section.

    Serving: ``prompt_tokens``/``output_tokens`` default to the workload's, else 1,024 and 256 (within
    the context); ``kv_reservation`` says how the engine admits requests (see :data:`KvReservation`; by default
    the workload's engine's: vLLM's ``average``, TensorRT-LLM's ``full``, SGLang's ``ratio``); ``graph_batch_sizes`` the captured decode graphs an engine pads a batch up to
    (none by default: vLLM captures every multiple of 8, so its padding is negligible); ``host_overlap`` False
    for an engine that schedules between GPU steps rather than beside them (vLLM before its async scheduling);
    ``absorbed_dequant`` True for an engine that dequantises MLA's absorbed latent weights from FP8 every step (SGLang
    on ROCm: an SGLang plan on an AMD GPU sets it itself, ``serving_setup.sglang_step_terms``; True only adds it); ``engine`` the engine whose kernels ran where it is not
    the workload's (measured rows only: ``serving_setup.serving_setup``). Training: ``train_tokens`` gives ``train_time_s`` and ``gpu_hours``. Without a GPU, or
    for a diffusion pipeline, the figures are null and ``assumptions`` says why.

    >>> from anchorgpu.planner import Workload, plan
    >>> from anchorgpu.planner._examples import llama_3_1_8b
    >>> from anchorgpu.planner.speed._toys import toy_gpu
    >>> s = plan_performance(plan(llama_3_1_8b(), Workload(context_tokens=4096, concurrency=8), gpu=toy_gpu()))
    >>> s["tpot_s_low"] <= s["tpot_s"] <= s["tpot_s_high"], s["output_tokens_per_s"] < s["output_tokens_per_s_ceiling"]
    (True, True)
    """
    if prompt_tokens is not None or output_tokens is not None or train_tokens is not None:
        for name, value in (("prompt", prompt_tokens), ("output-tokens", output_tokens), ("tokens", train_tokens)):
            if value is not None and value < 1:
                raise InvalidWorkload(said("--{name} {value}: must be at least 1", name=name, value=value))
    model, gpu, w = plan.model, plan.gpu, plan.workload
    if train_tokens is not None and w.task in ("train", "lora", "qlora") and isinstance(model, ModelSpec):
        check_tokens_cover_a_step(train_tokens, w.global_batch_tokens,
                                  default_batch_tokens(w.task, default_seq_tokens(w, model.max_context_tokens)))
    if gpu is not None and gpu.devices_per_package > 1 and w.task == "inference" and plan.fits \
            and isinstance(model, ModelSpec):  # a package of several devices: timed as it is launched
        from anchorgpu.planner.speed.packages import launched_serving_performance

        return launched_serving_performance(
            plan, prompt_tokens=prompt_tokens, output_tokens=output_tokens, storage_bytes_per_s=storage_bytes_per_s,
            mfu=mfu, mbu=mbu, cal=cal, kv_reservation=kv_reservation, graph_batch_sizes=graph_batch_sizes,
            host_overlap=host_overlap, absorbed_dequant=absorbed_dequant, engine=engine)
    assumptions: list[str] = []
    warnings: list[tuple[str, str]] = []
    if cal is None:  # performance_calibration(cal, mfu, mbu), inline
        cal = calibration() if mfu is None and mbu is None else calibrated(Overrides(mfu=mfu, mbu=mbu))
    out: dict[str, Any] = {"calibration_version": cal.version}
    if cal.origin == "user":
        assumptions.append("efficiencies given by the user replace the calibrated ones: "
                           + ", ".join(f"{n} {v:g}" for n, v in (("mfu", mfu), ("mbu", mbu)) if v is not None)
                           + "; no band is given (the bands say where measured runs fell around the calibrated "
                           "model, not around these)")
        out["efficiencies"] = "user"
    if not isinstance(model, ModelSpec):
        assumptions.append("speed is not estimated for diffusion pipelines")
    elif gpu is None:
        assumptions.append("no GPU named: speed needs a GPU (--gpu)")
    elif plan.fits is False:
        assumptions.append("the plan does not fit: no speed is predicted for a configuration that cannot run")
    elif w.task == "inference":
        # request_tokens(plan, prompt_tokens, output_tokens), inline
        prompt, output = request_within(prompt_tokens or w.prompt_tokens, output_tokens or w.output_tokens,
                                        w.context_tokens or model.max_context_tokens)
        # what plan() worked out that the estimate would derive again (serving_handoff.handed, inline)
        last = HANDED[0]
        terms = last[1] if last[0] is plan else None
        # the peak of the weights' precision among what the GPU, model and format give
        serving = context_of(plan, cal) if terms is None else handed_context(plan, cal, terms)
        choice = serving.choice
        if choice.warning:
            warnings.append(choice.warning)
        out["compute_precision"] = choice.precision
        reservation: KvReservation = kv_reservation or ENGINE_RESERVATION.get(w.engine, "average")  # engine_reservation
        serving_performance(plan, model, prompt, output, out, assumptions, cal, reservation, graph_batch_sizes, host_overlap,
                            serving, absorbed_dequant, engine, terms)
        out["checkpoint_bytes"] = plan.checkpoint_bytes or int(plan.breakdown.get("weights_whole_model_bytes", 0))
    else:
        out["compute_precision"] = compute_precision_for_training(w.train_precision)
        _training(plan, model, train_tokens, out, assumptions, warnings, cal)
        ckpt = plan.checkpoint_bytes or int(plan.breakdown.get("weights_whole_model_bytes", 0))
        out["checkpoint_bytes"] = ckpt
        out["checkpoint_write_s"] = ckpt / storage_bytes_per_s
        assumptions.append(_checkpoint_line(storage_bytes_per_s / 1e9))
    out["assumptions"] = assumptions
    out["warnings"] = [{"code": c, "message": m} for c, m in warnings] if warnings else []
    return out


def performance_calibration(cal: Calibration | None, mfu: float | None, mbu: float | None) -> Calibration:
    """The calibration :func:`plan_performance` times with: ``cal``, else the calibrated one, ``mfu``/``mbu`` in
    place of its efficiencies where given."""
    return cal or (calibration() if mfu is None and mbu is None else calibrated(Overrides(mfu=mfu, mbu=mbu)))


def request_tokens(plan: Plan, prompt_tokens: int | None, output_tokens: int | None) -> tuple[int, int]:
    """(prompt, output) tokens a request of a serving plan (of a language model) as :func:`plan_performance` times
    it: those given, else the workload's, else 1,024 and 256 within the context (a given prompt leaves the rest of
    the context to the output): :func:`~anchorgpu.planner.media.request_within`, the rule the catalog sweep times a
    text request by too."""
    model, w = plan.model, plan.workload
    assert isinstance(model, ModelSpec)
    return request_within(prompt_tokens or w.prompt_tokens, output_tokens or w.output_tokens,
                          w.context_tokens or model.max_context_tokens)


def engine_reservation(engine: str) -> KvReservation:
    """How ``engine`` admits requests against its KV cache by default (:data:`KvReservation`,
    ``serving_plan.ENGINE_RESERVATION``): TensorRT-LLM reserves each request's whole length, vLLM fills pages as
    tokens come, SGLang charges its new-token ratio of what each may still write."""
    return ENGINE_RESERVATION.get(engine, "average")


def attach_performance(plan: Plan, **options: Any) -> Plan:
    """``plan`` with its ``performance`` section under ``Plan.extra`` (what ``plan_to_json`` emits)."""
    return replace(plan, extra={**plan.extra, "performance": plan_performance(plan, **options)})


@lru_cache(maxsize=8)  # one storage rate a process, mostly
def _checkpoint_line(gb_per_s: float) -> str:
    return said("checkpoint written at {rate:g} GB/s", rate=gb_per_s)
