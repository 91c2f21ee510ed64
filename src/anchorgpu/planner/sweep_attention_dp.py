"""Attention data parallelism in the serving sweep (:mod:`anchorgpu.planner.sweep`): a mixture of experts served on
one server as ``k / tp`` replicas of its attention and dense layers with the routed experts split over all ``k``
GPUs (EP ``k``), the layout :func:`~anchorgpu.planner.speed.serving_layouts.choose_serving_layout` gives a model that no
TP/PP split holds. Each replica keeps only its own sequences' KV cache, which a TP split cannot divide where the
model has one latent per token (MLA) or fewer KV heads than GPUs. These few layouts (one per shape and TP size) are
planned whole, by :func:`~anchorgpu.planner.plan` and the scalar serving model, whose EP-group timing (the
replicas stepping together, the all-gathers of every MoE layer) the vectorized ticks do not carry. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.inputs import Layout, PrecisionPlan, Workload

if TYPE_CHECKING:
    from anchorgpu.planner.sweep import HardwareShape, SweepSpec
    from anchorgpu.planner.sweep_grid import Layouts

__all__ = ["attention_dp_columns", "attention_dp_rows", "with_attention_dp"]

Array = npt.NDArray[Any]

_FLOAT_COLUMNS = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "other_bytes", "per_gpu_total_bytes",
                  "budget_bytes", "engine_reserve_bytes", "prefill_s", "decode_tokens_per_s_per_user",
                  "decode_tokens_per_s_total")


def attention_dp_rows(model: ModelSpec, shapes: Sequence[HardwareShape],
                      engine: str = "vllm") -> list[tuple[int, int, int, int, int, int, int, int, int]]:
    """(shape, servers, gpus, tp, pp, dp, zero, ep, cp) of every attention-DP layout swept: one whole server of each
    shape, with the TP sizes the chooser tries on it
    (:func:`~anchorgpu.planner.speed.serving_layouts.attention_dp_tp_sizes`)."""
    from anchorgpu.planner.speed.serving_layouts import attention_dp_tp_sizes

    return [(s, 1, k, tp, 1, k // tp, 0, k, 1) for s, shape in enumerate(shapes) if shape.max_servers >= 1
            for k in (shape.gpus_per_server,) for tp in attention_dp_tp_sizes(model, k, engine)]


def attention_dp_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                         weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...], asked: Workload,
                         contexts: tuple[int, ...], prompt: int, output: int) -> dict[str, Array]:
    """The serving sweep's columns for the attention-DP layouts ``lay``, each ``(L, W, K, C)`` in the sweep's order,
    from :func:`~anchorgpu.planner.plan` and :func:`~anchorgpu.planner.speed.estimate.plan_performance` (memory as
    the plan sizes it; speed where the plan fits, NaN where it does not, as the plan gives none). A text model's
    sequences are planned at the sweep's context of each concurrency (``contexts``, one per concurrency), as the
    other layouts are; a model with images or an encoder at ``asked``, the workload as the sweep's probe planned it,
    at each concurrency, so the plan adds their tokens once (over a concurrency ladder with no context given, each
    concurrency then takes the plan's own default context, as the other layouts do)."""
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.speed.estimate import plan_performance

    grid = (len(lay), len(weights), len(kvs), len(concs))
    cols = {name: np.full(grid, np.nan) for name in _FLOAT_COLUMNS}
    fits = np.zeros(grid, dtype=bool)
    media = model.encoder is not None or model.image is not None
    by_conc = [replace(asked, concurrency=c) if media else replace(asked, concurrency=c, context_tokens=ctx)
               for c, ctx in zip(concs, contexts, strict=True)]
    mfu, mbu = spec.efficiencies.mfu, spec.efficiencies.mbu
    rows = zip(lay.shape.tolist(), lay.gpus.tolist(), lay.tp.tolist(), lay.dp.tolist(), lay.ep.tolist(), strict=True)
    for i, (s, gpus, tp, dp, ep) in enumerate(rows):
        gpu = shapes[s].gpu
        layout = Layout(gpus=gpus, tp=tp, pp=1, dp=dp, ep=ep)
        for j, name in enumerate(weights):
            for k, kv in enumerate(kvs):
                precision = PrecisionPlan(weights=name, kv_cache=kv)
                for c, w in enumerate(by_conc):
                    try:
                        p = plan(model, w, precision=precision, layout=layout, gpu=gpu, overheads=spec.overheads,
                                 suggest=False, choose_layout=False)
                    except InvalidWorkload:  # not plannable on this layout: never usable, never the closest miss
                        cols["per_gpu_total_bytes"][i, j, k, c] = np.inf
                        cols["budget_bytes"][i, j, k, c] = float(gpu.memory_bytes)
                        continue
                    b = p.per_gpu
                    at = (i, j, k, c)
                    cols["weights_bytes"][at], cols["kv_cache_bytes"][at] = b.weights_bytes, b.kv_cache_bytes
                    cols["activations_bytes"][at], cols["other_bytes"][at] = b.activations_bytes, b.overhead_bytes
                    cols["per_gpu_total_bytes"][at] = b.total_bytes
                    cols["budget_bytes"][at] = p.budget_bytes if p.budget_bytes is not None else np.nan
                    cols["engine_reserve_bytes"][at] = p.breakdown.get("sglang_reserve_bytes", np.nan)
                    fits[at] = bool(p.fits)
                    if p.fits:
                        perf = plan_performance(p, prompt_tokens=prompt, output_tokens=output, mfu=mfu, mbu=mbu)
                        cols["prefill_s"][at] = perf["ttft_s"]
                        cols["decode_tokens_per_s_per_user"][at] = perf["decode_tokens_per_s_per_user"]
                        cols["decode_tokens_per_s_total"][at] = perf["output_tokens_per_s"]
    out: dict[str, Array] = dict(cols)
    out["fits"] = fits
    out["concurrency"] = np.broadcast_to(np.array(concs, dtype=np.int64)[None, None, None, :], grid)
    out["train_tokens_per_s"] = np.full(grid, np.nan)
    out["train_time_s"] = np.full(grid, np.nan)
    return out


def with_attention_dp(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                      cols: dict[str, Array], weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...],
                      asked: Workload, contexts: tuple[int, ...], prompt: int, output: int
                      ) -> tuple[Layouts, dict[str, Array]]:
    """The sweep's layouts and serving columns with the attention-DP layouts appended (the columns each widened to
    the whole grid for it), or both unchanged where there are none (a dense model)."""
    rows = attention_dp_rows(model, shapes, spec.workload.engine)
    if not rows:
        return lay, cols
    layouts = type(lay)
    adp = layouts(*(np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)))
    extra = attention_dp_columns(model, shapes, spec, adp, weights, kvs, concs, asked, contexts, prompt, output)
    full = (len(lay), len(weights), len(kvs), len(concs))
    joined = {name: np.concatenate((np.broadcast_to(values.reshape((1,) * (4 - values.ndim) + values.shape), full),
                                    extra[name])) for name, values in cols.items()}
    return layouts(*(np.concatenate((getattr(lay, f.name), getattr(adp, f.name))) for f in fields(lay))), joined
