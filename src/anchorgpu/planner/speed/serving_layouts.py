"""The serving layout chosen for the user: without a GPU count, the fewest GPUs that hold the requested concurrency,
and on them, of the layouts that hold it (replicas of a TP split inside a server, pipeline stages across servers, and
for a mixture of experts attention data parallelism with EP over a server, on more servers one such engine on
each), the fastest, but the planner's first unless another is predicted faster by more than the calibration's margin
between layouts; with a GPU count, the same on that many GPUs, the planner's default (TP across one server) first.
On servers whose GPUs share NVLink or xGMI, pipeline stages are ranked only where no layout of TP alone holds
the users (:mod:`~anchorgpu.planner.speed.serving_stages`: TP inside a server, PP across servers).
Split from :mod:`~anchorgpu.planner.speed.layouts` (the training chooser); the ranking of the layouts that hold
the users, and its words, are :mod:`~anchorgpu.planner.speed.serving_ranking`. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.engine_limits import engine_limits_on
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.speed.layouts import SERVER_GPUS, Choice, tp_ok
from anchorgpu.planner.speed.serving_ranking import fastest, holds, split_label, split_words, users_words, which
from anchorgpu.planner.speed.serving_stages import STAGES_RULE, stages_on_scale_up, without_stages_on_scale_up
from anchorgpu.units import fmt_bytes

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["SERVING_GPU_COUNTS", "attention_dp_tp_sizes", "choose_serving_layout", "choose_serving_layout_on",
           "ep_inside_tp_sizes"]

SERVING_GPU_COUNTS = (1, 2, 4, *range(8, 1025, 8))
"""The GPU counts the serving chooser tries, fewest first: 1, 2 or 4, then whole 8-GPU servers up to 128 of them."""


def _serving_layouts(model: ModelSpec, gpus: int, engine: str = "vllm") -> Iterator[Layout]:
    """The serving layouts of ``gpus`` GPUs in the chooser's order: replicas (DP) of the smallest split first, the
    split TP inside one server, then PP across servers; then, for a mixture of experts, attention data parallelism:
    ``gpus / tp`` replicas of the attention and dense layers (TP 1 first) with every GPU's share of the routed
    experts, EP over all the GPUs of one server (vLLM's ``--data-parallel-size --enable-expert-parallel`` makes EP that wide;
    TensorRT-LLM's ``enable_attention_dp``, SGLang's ``--enable-dp-attention``), and over several whole servers the
    same one-server engine on each (EP one server's GPUs, ``gpus / 8`` independent engines, the users split between
    them). Each replica keeps only its own sequences' KV cache, which matters most where a TP split cannot divide it
    (MLA's one latent per token, or fewer KV heads than GPUs), at the cost of the all-gathers of every MoE layer.
    Then, for a mixture of experts, each replica's TP group with the routed experts split whole over it instead of
    sliced (EP inside TP, :func:`ep_inside_tp_sizes`: ``--tp 8 --ep 8``), the attention still TP. Last, each
    replica's narrower TP splits with more pipeline stages (TP 2 x PP 4 of an 8-GPU replica), which recommend's sweep
    times too: Llama 3.1 70B for 800 users on 8 H100 is predicted 1.49x faster as TP 2 x PP 4 than as TP 8 (on
    NVLink/xGMI servers the chooser ranks stages only where TP alone holds nothing:
    :mod:`~anchorgpu.planner.speed.serving_stages`)."""
    # GPUs one replica spans: powers of two, then the other divisors of a count such as 3, 6 or 24 (a replica of 3
    # pipeline stages is what 3 GPUs hold a 70B with, where TP 3 divides no head count and 3 replicas hold nothing)
    odd = [unit for unit in range(3, min(gpus, 64) + 1) if gpus % unit == 0 and unit & (unit - 1)]
    narrower: list[Layout] = []  # the other TP x PP splits of each replica, tried after the usual ones
    for unit in (1, 2, 4, 8, 16, 32, 64, *odd):
        if unit > gpus or gpus % unit:
            continue
        # the widest TP inside one server that divides the replica and the model's heads; the rest pipeline stages
        # (each narrower TP the heads allow, with more stages, is tried after every other layout, as recommend's
        # sweep also times them: at many users fewer all-reduces a token can outrun the wider split)
        splits = [t for t in range(min(unit, SERVER_GPUS), 0, -1) if unit % t == 0 and (t == 1 or tp_ok(model, t))
                  and unit // t <= model.num_layers]
        if not splits:
            continue
        yield Layout(gpus=gpus, tp=splits[0], pp=unit // splits[0], dp=gpus // unit)
        narrower += [Layout(gpus=gpus, tp=t, pp=unit // t, dp=gpus // unit) for t in splits[1:]]
    for tp in attention_dp_tp_sizes(model, gpus, engine):
        yield Layout(gpus=gpus, tp=tp, pp=1, dp=gpus // tp, ep=gpus)
    if gpus > SERVER_GPUS and gpus % SERVER_GPUS == 0:  # one server's attention-DP engine on each server
        for tp in attention_dp_tp_sizes(model, SERVER_GPUS, engine):
            yield Layout(gpus=gpus, tp=tp, pp=1, dp=gpus // tp, ep=SERVER_GPUS)
    for tp in ep_inside_tp_sizes(model, gpus):  # the experts whole over each replica's TP group
        yield Layout(gpus=gpus, tp=tp, pp=1, dp=gpus // tp, ep=tp)
    yield from narrower  # last: the usual layouts stay the first that holds the users


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
                 if tp < gpus and gpus % tp == 0 and tp_ok(model, tp))


def ep_inside_tp_sizes(model: ModelSpec, gpus: int) -> tuple[int, ...]:
    """The TP sizes whose replicas (``gpus / tp`` of them) the serving chooser and the catalog sweep also try with a
    mixture of experts' routed experts split whole over the replica's TP group (EP = TP: each GPU holds ``1 / tp``
    of the experts and runs ``1 / tp`` of a token's routed rows, :func:`~anchorgpu.planner.speed.step_constants.routed_rows_per_token_share`),
    the attention and dense layers split by TP as usual, smallest first; none for a dense model. One pipeline stage
    inside one server, where the experts divide evenly. Every engine planned runs it: vLLM's
    ``--tensor-parallel-size T --enable-expert-parallel`` (EP = TP x DP, so one engine a replica:
    vllm-project/vllm vllm/model_executor/layers/fused_moe/config.py ``FusedMoEParallelConfig.make``, commit 00c1c6a),
    TensorRT-LLM's ``--tp_size T --ep_size T`` (``moe_tp_size x moe_ep_size = tp_size``: NVIDIA/TensorRT-LLM
    docs/source/advanced/expert-parallelism.md, commit a7e572f), SGLang's ``--tp-size T --ep-size T`` (its
    ``--ep-size``, recipes/data/sglang_flags.json from SGLang 0.5.23, splits the experts over the TP group's GPUs).

    >>> from anchorgpu.architectures import load_model
    >>> ep_inside_tp_sizes(load_model("qwen3-235b-a22b"), 8), ep_inside_tp_sizes(load_model("llama-3.1-8b"), 8)
    ((2, 4, 8), ())
    """
    moe = model.moe
    if moe is None:
        return ()
    return tuple(tp for tp in range(2, min(gpus, SERVER_GPUS) + 1)
                 if gpus % tp == 0 and moe.num_experts % tp == 0 and tp_ok(model, tp))


def _held(model: ModelSpec, w: Workload, precision: PrecisionPlan, gpus: int, gpu: GpuSpec, overheads: Overheads,
          want: int, cap: int, skip: Layout | None = None, ep: int | None = None, queue: bool = False
          ) -> tuple[list[tuple[Layout, Plan]], Layout | None]:
    """The layouts of :func:`_serving_layouts` on ``gpus`` GPUs that hold ``want`` sequences, each with its plan, in
    order (``skip``'s split left out: the default, planned already; with ``ep`` given, only those of that EP), and the
    closest miss (most headroom; None where every miss is past the engine's sequence cap or not plannable), of the
    misses the stages rule ranks (:func:`~anchorgpu.planner.speed.serving_stages.without_stages_on_scale_up`: on
    NVLink/xGMI servers a staged miss only where no miss is of TP alone), so the "would hold them with" hint never
    names a layout the chooser would leave out once the change is made."""
    held: list[tuple[Layout, Plan]] = []
    misses: list[tuple[Layout, float]] = []
    for layout in _serving_layouts(model, gpus, w.engine):
        if ep is not None and (layout.ep or 1) != ep:  # the user's --ep is kept, never swapped for another
            continue
        if skip is not None and (layout.tp, layout.pp, layout.dp, layout.ep or 1) == (skip.tp, skip.pp, skip.dp,
                                                                                     skip.ep or 1):
            continue
        p, headroom = holds(model, w, precision, layout, gpu, overheads, want, cap, queue)
        if p is not None:
            held.append((layout, p))
        elif headroom > -math.inf:
            # a miss with no headroom to name (more a replica than its engine runs, or unplannable) is no closest
            # miss: no memory change makes it hold them
            misses.append((layout, headroom))
    ranked = without_stages_on_scale_up(misses, gpu)[0]  # first of the most headroom, as before
    return held, (max(ranked, key=lambda miss: miss[1])[0] if ranked else None)


def choose_serving_layout(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                          overheads: Overheads) -> tuple[Choice, Plan] | None:
    """The fewest GPUs that hold the requested concurrency; on that many, of the layouts that hold it
    (:func:`_serving_layouts`: replicas of a TP split inside one server, PP across servers, and for a mixture of
    experts attention data parallelism with EP over a server), the fastest, but the first in that order unless
    another is predicted faster by more than the calibration's layout margin
    (:func:`~anchorgpu.planner.speed.serving_ranking.fastest`); pipeline stages on NVLink/xGMI servers only where
    no layout of TP alone holds the users (:mod:`~anchorgpu.planner.speed.serving_stages`). A replica holds its share when its memory does and its
    engine runs that many at once (vLLM's ``max_num_seqs``, 1,024 by default on large GPUs): past the cap the rest
    would wait in the engine's queue. An ``--ep`` given is kept: only layouts of
    that EP are tried (None where none holds the users, or the model cannot take it: the plan then refuses or shows
    what it needs)."""
    want = w.concurrency or 1
    # sequences one replica's engine runs at once
    cap = engine_limits_on(w, gpu)[1]
    fewer: Layout | None = None  # the closest miss of the last GPU count (most headroom), for the hint
    for gpus in SERVING_GPU_COUNTS:
        held, closest = _held(model, w, precision, gpus, gpu, overheads, want, cap, ep=given.ep)
        if held:
            held, staged = without_stages_on_scale_up(held, gpu)
            pick, speeds, classes = fastest(held, gpu)
            layout, p = held[pick]
            reason = (f"Layout chosen: {gpus:,} GPU{'s' if gpus > 1 else ''} ({split_words(layout)}) - the fewest "
                      f"{gpu.name} that hold {users_words(want)}" + (f" with --ep {given.ep} as given" if given.ep else "")
                      + (f" (at most {cap:,} a replica, the engine's max_num_seqs)" if want > cap else "")
                      + ("" if len(held) == 1 else "; " + which(held, pick, speeds, classes, None))
                      + stages_words(staged, layout, speeds[pick], gpu)
                      + "; pass --gpus to choose" + _counts_tried(gpus)
                      + _fewer_gpus_with(model, w, precision, fewer, gpu, overheads))
            return Choice(layout=layout, workload=w, reason=reason), p
        fewer = closest or fewer
    ep = given.ep or 1
    if ep > 1 and model.moe is not None and model.moe.num_experts % ep == 0:  # else resolve_layout says why not
        tried = (f"the chooser's EP layouts stay inside one {SERVER_GPUS}-GPU server" if ep > SERVER_GPUS else
                 f"attention data parallelism over {ep} GPUs or TP {ep} with the experts whole over it, on up to "
                 f"{SERVING_GPU_COUNTS[-1]:,} GPUs")
        raise InvalidWorkload(said("--ep {ep} without --gpus: no layout of {gpu_name} with EP {ep} holds {want} "
                                   "({tried}); give --gpus with --tp, --pp and --dp, or leave --ep out for the "
                                   "planner's choice", ep=ep, gpu_name=gpu.name, want=users_words(want), tried=tried))
    return None


def stages_words(left_out: list[tuple[Layout, Plan]], chosen: Layout, chosen_speed: float, gpu: GpuSpec) -> str:
    """``; TP 2, PP 2, DP 2, at 129 output tok/s, left out: RULE`` where the rule
    (:mod:`~anchorgpu.planner.speed.serving_stages`) left out a layout predicted faster than the one chosen (at
    ``chosen_speed``; the fastest of those left out named); ``; pipeline stages on NVLink/xGMI servers, as ...`` where the
    layout chosen has them as no layout of TP alone holds the users; else empty."""
    from anchorgpu.planner.speed.estimate import plan_performance

    if left_out:
        speeds = [float(plan_performance(p).get("output_tokens_per_s") or 0.0) for _, p in left_out]
        best = max(range(len(speeds)), key=lambda i: (speeds[i], -i))
        if speeds[best] <= chosen_speed:
            return ""
        return (f"; {split_label(left_out[best][0])}, predicted at {speeds[best]:,.0f} output tok/s, left out: "
                f"{STAGES_RULE}")
    if stages_on_scale_up(gpu, chosen.tp or 1, chosen.pp or 1):
        return f"; pipeline stages as no layout of TP alone holds them ({STAGES_RULE})"
    return ""


def _counts_tried(gpus: int) -> str:
    """Where the count chosen skipped others (3 below 4, 5 to 7 below 8, ...), which counts the chooser tries: "the
    fewest" is of those (:data:`SERVING_GPU_COUNTS`), and a count between them may hold the users too.

    >>> _counts_tried(2), _counts_tried(8)
    ('', ' (the counts tried: 1, 2 or 4 GPUs, then whole 8-GPU servers)')
    """
    return "" if gpus <= 2 else f" (the counts tried: 1, 2 or 4 GPUs, then whole {SERVER_GPUS}-GPU servers)"


def choose_serving_layout_on(model: ModelSpec, w: Workload, precision: PrecisionPlan, given: Layout, gpu: GpuSpec,
                             overheads: Overheads) -> tuple[Choice | None, Plan] | None:
    """On the ``given.gpus`` GPUs asked (no TP, PP or DP given): of the layouts on them that hold the requested
    concurrency (the planner's default, TP across one server and the rest replicas, then :func:`_serving_layouts`),
    the fastest, but the first unless another is predicted faster by more than the calibration's layout margin
    (:func:`~anchorgpu.planner.speed.serving_ranking.fastest`): ``(None, its plan)`` when that is the default and the
    fastest, else with the sentence that says why (the default kept, which faster layout it was kept over: Qwen3-30B-A3B for 64 users of 8,192 tokens on
    8 H200s keeps TP 8 over attention data parallelism 7% faster); None when none holds them (the plan then shows
    the default and what would fit)."""
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
    cap = engine_limits_on(w, gpu)[1]
    lay = default.layout
    # more users than every engine on these GPUs runs at once (cap a replica, at most one replica a GPU): whatever the
    # layout, the rest wait in its queue holding no KV cache (planner.serving_queue), as the default's plan sizes it;
    # each layout is then held to the memory of the sequences it runs at once, as the default is, so the one that
    # runs the most at once is not left out for queueing too (20,000 users of Llama-3.1-8B on 8 H100: 8 replicas run
    # 8,192 at once, about 3x TP 8's 1,024)
    every_layout_queues = want > cap * gpus
    others, _ = _held(model, w, precision, gpus, gpu, overheads, want, cap,
                      skip=Layout(tp=lay.tp, pp=lay.pp, dp=lay.dp, ep=lay.ep), queue=every_layout_queues)
    held = [(given, default), *others] if default.fits else others
    if not held:
        return None
    held, staged = without_stages_on_scale_up(held, gpu)
    pick, speeds, classes = fastest(held, gpu)
    layout, p = held[pick]
    users = users_words(want) + (f" (none runs them all at once: at most {cap:,} a replica, the memory holding those "
                                 "running; the rest wait in its queue)" if every_layout_queues else "")
    if p is default:
        staged_words = stages_words(staged, given, speeds[0], gpu)
        if max(speeds) <= speeds[0] and not staged_words:
            return None, default
        # kept though another is predicted faster (within the margin): say which, as recommend may show it
        kept = (f"Layout kept on the {gpus:,} GPUs asked: the default, TP {lay.tp}"
                + (f" with {lay.dp:,} replicas" if lay.dp > 1 else "") + f" - {which(held, 0, speeds, classes, users)}"
                + staged_words + "; pass --tp, --pp, --dp and --ep to choose")
        return Choice(layout=given, workload=w, reason=kept), default
    why = (f"the default, TP {lay.tp}" + (f" with {lay.dp:,} replicas" if lay.dp > 1 else "")
           + (f", serves them at {speeds[0]:,.0f}" if default.fits else
              f", does not hold them (it needs {fmt_bytes(default.per_gpu.total_bytes)} a GPU)"))
    reason = (f"Layout chosen on the {gpus:,} GPUs asked: {split_words(layout)} - "
              f"{which(held, pick, speeds, classes, users)}; {why}{stages_words(staged, layout, speeds[pick], gpu)}; "
              "pass --tp, --pp, --dp and --ep to choose")
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
    return f"; {fewer.gpus:,} ({split_label(fewer)}) would hold them with {' or '.join(same)}"
