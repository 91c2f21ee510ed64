"""The roofline ceiling beside each speed figure of a recommended configuration, as ``plan`` gives it: the same
step on the datasheet's peaks and bandwidths with no efficiency, launch or host cost (the constants
:mod:`~anchorgpu.planner.speed.step_constants` forms for the ceiling). The sweep times every configuration but carries
no ceiling; the few shown are planned again here, one by one, by the scalar planner whose figures the sweep is held
equal to (``tests/recommend/test_sweep_agrees_with_plan.py``). A serving row gets, from the same plan, the rate
``plan`` reports at the largest concurrency that fits (``max_output_tokens_per_s``, with its ceiling), and where its
sequences were sized at the default request and its KV cache holds no whole-window sequence, the maximum length plan's
launch starts the engine with (``max_model_len_tokens``: :func:`~anchorgpu.planner.engine_startup.short_launch_length`).
Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner._frozen import evolve
from anchorgpu.planner.engine_startup import short_launch_length
from anchorgpu.planner.inputs import Layout, PrecisionPlan
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.batching import saturated_rates, serving_estimate
from anchorgpu.planner.speed.estimate import engine_reservation, performance_calibration, request_tokens
from anchorgpu.planner.speed.serving_plan import serving_saturation
from anchorgpu.planner.speed.serving_setup import SERVER_GPUS
from anchorgpu.units import at_least

if TYPE_CHECKING:
    from anchorgpu.planner.sweep_types import HardwareShape, SweepResult, SweepSpec

__all__ = ["row_ceilings", "serving_ceilings", "training_ceilings"]


def row_ceilings(model: ModelSpec, spec: SweepSpec, result: SweepResult, row: dict[str, Any], *,
                 shape: HardwareShape | None = None) -> dict[str, float]:
    """The ceilings of one row of the sweep, by its task (:func:`serving_ceilings`, :func:`training_ceilings`);
    ``shape``: the row's hardware shape, where the caller has it."""
    if result.task != "inference":
        return training_ceilings(model, spec, row)
    if shape is None:
        shape = next(sh for sh in result.shapes if sh.id == row["shape"])
    return serving_ceilings(model, spec, result, row, shape)


def serving_ceilings(model: ModelSpec, spec: SweepSpec, result: SweepResult, row: dict[str, Any],
                     shape: HardwareShape) -> dict[str, float]:
    """``prefill_s_ceiling``, ``decode_tokens_per_s_per_user_ceiling`` and ``decode_tokens_per_s_total_ceiling`` of
    one serving row of the sweep, each the ceiling of the figure the row gives: the row planned with its layout,
    formats and concurrency, timed as the sweep times it, which is as ``plan`` times it (users split unevenly over the
    replicas: the busiest replica's pace per user, each replica's own rate added up for the total; an attention-DP
    row planned by ``plan`` itself); and ``max_output_tokens_per_s`` with
    its ``_ceiling``, the rate that plan gives at the largest concurrency that fits (its saturation: the engine's
    KV cache and sequence cap), as ``plan`` reports it, timed, as the row's other figures, on the shape's own servers
    (``plan`` assumes 8-GPU servers; on the catalog's 4-GPU GB200 trays, inside one 72-GPU NVLink domain, the two
    agree). Empty where the row cannot be planned again (none the sweep
    lets fit). The figures are read from what ``plan_performance`` computes them from
    (:func:`~anchorgpu.planner.speed.serving_plan.serving_core`), without the rest of its section (bands, evidence,
    assumptions), which no ceiling reads; a row timed again on its shape's servers takes only the rate at saturation
    of that estimate (:func:`~anchorgpu.planner.speed.batching.saturated_rates`)."""
    conc = int(row["concurrency"])
    # the workload asked at the row's concurrency: plan sizes its sequences as the sweep sized that concurrency's
    # (sweep._contexts: no length given, one sequence at the window and more at the request timed; a vision model's
    # image tokens added once), and says where the launch needs a shorter maximum length (short_launch_length)
    # (evolve: dataclasses.replace's copy without its per-field cost, the same values)
    workload = evolve(spec.workload, concurrency=conc)
    if spec.prompt_tokens is not None or spec.output_tokens is not None:
        # the request as the sweep's probe was given it (sweep.sweep): a T5 prompt fills the encoder, its
        # cross-attention K/V and prefill work that prompt's; a vision model's speed prompt is its text, image tokens
        # and the vision tower's work (a text model's request is the sweep's own, timed below)
        workload = evolve(workload, prompt_tokens=spec.prompt_tokens, output_tokens=spec.output_tokens)
    try:
        p = plan(model, workload, precision=PrecisionPlan(weights=row["weights"], kv_cache=row["kv_cache"]),
                 layout=Layout(gpus=row["gpus"], tp=row["tp"], pp=row["pp"], dp=row["dp"], ep=row["ep"]),
                 gpu=shape.gpu, overheads=spec.overheads, suggest=False, choose_layout=False)
        if not p.fits:
            return {}
        # as plan_performance(p, prompt_tokens=..., output_tokens=..., mfu=..., mbu=...) times it
        prompt, output = request_tokens(p, result.prompt_tokens, result.output_tokens)
        cal = performance_calibration(None, spec.efficiencies.mfu, spec.efficiencies.mbu)
        setup, _, sat = serving_saturation(p, prompt, output, cal, engine_reservation(p.workload.engine))
        attention_dp = row["ep"] > row["tp"]  # the sweep took plan_performance's figures
        # the plan timed the row on the same setup at its concurrency, none of it queued: the same ceilings
        # (serving_estimate's TTFT and TPOT read the saturation only to queue what is past it)
        same = shape.gpus_per_server == SERVER_GPUS and conc <= max(sat, 1)
        if attention_dp or same:  # plan_performance's estimate (serving_core's)
            est = serving_estimate(model, shape.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                                   concurrency=p.workload.concurrency or 1, saturation_concurrency=at_least(sat, 1),
                                   cal=cal)
            top, top_ceiling = est.max_output_tokens_per_s, est.max_output_tokens_per_s_ceiling
        else:  # of plan_performance's estimate, only its rate at saturation (the same figures) is read, timed on the
            # shape's own servers as the row's other figures (plan times its steps on SERVER_GPUS-GPU servers: a group
            # past the shape's server crosses other links)
            on_servers = (setup if shape.gpus_per_server == SERVER_GPUS
                          else evolve(setup, gpus_per_server=shape.gpus_per_server))
            top, top_ceiling = saturated_rates(model, shape.gpu, on_servers, prompt_tokens=prompt,
                                               output_tokens=output, saturation_concurrency=at_least(sat, 1), cal=cal)
        saturated: dict[str, float] = ({"max_output_tokens_per_s": top, "max_output_tokens_per_s_ceiling": top_ceiling}
                                       if sat >= 1 else {})
        length = short_launch_length(p)  # from the same plan: the maximum length its launch needs to start
        if length is not None:
            saturated["max_model_len_tokens"] = length
        if attention_dp:
            return {"prefill_s_ceiling": est.ttft_s_ceiling,
                    "decode_tokens_per_s_per_user_ceiling": 1.0 / est.tpot_s_ceiling,
                    "decode_tokens_per_s_total_ceiling": est.output_tokens_per_s_ceiling, **saturated}
        if same:
            ttft_top, tpot_top, total_top = est.ttft_s_ceiling, est.tpot_s_ceiling, est.output_tokens_per_s_ceiling
        else:  # the plan's setup (serving_setup of the plan, as serving_saturation formed it) on the shape's servers
            est = serving_estimate(model, shape.gpu, evolve(setup, gpus_per_server=shape.gpus_per_server),
                                   prompt_tokens=prompt, output_tokens=output, concurrency=conc,
                                   saturation_concurrency=conc, cal=cal)
            ttft_top, tpot_top, total_top = est.ttft_s_ceiling, est.tpot_s_ceiling, est.output_tokens_per_s_ceiling
    except InvalidWorkload:
        return {}
    return {"prefill_s_ceiling": ttft_top, "decode_tokens_per_s_per_user_ceiling": 1.0 / tpot_top,
            "decode_tokens_per_s_total_ceiling": total_top, **saturated}


def training_ceilings(model: ModelSpec, spec: SweepSpec, row: dict[str, Any]) -> dict[str, float]:
    """``train_tokens_per_s_ceiling`` (and ``train_time_s_ceiling`` with the tokens to train on, in whole steps as the
    row's ``train_time_s`` times them) of one training row:
    every GPU of the layout at the dense peak of the training precision with each token's model FLOPs, attention
    causal as the kernels run it, as :func:`~anchorgpu.planner.speed.training.training_step` puts its ceiling
    (recompute runs no model FLOPs)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.inputs import default_seq_tokens
    from anchorgpu.planner.speed.flops import causal_training_flops_per_token
    from anchorgpu.planner.speed.links import compute_precision_for_training, peak_for

    w = spec.workload
    peak = peak_for(get_gpu(row["gpu"]), compute_precision_for_training(w.train_precision)).flops_per_s
    seq = default_seq_tokens(w, model.max_context_tokens)
    top = int(row["gpus"]) * peak / causal_training_flops_per_token(model, seq,
                                                                    kind="full" if w.task == "train" else "lora")
    out = {"train_tokens_per_s_ceiling": top}
    time_s = row.get("train_time_s")
    if spec.train_tokens and time_s:  # the tokens its whole steps train (the row's time x its rate), at the ceiling
        out["train_time_s_ceiling"] = time_s * float(row["train_tokens_per_s"]) / top
    return out
