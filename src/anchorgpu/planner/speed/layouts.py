"""Layouts chosen for the user: the fastest training layout that fits, the cheapest serving layout. Pure.

Training: every combination of tensor parallelism inside one server, context parallelism (long sequences
only), pipeline stages, data parallelism, ZeRO stage (1: distributed optimizer; 3: FSDP), interleaved
chunks, activation recompute and micro-batch is ranked by the predicted step time of
:func:`~anchorgpu.planner.speed.training.training_step`; the memory planner then checks them fastest first
and the first that fits is the answer. Whatever the user fixed is kept.

Serving: without a GPU count, the fewest GPUs that hold the requested concurrency, and on them, of the layouts that
hold it (replicas of a TP split inside a server, pipeline stages across servers, and for a mixture of experts
attention data parallelism with EP over a server), the planner's first unless another serves those users clearly
faster; with a GPU count, the same on that many GPUs, the planner's default (TP across one server) first.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import (
    Layout,
    Overheads,
    PrecisionPlan,
    Recompute,
    Workload,
    default_seq_tokens,
    engine_limits,
    large_engine_defaults,
    recompute_ladder,
    train_cp_sizes,
    train_ep_sizes,
)
from anchorgpu.planner.pipeline_layout import parse_pipeline_layout
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.flops import TrainKind
from anchorgpu.planner.speed.links import compute_precision_for_training
from anchorgpu.planner.speed.training import DEFAULT_GLOBAL_BATCH_TOKENS, TrainLayout, training_step
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["Choice", "attention_dp_tp_sizes", "choose_serving_layout", "choose_serving_layout_on",
           "choose_training_layout"]

SERVER_GPUS = 8
MICRO_BATCHES: tuple[int, ...] = (1, 2, 4)


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """The chosen inputs and the sentence that says why."""

    layout: Layout
    workload: Workload
    reason: str


def _tp_ok(model: ModelSpec, tp: int) -> bool:
    if model.num_attention_heads % tp:
        return False
    return model.mla is not None or model.num_kv_heads % tp == 0 or tp % model.num_kv_heads == 0


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _candidates(model: ModelSpec, w: Workload, given: Layout, gpus: int, seq: int, batch: int
                ) -> list[tuple[TrainLayout, int, Recompute]]:
    # any explicit layout flag keeps the rest of the split as before (TP, PP, CP 1; DP the rest)
    explicit = any(x is not None for x in (given.tp, given.pp, given.dp, given.cp, given.zero)) or given.fsdp
    tps = [given.tp or 1] if explicit or given.tp else [
        t for t in (1, 2, 4, 8) if t <= min(gpus, SERVER_GPUS) and _tp_ok(model, t)]
    cps = [given.cp or 1] if explicit or given.cp else list(train_cp_sizes(seq))
    fixed_zero = 3 if given.fsdp else given.zero
    moe = model.moe
    # a mixture of experts: expert parallelism too, over GPUs of one stage (tp x dp) that divide the experts
    eps = [given.ep or 1] if explicit or given.ep or moe is None else list(train_ep_sizes(moe.num_experts))
    out: list[tuple[TrainLayout, int, Recompute]] = []
    mbs = [w.micro_batch] if w.micro_batch else list(MICRO_BATCHES)
    rcs: list[Recompute] = [w.recompute] if w.recompute else list(recompute_ladder(moe is not None))
    if w.offload_activation_layers:  # Megatron-Core offloads activations with one stage and no recompute only
        rcs = ["none"]
    for tp in tps:
        for cp in cps:
            if gpus % (tp * cp):
                continue
            rest = gpus // (tp * cp)
            pps = [given.pp or 1] if explicit or given.pp or w.offload_activation_layers else [
                p for p in _divisors(rest, 64) if p <= model.num_layers and (p == 1 or p & (p - 1) == 0)]
            for pp in pps:
                if rest % pp:
                    continue
                dp = rest // pp
                if given.dp and given.dp != dp:
                    continue
                zeros = [fixed_zero] if fixed_zero is not None else ([1, 3] if dp * cp > 1 else [0])
                per_stage = model.num_layers // pp if model.num_layers % pp == 0 else 0
                # more chunks only shrink the bubble (their transfers overlap): the most that divide, or none
                deepest = max((v for v in (2, 4, 5, 8, 10) if pp > 1 and per_stage and per_stage % v == 0), default=1)
                vs = [given.virtual_stages] if given.virtual_stages else sorted({1, deepest})
                stated = None
                if given.pipeline_layout is not None:  # the user's layout fixes the chunks; plan() refuses a bad one
                    try:
                        stated = parse_pipeline_layout(given.pipeline_layout, pp=pp, virtual_stages=given.virtual_stages,
                                                       num_layers=model.num_layers, model_name=model.name)
                    except InvalidWorkload:
                        continue
                    vs = [stated.virtual_stages]
                for zero in zeros:
                    if zero == 3 and pp > 1:
                        continue  # FSDP with pipelining is rare and not what an engineer reaches for first
                    for v in vs:
                        if v > 1 and pp == 1:
                            continue
                        for mb in mbs:
                            if dp * mb * seq > batch:
                                continue
                            for ep in eps:
                                if (tp * cp * dp) % ep:  # EP folds over a stage's TP, CP, DP
                                    continue
                                for rc in rcs:
                                    out.append((TrainLayout(gpus=gpus, tp=tp, pp=pp, cp=cp, dp=dp, ep=ep, zero=zero,
                                                            virtual_stages=v, tp_overlap=given.tp_overlap,
                                                            ep_overlap=given.ep_overlap,
                                                            offload=given.offload or "none",
                                                            pipeline_layout=stated), mb, rc))
    return out


def choose_training_layout(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                           overheads: Overheads) -> tuple[Choice, Plan] | None:
    """The fastest layout that fits ``gpu`` (and the plan of it), or ``None`` when none does."""
    from anchorgpu.planner.plan import plan

    gpus = given.gpus or 1
    seq = default_seq_tokens(w, model.max_context_tokens)
    batch = w.global_batch_tokens or DEFAULT_GLOBAL_BATCH_TOKENS
    cal = calibration()
    kind: TrainKind = "full" if w.task == "train" else "lora"
    prec = compute_precision_for_training(w.train_precision)
    candidates = _candidates(model, w, given, gpus, seq, max(batch, 1))

    def speed(lay: TrainLayout, mb: int, rc: Recompute) -> float:
        return training_step(model, gpu, lay, seq_tokens=seq, micro_batch=mb,
                             global_batch_tokens=max(batch, lay.dp * mb * seq), recompute=rc, kind=kind,
                             precision=prec, cal=cal, train_stack=w.train_stack,
                             offload_activation_layers=w.offload_activation_layers).tokens_per_s

    for _, _, lay, mb, rc in _fastest_first(candidates, speed):
        layout = Layout(gpus=gpus, tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep if lay.ep > 1 else given.ep, cp=lay.cp,
                        virtual_stages=lay.virtual_stages, zero=lay.zero, fsdp=given.fsdp, offload=given.offload,
                        tp_overlap=lay.tp_overlap, ep_overlap=lay.ep_overlap, pipeline_layout=given.pipeline_layout)
        work = replace(w, micro_batch=mb, recompute=rc, seq_tokens=seq)
        try:
            p = plan(model, work, precision=precision, layout=layout, gpu=gpu, overheads=overheads, suggest=False)
        except InvalidWorkload:
            continue
        if p.fits:
            parts = [f"TP {lay.tp}", f"PP {lay.pp}" + (f" (v {lay.virtual_stages})" if lay.virtual_stages > 1 else ""),
                     f"CP {lay.cp}", f"DP {lay.dp}", *([f"EP {lay.ep}"] if model.moe is not None else []),
                     {0: "no sharding", 1: "ZeRO-1 (distributed optimizer)", 2: "ZeRO-2", 3: "FSDP / ZeRO-3"}[lay.zero],
                     f"recompute {rc}", f"micro-batch {mb}"]
            fixed = [name for name, value in (("tp", given.tp), ("pp", given.pp), ("dp", given.dp), ("cp", given.cp),
                                              ("ep", given.ep),
                                              ("zero", given.zero if not given.fsdp else 3),
                                              ("virtual-stages", given.virtual_stages),
                                              ("pipeline-layout", given.pipeline_layout), ("micro-batch", w.micro_batch),
                                              ("recompute", w.recompute)) if value is not None]
            reason = (f"Layout chosen: {', '.join(parts)} - the fastest of {len(candidates)} candidates that fits "
                      f"{gpu.name}" + (f" (kept as given: {', '.join('--' + f for f in fixed)})" if fixed else "")
                      + "; tensor parallelism stays inside one server.")
            return Choice(layout=layout, workload=work, reason=reason), p
    return None


def _fastest_first(candidates: list[tuple[TrainLayout, int, Recompute]],
                   speed: Callable[[TrainLayout, int, Recompute], float],
                   ) -> Iterator[tuple[float, int, TrainLayout, int, Recompute]]:
    """The candidates that can be timed, fastest first (ties in candidate order), timing as few as that order needs.

    A layout and micro-batch run fastest without recompute (each level only adds work), so that time bounds all of
    its levels: every layout is timed at its first level first, and its other levels only when that bound reaches
    the front - the order of timing them all and sorting, for a fraction of the timing (a search keeps to the few
    fastest layouts, and plans them in this order until one fits). The one exception: a recompute's extra compute
    also hides a little more of the gradient sync, so a level can beat its own bound by that little; it is still
    found, and only loses a tie closer than that to another layout.
    """
    groups: dict[tuple[TrainLayout, int], list[tuple[int, Recompute]]] = {}
    for i, (lay, mb, rc) in enumerate(candidates):
        groups.setdefault((lay, mb), []).append((i, rc))
    heap: list[tuple[float, int, int, tuple[TrainLayout, int]]] = []
    for key, levels in groups.items():
        first, rc = levels[0]
        try:
            bound = speed(key[0], key[1], rc) if rc == "none" else math.inf
        except InvalidWorkload:
            continue  # a layout refused at one level is refused at all (the checks do not read the recompute)
        heapq.heappush(heap, (-bound, first, 0, key))
    while heap:
        neg, i, exact, key = heapq.heappop(heap)
        lay, mb = key
        if exact:
            rc = next(level for index, level in groups[key] if index == i)
            yield -neg, i, lay, mb, rc
            continue
        for index, rc in groups[key]:  # the bound reached the front: time every level of this layout
            try:
                value = -neg if rc == "none" and not math.isinf(neg) else speed(lay, mb, rc)
            except InvalidWorkload:
                continue
            heapq.heappush(heap, (-value, index, 1, key))


SERVING_GPU_COUNTS = (1, 2, 4, *range(8, 1025, 8))
"""The GPU counts the serving chooser tries, fewest first: 1, 2 or 4, then whole 8-GPU servers up to 128 of them."""


def _serving_layouts(model: ModelSpec, gpus: int, engine: str = "vllm") -> Iterator[Layout]:
    """The serving layouts of ``gpus`` GPUs in the chooser's order: replicas (DP) of the smallest split first, the
    split TP inside one server, then PP across servers; then, for a mixture of experts, attention data parallelism:
    ``gpus / tp`` replicas of the attention and dense layers (TP 1 first) with every GPU's share of the routed
    experts, EP over all the GPUs of one server (vLLM's ``--data-parallel-size --enable-expert-parallel`` makes EP that wide;
    TensorRT-LLM's ``enable_attention_dp``, SGLang's ``--enable-dp-attention``). Each replica keeps only its own
    sequences' KV cache, which matters most where a TP split cannot divide it (MLA's one latent per token, or fewer
    KV heads than GPUs), at the cost of the all-gathers of every MoE layer."""
    for unit in (1, 2, 4, 8, 16, 32, 64):  # GPUs one replica spans
        if unit > gpus or gpus % unit:
            continue
        tp = min(unit, SERVER_GPUS)
        while tp > 1 and not _tp_ok(model, tp):
            tp //= 2
        pp = unit // tp
        if pp > model.num_layers or tp * pp != unit:
            continue
        yield Layout(gpus=gpus, tp=tp, pp=pp, dp=gpus // unit)
    for tp in attention_dp_tp_sizes(model, gpus, engine):
        yield Layout(gpus=gpus, tp=tp, pp=1, dp=gpus // tp, ep=gpus)


def attention_dp_tp_sizes(model: ModelSpec, gpus: int, engine: str) -> tuple[int, ...]:
    """The TP sizes of the attention replicas ``gpus`` GPUs can serve a mixture of experts with under attention data
    parallelism, the experts split over all of them (EP ``gpus``), smallest first; none for a dense model. Within one
    server only: EP over the network is timed (the speed model's EP link) but no measured run checks it, and the
    launch recipes write one server's command. TensorRT-LLM runs TP 1 only (``Mapping``: the attention's TP size is
    1 when ``enable_attention_dp``), vLLM and SGLang also 2 or 4 (SGLang's ``--tp-size`` over ``--dp-size`` GPUs an
    attention group; vLLM's ``--tensor-parallel-size`` per DP rank). The chooser and the catalog sweep both use it.

    >>> from anchorgpu.architectures import load_model
    >>> attention_dp_tp_sizes(load_model("deepseek-r1"), 8, "vllm"), attention_dp_tp_sizes(load_model("deepseek-r1"), 8, "trtllm")
    ((1, 2, 4), (1,))
    """
    moe = model.moe
    if moe is None or gpus < 2 or gpus > SERVER_GPUS or moe.num_experts % gpus:
        return ()
    return tuple(tp for tp in ((1,) if engine == "trtllm" else (1, 2, 4, 8))
                 if tp < gpus and gpus % tp == 0 and _tp_ok(model, tp))


def _split(layout: Layout) -> str:
    """``TP 1, PP 1, DP 8`` or, under attention data parallelism, ``TP 1, DP 8, EP 8``."""
    tp, pp, dp, ep = layout.tp or 1, layout.pp or 1, layout.dp or 1, layout.ep or 1
    if ep > tp:
        return f"TP {tp}, DP {dp}, EP {ep}"
    return f"TP {tp}, PP {pp}" + (f", DP {dp}" if dp > 1 else "")


def _split_words(layout: Layout) -> str:
    """:func:`_split` and what its parts are: ``TP 1, PP 1, DP 8: 8 replicas`` or, under attention data
    parallelism, what each part holds."""
    dp, ep = layout.dp or 1, layout.ep or 1
    if ep > (layout.tp or 1):
        return (f"{_split(layout)}: attention data parallelism, {dp} replicas of the attention and dense layers, each "
                f"with its own sequences' KV cache, the routed experts split over all {ep} GPUs")
    return _split(layout) + (f": {dp} replicas" if dp > 1 else "")


def _holds(model: ModelSpec, w: Workload, precision: PrecisionPlan, layout: Layout, gpu: GpuSpec,
           overheads: Overheads, want: int, cap: int) -> tuple[Plan | None, float]:
    """(the plan of ``layout`` when it holds ``want`` sequences, no more a replica than ``cap``, else None; its
    headroom, -inf where it could not be planned)."""
    from anchorgpu.planner.plan import plan

    if math.ceil(want / (layout.dp or 1)) > cap:  # more a replica than its engine runs at once
        return None, -math.inf
    try:
        p = plan(model, w, precision=precision, layout=layout, gpu=gpu, overheads=overheads, suggest=False,
                 choose_layout=False)
    except InvalidWorkload:
        return None, -math.inf
    headroom = float(p.headroom_bytes if p.headroom_bytes is not None else -math.inf)
    return (p if p.fits and (p.max_concurrency or 0) >= want else None), headroom


def _serving_speed(p: Plan) -> tuple[float, float]:
    """Output tokens/s of a serving plan at its requested concurrency (the calibrated prediction) and the low end of
    its band."""
    from anchorgpu.planner.speed.estimate import plan_performance

    perf = plan_performance(p)
    return float(perf.get("output_tokens_per_s") or 0.0), float(perf.get("output_tokens_per_s_low") or 0.0)


def _fastest(held: list[tuple[Layout, Plan]]) -> tuple[int, list[float]]:
    """Of the layouts that hold the users, in the planner's order (the default or replicas of the smallest split
    first), the first unless another serves them clearly faster: the fastest one (output tokens/s at their
    concurrency, the same as the shortest time per output token for them) when even the low end of its band is above
    the first's prediction. A difference inside the band is not one the calibration resolves, and the usual layout
    is kept (gpt-oss-120b for one user on 8 H100s: 8 replicas predicted 1% faster than TP 8 stay TP 8). Answers
    the index picked and every layout's predicted output tokens/s."""
    speeds = [_serving_speed(p) for _, p in held]
    best = max(range(len(held)), key=lambda i: (speeds[i][0], -i))
    return (best if speeds[best][1] > speeds[0][0] else 0), [pred for pred, _ in speeds]


def _held(model: ModelSpec, w: Workload, precision: PrecisionPlan, gpus: int, gpu: GpuSpec, overheads: Overheads,
          want: int, cap: int, skip: Layout | None = None) -> tuple[list[tuple[Layout, Plan]], Layout | None]:
    """The layouts of :func:`_serving_layouts` on ``gpus`` GPUs that hold ``want`` sequences, each with its plan, in
    order (``skip``'s split left out: the default, planned already), and the closest miss (most headroom)."""
    held: list[tuple[Layout, Plan]] = []
    closest: tuple[float, Layout] | None = None
    for layout in _serving_layouts(model, gpus, w.engine):
        if skip is not None and (layout.tp, layout.pp, layout.dp, layout.ep or 1) == (skip.tp, skip.pp, skip.dp,
                                                                                     skip.ep or 1):
            continue
        p, headroom = _holds(model, w, precision, layout, gpu, overheads, want, cap)
        if p is not None:
            held.append((layout, p))
        elif closest is None or headroom > closest[0]:
            closest = (headroom, layout)
    return held, (closest[1] if closest is not None else None)


def _which(held: list[tuple[Layout, Plan]], pick: int, speed: float, users: str | None) -> str:
    """What the chosen layout is among those that hold the users (``users``: how many, else "that do")."""
    if len(held) == 1:
        return f"the only layout on them that holds {users}"
    which = "the planner's first, none of the others clearly faster" if pick == 0 else "the clearly fastest"
    return (f"of the {len(held)} layouts on them that {'do' if users is None else 'hold ' + users}, {which} "
            f"({speed:,.0f} output tok/s)")


def _users(want: int) -> str:
    return f"{want:,} sequence{'s' if want > 1 else ''}"


def choose_serving_layout(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                          overheads: Overheads) -> tuple[Choice, Plan] | None:
    """The fewest GPUs that hold the requested concurrency; on that many, of the layouts that hold it
    (:func:`_serving_layouts`: replicas of a TP split inside one server, PP across servers, and for a mixture of
    experts attention data parallelism with EP over a server), the first in that order unless another serves the
    users clearly faster (:func:`_fastest`). A replica holds its share when its memory does and its engine runs that
    many at once (vLLM's ``max_num_seqs``, 1,024 by default on large GPUs): past the cap the rest would wait in the
    engine's queue."""
    want = w.concurrency or 1
    cap = engine_limits(w, large_gpu=large_engine_defaults(gpu))[1]  # sequences one replica's engine runs at once
    fewer: Layout | None = None  # the closest miss of the last GPU count (most headroom), for the hint
    for gpus in SERVING_GPU_COUNTS:
        held, closest = _held(model, w, precision, gpus, gpu, overheads, want, cap)
        if held:
            pick, speeds = _fastest(held)
            layout, p = held[pick]
            reason = (f"Layout chosen: {gpus} GPU{'s' if gpus > 1 else ''} ({_split_words(layout)}) - the fewest "
                      f"{gpu.name} that hold {_users(want)}"
                      + (f" (at most {cap:,} a replica, the engine's max_num_seqs)" if want > cap else "")
                      + ("" if len(held) == 1 else "; " + _which(held, pick, speeds[pick], None))
                      + "; pass --gpus to choose" + _fewer_gpus_with(model, w, precision, fewer, gpu, overheads))
            return Choice(layout=layout, workload=w, reason=reason), p
        fewer = closest or fewer
    return None


def choose_serving_layout_on(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                             overheads: Overheads) -> tuple[Choice | None, Plan] | None:
    """On the ``given.gpus`` GPUs asked (no TP, PP or DP given): of the layouts on them that hold the requested
    concurrency (the planner's default, TP across one server and the rest replicas, then :func:`_serving_layouts`),
    the first unless another serves the users clearly faster (:func:`_fastest`): ``(None, its plan)`` when that is
    the default, else with the sentence that says why; None when none holds them (the plan then shows the default
    and what would fit)."""
    from anchorgpu.planner.plan import plan

    gpus = given.gpus or 1
    want = w.concurrency or 1
    try:
        default = plan(model, w, precision=precision, layout=given, gpu=gpu, overheads=overheads, suggest=False,
                       choose_layout=False)
    except InvalidWorkload:
        return None
    if gpus == 1:
        return (None, default) if default.fits else None
    cap = engine_limits(w, large_gpu=large_engine_defaults(gpu))[1]
    lay = default.layout
    others, _ = _held(model, w, precision, gpus, gpu, overheads, want, cap, skip=Layout(tp=lay.tp, pp=lay.pp,
                                                                                           dp=lay.dp, ep=lay.ep))
    held = [(given, default), *others] if default.fits else others
    if not held:
        return None
    pick, speeds = _fastest(held)
    layout, p = held[pick]
    if p is default:
        return None, default
    why = (f"the default, TP {lay.tp}" + (f" with {lay.dp} replicas" if lay.dp > 1 else "")
           + (f", serves them at {speeds[0]:,.0f}" if default.fits else
              f", does not hold them (it needs {fmt_bytes(default.per_gpu.total_bytes)} a GPU)"))
    reason = (f"Layout chosen on the {gpus} GPUs asked: {_split_words(layout)} - "
              f"{_which(held, pick, speeds[pick], _users(want))}; {why}; pass --tp, --pp and --dp to choose")
    return Choice(layout=layout, workload=w, reason=reason), p


def _fewer_gpus_with(model: ModelSpec, w: Workload, precision: PrecisionPlan, fewer: Layout | None, gpu: GpuSpec,
                    overheads: Overheads) -> str:
    """``; {n} (TP t, PP p) would hold them with CHANGE or CHANGE`` when the candidate below the chosen one does with
    a change that keeps its GPUs (what its plan's "What would fit" offers: a tighter engine budget, a smaller weight
    or KV-cache format, a shorter context), else empty."""
    from anchorgpu.planner.plan import plan

    if fewer is None:
        return ""
    try:
        p = plan(model, w, precision=precision, layout=fewer, gpu=gpu, overheads=overheads, suggest=True)
    except InvalidWorkload:
        return ""
    same = [s.change for s in p.suggestions if s.gpus == fewer.gpus]
    if not same:
        return ""
    return f"; {fewer.gpus} ({_split(fewer)}) would hold them with {' or '.join(same)}"
