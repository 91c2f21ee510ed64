"""Attention data parallelism in the serving sweep (:mod:`anchorgpu.planner.sweep`): a mixture of experts served on
one server as ``k / tp`` replicas of its attention and dense layers with the routed experts split over all ``k``
GPUs (EP ``k``), the layout :func:`~anchorgpu.planner.speed.serving_layouts.choose_serving_layout` gives a model that no
TP/PP split holds. Each replica keeps only its own sequences' KV cache, which a TP split cannot divide where the
model has one latent per token (MLA) or fewer KV heads than GPUs. These few layouts (one per shape and TP size) are
planned whole, by :func:`~anchorgpu.planner.plan` and the scalar serving model, whose EP-group timing (the
replicas stepping together, the all-gathers of every MoE layer) the vectorized ticks do not carry. On 2 or more
servers the same engine runs on each (independent engines, the users split between them): over a concurrency ladder
at that many times each rung, its figures the one-server layout's; at a concurrency named, planned whole. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.engine_limits import engine_limits, large_engine_defaults
from anchorgpu.planner.inputs import Layout, PrecisionPlan, Workload

if TYPE_CHECKING:
    from anchorgpu.hardware.spec import GpuSpec
    from anchorgpu.planner.result import Plan
    from anchorgpu.planner.sweep_floor import UserLimits
    from anchorgpu.planner.sweep_grid import Layouts
    from anchorgpu.planner.sweep_types import HardwareShape, SweepSpec

__all__ = ["attention_dp_columns", "attention_dp_rows", "with_attention_dp"]

Array = npt.NDArray[Any]

_FLOAT_COLUMNS = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "other_bytes", "per_gpu_total_bytes",
                  "budget_bytes", "engine_reserve_bytes", "prefill_s", "decode_tokens_per_s_per_user",
                  "decode_tokens_per_s_total")


def attention_dp_rows(model: ModelSpec, shapes: Sequence[HardwareShape], engine: str = "vllm", *,
                      several_servers: bool = True) -> list[tuple[int, int, int, int, int, int, int, int, int]]:
    """(shape, servers, gpus, tp, pp, dp, zero, ep, cp) of every attention-DP layout swept: one whole server of each
    shape, with the TP sizes the chooser tries on it
    (:func:`~anchorgpu.planner.speed.serving_layouts.attention_dp_tp_sizes`); then (``several_servers``), after all
    of those, each of them on 2 to ``max_servers`` servers, one such engine a server (EP one server's GPUs,
    ``servers`` independent engines with the users split between them: no fabric needed, as for any replicas)."""
    from anchorgpu.planner.speed.serving_layouts import attention_dp_tp_sizes

    one = [(s, 1, k, tp, 1, k // tp, 0, k, 1) for s, shape in enumerate(shapes) if shape.max_servers >= 1
           for k in (shape.gpus_per_server,) for tp in attention_dp_tp_sizes(model, k, engine)]
    if not several_servers:
        return one
    return one + [(s, n, n * k, tp, 1, n * k // tp, 0, k, 1) for s, _, k, tp, *_ in one
                  for n in range(2, shapes[s].max_servers + 1)]


def attention_dp_columns(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                         weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...], asked: Workload,
                         contexts: tuple[int, ...], prompt: int, output: int,
                         scaled: bool = False, saturated: bool = False,
                         limits: UserLimits | None = None) -> dict[str, Array]:
    """The serving sweep's columns for the attention-DP layouts ``lay``, each ``(L, W, K, C)`` in the sweep's order,
    from :func:`~anchorgpu.planner.plan` and :func:`~anchorgpu.planner.speed.estimate.plan_performance` (memory as
    the plan sizes it; speed where the plan fits, NaN where it does not, as the plan gives none). A text model's
    sequences are planned at the sweep's context of each concurrency (``contexts``, one per concurrency), as the
    other layouts are; a model with images or an encoder at ``asked``, the workload as the sweep's probe planned it,
    at each concurrency, so the plan adds their tokens once (over a concurrency ladder with no context given, each
    concurrency then takes the plan's own default context, as the other layouts do). With the concurrency of each
    entry (the sweep's, or with ``scaled`` :func:`_scaled_columns`'s on several servers). With ``saturated``, after
    ``concs`` one entry more per (weights, KV dtype), at the most sequences the layout runs at that precision
    (:func:`_saturation_plan`), planned at that precision only (the others left out: never fitting); with per-user
    ``limits`` too, after those one more per (weights, KV dtype), at the most sequences it runs at that precision
    while every user sees them met (:func:`_floor_plan`)."""
    from anchorgpu.planner.plan import plan

    precisions = len(weights) * len(kvs)
    floor = limits if saturated and limits is not None and limits.any else None
    saturation = precisions * (1 if floor is None else 2) if saturated else 0
    grid = (len(lay), len(weights), len(kvs), len(concs) + saturation)
    cols = {name: np.full(grid, np.nan) for name in _FLOAT_COLUMNS}
    fits = np.zeros(grid, dtype=bool)
    media = model.encoder is not None or model.image is not None
    by_conc = [replace(asked, concurrency=c) if media else replace(asked, concurrency=c, context_tokens=ctx)
               for c, ctx in zip(concs, contexts, strict=True)]
    concurrency = np.zeros(grid, dtype=np.int64)
    concurrency[..., :len(concs)] = np.array(concs, dtype=np.int64)
    cols["per_gpu_total_bytes"][..., len(concs):] = np.inf  # a saturation entry planned at its own precision only
    one_server: dict[tuple[int, int], int] = {}  # (shape, TP) -> its one-server row
    several: list[tuple[int, int, int]] = []  # (row, its one-server row, servers) of the rows scaled from another
    rows = zip(lay.shape.tolist(), lay.servers.tolist(), lay.gpus.tolist(), lay.tp.tolist(), lay.dp.tolist(),
               lay.ep.tolist(), strict=True)
    for i, (s, servers, gpus, tp, dp, ep) in enumerate(rows):
        if servers == 1:
            one_server[(s, tp)] = i
        elif scaled:
            several.append((i, one_server[(s, tp)], servers))
            continue
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
                    _put(cols, fits, (i, j, k, c), p, spec, prompt, output)
                if saturation:
                    at = (i, j, k, len(concs) + j * len(kvs) + k)
                    cols["budget_bytes"][at] = float(gpu.memory_bytes)
                    concurrency[i, :, :, at[3]], most = _saturation_plan(model, by_conc[-1], precision, layout, gpu,
                                                                          spec)
                    if most is not None:
                        _put(cols, fits, at, most, spec, prompt, output)
                    if floor is not None:
                        ladder = [(c, bool(met)) for c, met, fit in zip(concs, floor.met(
                            cols["decode_tokens_per_s_per_user"][i, j, k, :len(concs)],
                            cols["prefill_s"][i, j, k, :len(concs)]).tolist(),
                            fits[i, j, k, :len(concs)].tolist(), strict=True) if fit]
                        rung = (i, j, k, at[3] + precisions)
                        cols["budget_bytes"][rung] = float(gpu.memory_bytes)
                        concurrency[i, :, :, rung[3]], fast = _floor_plan(
                            model, by_conc[-1], precision, layout, gpu, spec, (prompt, output), floor,
                            (int(concurrency[at]), most), ladder)
                        if fast is not None:
                            _put(cols, fits, rung, fast, spec, prompt, output)
    if several:
        _scaled_columns(model, asked, cols, fits, concurrency, several)
    out: dict[str, Array] = dict(cols)
    out["fits"] = fits
    out["concurrency"] = concurrency
    out["train_tokens_per_s"] = np.full(grid, np.nan)
    out["train_time_s"] = np.full(grid, np.nan)
    return out


def _put(cols: dict[str, Array], fits: Array, at: tuple[int, int, int, int], p: Plan, spec: SweepSpec, prompt: int,
         output: int) -> None:
    """Entry ``at`` of the columns from plan ``p``: its memory, and its speed where it fits."""
    from anchorgpu.planner.speed.estimate import plan_performance

    b = p.per_gpu
    cols["weights_bytes"][at], cols["kv_cache_bytes"][at] = b.weights_bytes, b.kv_cache_bytes
    cols["activations_bytes"][at], cols["other_bytes"][at] = b.activations_bytes, b.overhead_bytes
    cols["per_gpu_total_bytes"][at] = b.total_bytes
    cols["budget_bytes"][at] = p.budget_bytes if p.budget_bytes is not None else np.nan
    cols["engine_reserve_bytes"][at] = p.breakdown.get("sglang_reserve_bytes", np.nan)
    fits[at] = bool(p.fits)
    if p.fits:
        perf = plan_performance(p, prompt_tokens=prompt, output_tokens=output, mfu=spec.efficiencies.mfu,
                                mbu=spec.efficiencies.mbu)
        cols["prefill_s"][at] = perf["ttft_s"]
        cols["decode_tokens_per_s_per_user"][at] = perf["decode_tokens_per_s_per_user"]
        cols["decode_tokens_per_s_total"][at] = perf["output_tokens_per_s"]


def _saturation_plan(model: ModelSpec, many: Workload, precision: PrecisionPlan, layout: Layout, gpu: GpuSpec,
                     spec: SweepSpec) -> tuple[int, Plan | None]:
    """The most sequences an attention-DP layout runs at once at ``precision`` (DP x a replica's, at most its
    engine's sequence cap, at least 2) as ``plan --concurrency N`` sizes them (``many``: the workload at the ladder's
    top), and the plan at that many (None where it cannot be planned): from a plan of one sequence a replica, the
    sequences its budget holds after everything else, one fewer a replica until the plan fits (the cache rounds up)."""
    from anchorgpu.planner.plan import plan

    def planned(sequences: int) -> Plan:
        return plan(model, replace(many, concurrency=sequences), precision=precision, layout=layout, gpu=gpu,
                    overheads=spec.overheads, suggest=False, choose_layout=False)

    dp = layout.dp or 1
    first = max(dp, 2)
    try:
        p = planned(first)
    except InvalidWorkload:
        return first, None
    each = -(-first // dp)
    per_sequence = p.per_gpu.kv_cache_bytes / each
    free = (p.budget_bytes or 0) - (p.per_gpu.total_bytes - p.per_gpu.kv_cache_bytes)
    cap = engine_limits(many, large_gpu=large_engine_defaults(gpu))[1]
    held = max(1, min(cap, int(free // per_sequence)) if per_sequence > 0 else cap)
    while max(held * dp, 2) != first:
        try:
            at_held = planned(held * dp)
        except InvalidWorkload:
            return held * dp, None
        if at_held.fits:
            return held * dp, at_held
        held -= 1
    return first, p


def _floor_plan(model: ModelSpec, many: Workload, precision: PrecisionPlan, layout: Layout, gpu: GpuSpec,
                spec: SweepSpec, request: tuple[int, int], limits: UserLimits,
                saturation: tuple[int, Plan | None], ladder: list[tuple[int, bool]]) -> tuple[int, Plan | None]:
    """The most sequences an attention-DP layout runs at once at ``precision`` (DP x a replica's, at least 2) while
    every user sees ``limits`` met (a decode speed floor, a TTFT limit), within its ``saturation`` (its concurrency
    and plan), as ``plan --concurrency N`` gives it, and that plan (None where no such rung above the ladder's was
    found). A bisection over the sequences a replica runs, one plan each: from the ladder's largest rung that fits
    and meets them (``ladder``: each rung that fits and whether it meets them) to the next rung above it, or the
    saturation; a plan that does not fit counts as too slow."""
    from anchorgpu.planner.plan import plan
    from anchorgpu.planner.speed.estimate import plan_performance

    dp = layout.dp or 1
    prompt, output = request

    def meets(p: Plan) -> bool:
        if not p.fits:
            return False
        perf = plan_performance(p, prompt_tokens=prompt, output_tokens=output, mfu=spec.efficiencies.mfu,
                                mbu=spec.efficiencies.mbu)
        return bool(limits.met(np.array(perf["decode_tokens_per_s_per_user"], dtype=np.float64),
                               np.array(perf["ttft_s"], dtype=np.float64)))

    def fast(sequences: int) -> Plan | None:  # the plan at that many per replica where it fits and meets the floor
        try:
            p = plan(model, replace(many, concurrency=max(dp * sequences, 2)), precision=precision, layout=layout,
                     gpu=gpu, overheads=spec.overheads, suggest=False, choose_layout=False)
        except InvalidWorkload:
            return None
        return p if meets(p) else None

    most_sequences, most = saturation
    if most is not None and meets(most):
        return most_sequences, most
    top = max(most_sequences // dp, 1)
    met = [c for c, meets_them in ladder if meets_them and c <= most_sequences]
    lo = max(max(met, default=dp) // dp, 1)
    above = [c for c, _ in ladder if c > dp * lo]
    hi = min(top, -(-min(above) // dp)) if above else top
    best = fast(lo)
    if best is None:
        return max(dp * lo, 2), None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        at_mid = fast(mid)
        lo, hi, best = (mid, hi, at_mid) if at_mid is not None else (lo, mid, best)
    return max(dp * lo, 2), best


def _scaled_columns(model: ModelSpec, asked: Workload, cols: dict[str, Array], fits: Array, concurrency: Array,
                    several: list[tuple[int, int, int]]) -> None:
    """The entries of each row of ``several`` (row, its one-server row, servers: a one-server attention-DP engine on
    each of that many servers) over a concurrency ladder: at ``servers`` times each concurrency swept, each engine
    serving what its one-server row serves at that concurrency. ``plan`` gives such a layout the same per-GPU memory
    (each replica holds as many sequences, ``ceil(servers * c / (servers * r)) = ceil(c / r)``, and every per-GPU
    term reads TP, EP and whether there are replicas, not how many) and the same step (the replicas of an EP group
    step together over the EP group's link, the queue past saturation counted per replica), so its figures are the
    one-server row's, the users' total ``servers`` times (``tests/recommend/test_attention_dp_servers.py`` holds
    them to ``plan``). An entry whose concurrency ``plan`` sizes at another context (one sequence alone at the
    model's window, ``servers`` of them at the request) is left out: not planned, never fitting, never the closest
    miss (the one-server row's own entry stands for it)."""
    from anchorgpu.planner.serving_request import asked_context

    sized: dict[int, int] = {}

    def tokens(c: int) -> int:  # the context plan sizes a sequence at when c run at once
        if c not in sized:
            sized[c] = asked_context(model, replace(asked, concurrency=c), [])
        return sized[c]

    at, one, servers = (np.array(column, dtype=np.int64) for column in zip(*several, strict=True))
    n = servers[:, None, None, None]
    # each entry's concurrency, its one-server row's (the ladder's, or that row's own saturation)
    same = {(m, c): tokens(m * c) == tokens(c) for m in set(servers.tolist())
            for c in set(concurrency[one].ravel().tolist())}
    kept = np.vectorize(lambda m, c: same[(m, c)], otypes=[bool])(n, concurrency[one])  # (R, W, K, C)
    concurrency[at] = n * concurrency[one]
    for name in _FLOAT_COLUMNS:
        cols[name][at] = np.where(kept, cols[name][one], np.nan)
    cols["decode_tokens_per_s_total"][at] *= n
    cols["per_gpu_total_bytes"][at] = np.where(kept, cols["per_gpu_total_bytes"][at], np.inf)
    cols["budget_bytes"][at] = cols["budget_bytes"][one]
    fits[at] = fits[one] & kept


def with_attention_dp(model: ModelSpec, shapes: Sequence[HardwareShape], spec: SweepSpec, lay: Layouts,
                      cols: dict[str, Array], weights: tuple[str, ...], kvs: tuple[str, ...], concs: tuple[int, ...],
                      asked: Workload, contexts: tuple[int, ...], prompt: int, output: int, *,
                      saturated: bool = False, limits: UserLimits | None = None
                      ) -> tuple[Layouts, dict[str, Array]]:
    """The sweep's layouts and serving columns with the attention-DP layouts appended (the columns each widened to
    the whole grid for it), or both unchanged where there are none (a dense model). Over a concurrency ladder (no
    concurrency named) a layout of several servers runs that many times each concurrency swept
    (:func:`_scaled_columns`); at the concurrencies named it is planned whole at each, as the others are."""
    rows = attention_dp_rows(model, shapes, spec.workload.engine)
    if not rows:
        return lay, cols
    layouts = type(lay)
    adp = layouts(*(np.array(column, dtype=np.int64) for column in zip(*rows, strict=True)))
    scaled = not spec.concurrencies and spec.workload.concurrency is None
    extra = attention_dp_columns(model, shapes, spec, adp, weights, kvs, concs, asked, contexts, prompt, output,
                                 scaled, saturated and scaled, limits)
    full = (len(lay), *extra["fits"].shape[1:])
    joined = {name: np.concatenate((np.broadcast_to(values.reshape((1,) * (4 - values.ndim) + values.shape), full),
                                    extra[name])) for name, values in cols.items()}
    return layouts(*(np.concatenate((getattr(lay, f.name), getattr(adp, f.name))) for f in fields(lay))), joined
