"""The sweep's training columns: memory from :func:`~anchorgpu.planner.plan.plan` once per distinct layout and GPU
group, with the least activation recompute that fits, and speed per layout from
:func:`~anchorgpu.planner.speed.training.training_step`; ``splits_batch`` says whether a stated global batch gives each
data-parallel rank one micro-batch or more (``plan`` refuses the layout otherwise, and it is not timed). A pipelined
layout runs the interleaved schedule ``plan``'s chooser would give it
(:func:`~anchorgpu.planner.speed.layouts.deepest_interleave`; plain 1F1B where only that fits). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.planner.inputs import RECOMPUTES, Layout, PrecisionPlan, default_seq_tokens, recompute_ladder
from anchorgpu.planner.plan import plan
from anchorgpu.planner.speed.calibration import calibrated
from anchorgpu.planner.speed.flops import Recompute, TrainKind
from anchorgpu.planner.speed.layouts import deepest_interleave
from anchorgpu.planner.speed.links import compute_precision_for_training
from anchorgpu.planner.speed.pipeline import interleaving_refusal, microbatches_for
from anchorgpu.planner.speed.training import DEFAULT_GLOBAL_BATCH_TOKENS, TrainLayout, training_step
from anchorgpu.planner.sweep_grid import Layouts

if TYPE_CHECKING:  # the sweep imports this module: types only here
    from anchorgpu.planner.sweep import HardwareShape, Progress, SweepSpec

__all__ = ["training_columns"]


def training_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                     weights: tuple[str, ...], progress: Progress | None) -> dict[str, npt.NDArray[Any]]:
    """Training memory from :func:`plan` once per distinct layout and GPU group (vendor, low-precision units), with the least activation
    recompute that fits (none, selective, full) unless the workload names one; speed per layout from
    :func:`anchorgpu.planner.speed.training.training_step`."""
    w = replace(spec.workload, micro_batch=spec.workload.micro_batch or 1)
    n_l, n_w = len(lay), len(weights)
    ladder: tuple[Recompute, ...] = (w.recompute,) if w.recompute else recompute_ladder(model.moe is not None)
    # a layout's training memory depends on the GPU only through its vendor (the CUDA or ROCm context) and
    # whether it computes in the training precision (plan() refuses FP8/FP4 training without the units): planned
    # once per such group and recompute level, the fit then read against each GPU's memory as plan() reads it
    mem_cache: dict[tuple[str, int, int, int, int, int, int, str, bool, str, int, int],
                    tuple[int, int, int, int, str]] = {}
    weights_lw = np.empty((n_l, n_w))
    act_lw = np.empty((n_l, n_w))
    total_lw = np.empty((n_l, n_w))
    state_lw = np.empty((n_l, n_w))
    recompute_lw = np.empty((n_l, n_w), dtype=object)
    virtual_lw = np.ones((n_l, n_w), dtype=np.int64)
    deepest = {pp: deepest_interleave(model, pp) for pp in set(lay.pp.tolist())}
    seq = default_seq_tokens(w, model.max_context_tokens)
    micro = w.micro_batch or 1
    # a stated global batch is kept: a layout it does not give whole micro-batches per data-parallel rank does not run
    # it (plan() refuses it: planner.global_batch.split_refusal); without one, the default batch grows to one micro-batch
    # per rank, as plan() times an explicit layout
    stated = spec.global_batch_tokens
    splits_l = np.ones(n_l, dtype=bool) if stated is None else stated % (lay.dp * micro * seq) == 0
    rows = zip(lay.gpus.tolist(), lay.tp.tolist(), lay.pp.tolist(), lay.dp.tolist(), lay.zero.tolist(),
               lay.ep.tolist(), lay.cp.tolist(), lay.shape.tolist(), strict=True)
    by_weights = {name: PrecisionPlan(weights=name) for name in weights}
    for i, (gpus, tp, pp, dp, zero, ep, cp, s) in enumerate(rows):
        # interleaved only where the training stack runs it with the step's micro-batches, as the chooser tries it
        # (speed.pipeline.interleaving_refusal); the memory plan sees the batch the step is timed with
        sized = replace(w, global_batch_tokens=stated) if stated is not None and splits_l[i] else w
        batch = stated if stated is not None else max(DEFAULT_GLOBAL_BATCH_TOKENS, dp * micro * seq)
        v_deep = deepest[pp]
        if v_deep > 1 and (not splits_l[i] or interleaving_refusal(
                pp, v_deep, microbatches_for(batch, dp=dp, micro_batch=micro, seq_tokens=seq), w.train_stack)):
            v_deep = 1
        for j, name in enumerate(weights):
            gpu = shapes[s].gpu
            group = (name, tp, pp, dp, zero, ep, cp, gpu.vendor, gpu.computes_in(w.train_precision))
            # the least recompute that fits this GPU, as plan(...).fits says, interleaved where that fits too (the
            # chooser's order: the interleaved schedule is the faster at a level, a level less the faster still)
            tries = [(rc, v) for rc in ladder for v in dict.fromkeys((v_deep, 1))]
            for rc, v in tries:
                key = (*group, rc, v, sized.global_batch_tokens or 0)
                if key not in mem_cache:
                    p = plan(model, replace(sized, recompute=rc), precision=by_weights[name], gpu=gpu, suggest=False,
                             choose_layout=False, layout=Layout(gpus=gpus, tp=tp, pp=pp, dp=dp, zero=zero,
                                                                ep=ep if ep > 1 else None, cp=cp,
                                                                virtual_stages=v if v > 1 else None),
                             overheads=spec.overheads)
                    b = p.per_gpu
                    mem_cache[key] = (b.weights_bytes, b.activations_bytes, b.gradients_bytes + b.optimizer_bytes,
                                      b.total_bytes, p.workload.recompute or "none")
                if gpu.memory_bytes - mem_cache[key][3] >= 0:
                    break
            wb, ab, sb, tb, rc_used = mem_cache[key]
            weights_lw[i, j], act_lw[i, j], state_lw[i, j], total_lw[i, j] = wb, ab, sb, tb
            recompute_lw[i, j], virtual_lw[i, j] = rc_used, v
        if progress and i % 64 == 0:
            progress(i * n_w, n_l * n_w)
    budget_l = np.array([sh.gpu.memory_bytes for sh in shapes], dtype=np.float64)[lay.shape]
    fits = total_lw <= budget_l[:, None]
    kind: TrainKind = "full" if w.task == "train" else "lora"
    precision = compute_precision_for_training(w.train_precision)
    speed_cache: dict[tuple[int, int, int, int, int, int, int, str, int], float] = {}
    cal = calibrated(spec.efficiencies)  # --mfu/--mbu time a training step here as they do in plan
    tps = np.empty((n_l, n_w))
    for i in range(n_l):
        s_i, gpus, tp, pp, zero, ep, cp = (int(lay.shape[i]), int(lay.gpus[i]), int(lay.tp[i]), int(lay.pp[i]),
                                           int(lay.zero[i]), int(lay.ep[i]), int(lay.cp[i]))
        dp = gpus // (tp * cp * pp)
        if not splits_l[i]:
            tps[i, :] = np.nan
            continue
        for j in range(n_w):
            rc_ij: Recompute = recompute_lw[i, j]
            v_ij = int(virtual_lw[i, j])
            speed_key = (s_i, gpus, tp, pp, zero, ep, cp, str(rc_ij), v_ij)
            if speed_key not in speed_cache:
                shape = shapes[s_i]
                batch = stated if stated is not None else max(DEFAULT_GLOBAL_BATCH_TOKENS, dp * micro * seq)
                speed_cache[speed_key] = training_step(
                    model, shape.gpu, TrainLayout(gpus=gpus, tp=tp, pp=pp, cp=cp, dp=dp, zero=zero, ep=ep,
                                                  virtual_stages=v_ij), seq_tokens=seq,
                    micro_batch=micro, global_batch_tokens=batch, recompute=rc_ij,
                    kind=kind, precision=precision, gpus_per_server=shape.gpus_per_server,
                    network_bytes_per_s=shape.network_bytes_per_s, train_stack=w.train_stack,
                    offload_activation_layers=w.offload_activation_layers,
                    optimizer_state=w.optimizer_state, cal=cal).tokens_per_s
            tps[i, j] = speed_cache[speed_key]
    shape2 = (n_l, n_w)
    time_s = spec.train_tokens / tps if spec.train_tokens else np.full(shape2, np.nan)
    nan2 = np.full(shape2, np.nan)
    return {
        "weights_bytes": weights_lw, "kv_cache_bytes": np.zeros(shape2), "activations_bytes": act_lw,
        "other_bytes": total_lw - weights_lw - act_lw, "per_gpu_total_bytes": total_lw,
        "budget_bytes": np.broadcast_to(budget_l[:, None], shape2), "fits": fits,
        "splits_batch": splits_l[:, None],  # per layout
        "concurrency": np.broadcast_to(np.full(n_l, micro)[:, None], shape2),
        "prefill_s": nan2, "decode_tokens_per_s_per_user": nan2, "decode_tokens_per_s_total": nan2,
        "train_tokens_per_s": tps, "train_time_s": time_s,
        # the recompute level each configuration was sized and timed with, as its index in RECOMPUTES
        "recompute": np.vectorize(RECOMPUTES.index, otypes=[np.int64])(recompute_lw),
        "virtual_stages": virtual_lw,  # interleaved chunks a GPU of each configuration runs (1: plain 1F1B)
    }
