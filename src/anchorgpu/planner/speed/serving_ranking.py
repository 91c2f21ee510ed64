"""How the serving choosers rank the layouts that hold the users, and say why: each layout's plan where it holds
them (:func:`holds`), the fastest of them but the planner's first unless another is predicted faster by more than
the calibration's margin between the two (:func:`fastest`, :func:`pick_over_first`, the margin of the class of link
they cross: :func:`pair_class`, :func:`pair_margin`), and the words of the choice (:func:`which`,
:func:`split_words`). Shared by the serving chooser (:mod:`~anchorgpu.planner.speed.serving_layouts`) and the stages
added around a TP given (:mod:`~anchorgpu.planner.speed.serving_given_tp`). Pure.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Layout, Overheads, PrecisionPlan, Workload
from anchorgpu.planner.serving_queue import running_sequences
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.layouts import SERVER_GPUS
from anchorgpu.planner.speed.topology import EXPERT_SPLITS, expert_split, layout_margin_class, serving_link_kind

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan
    from anchorgpu.planner.result import ResolvedLayout

__all__ = ["fastest", "holds", "pair_class", "pair_margin", "pick_over_first", "split_label", "split_words",
           "users_words", "which"]


def split_label(layout: Layout) -> str:
    """``TP 1, PP 1, DP 8``; under attention data parallelism ``TP 1, DP 8, EP 8``; with the experts whole over
    the TP group ``TP 8, PP 1, EP 8``."""
    tp, pp, dp, ep = layout.tp or 1, layout.pp or 1, layout.dp or 1, layout.ep or 1
    if ep > tp:
        return f"TP {tp}, DP {dp}, EP {ep}"
    return f"TP {tp}, PP {pp}" + (f", DP {dp}" if dp > 1 else "") + (f", EP {ep}" if ep > 1 else "")


def split_words(layout: Layout) -> str:
    """:func:`split_label` and what its parts are: ``TP 1, PP 1, DP 8: 8 replicas`` or, under attention data
    parallelism, what each part holds."""
    tp, dp, ep = layout.tp or 1, layout.dp or 1, layout.ep or 1
    if ep > tp and tp * dp > ep:  # copies of one server's engine
        return (f"{split_label(layout)}: attention data parallelism in {tp * dp // ep:,} independent engines of {ep:,} GPUs, "
                f"each {ep // tp} replicas of the attention and dense layers with their own sequences' KV cache and "
                f"the routed experts split over its {ep:,} GPUs, the users split evenly between the engines")
    if ep > tp:
        return (f"{split_label(layout)}: attention data parallelism, {dp:,} replicas of the attention and dense layers, each "
                f"with its own sequences' KV cache, the routed experts split over all {ep:,} GPUs")
    if ep > 1:
        return (f"{split_label(layout)}: " + (f"{dp:,} replicas, each " if dp > 1 else "")
                + f"the attention and dense layers split by TP {tp}, the routed experts split whole over "
                + ("its" if dp > 1 else "the") + f" {ep:,} GPUs (EP inside TP)")
    return split_label(layout) + (f": {dp:,} replicas" if dp > 1 else "")


def holds(model: ModelSpec, w: Workload, precision: PrecisionPlan, layout: Layout, gpu: GpuSpec,
          overheads: Overheads, want: int, cap: int, queue: bool = False) -> tuple[Plan | None, float]:
    """(the plan of ``layout`` when it holds ``want`` sequences, no more a replica than ``cap``, else None; its
    headroom, -inf where it could not be planned). With ``queue`` (no layout on the GPUs runs them all at once),
    more a replica than ``cap`` are let wait in its engine's queue: the layout holds them when its memory holds the
    sequences it runs at once, as its plan sizes them (:func:`~anchorgpu.planner.serving_queue.running_sequences`)."""
    from anchorgpu.planner.plan import plan

    per_replica = math.ceil(want / (layout.dp or 1))
    if per_replica > cap and not queue:  # more a replica than its engine runs at once
        return None, -math.inf
    try:
        p = plan(model, w, precision=precision, layout=layout, gpu=gpu, overheads=overheads, suggest=False,
                 choose_layout=False)
    except InvalidWorkload:
        return None, -math.inf
    headroom = float(p.headroom_bytes if p.headroom_bytes is not None else -math.inf)
    held = min(want, running_sequences(per_replica, cap) * (layout.dp or 1))  # want, unless some wait
    return (p if p.fits and (p.max_concurrency or 0) >= held else None), headroom


def _serving_speed(p: Plan) -> float:
    """Output tokens/s of a serving plan at its requested concurrency (the calibrated prediction)."""
    from anchorgpu.planner.speed.estimate import plan_performance

    return float(plan_performance(p).get("output_tokens_per_s") or 0.0)


def fastest(held: list[tuple[Layout, Plan]], gpu: GpuSpec) -> tuple[int, list[float], list[str]]:
    """Of the layouts that hold the users, in the planner's order (the default or replicas of the smallest split
    first): the fastest (output tokens/s at their concurrency, the same as the shortest time per output token for
    them) of those predicted faster than the first by more than the calibration's layout margin between the two
    (:func:`pair_margin`, :func:`pick_over_first`). Answers the index picked, every layout's predicted output tokens/s
    and the class of its margin against the first (:func:`pair_class`)."""
    speeds = [_serving_speed(p) for _, p in held]
    # the plans' layouts: the first of choose_serving_layout_on is the layout given, only its GPU count set
    classes = [pair_class(gpu, held[0][1].layout, p.layout) for _, p in held]
    return pick_over_first(speeds, [calibration().layout_margin_of(c) for c in classes]), speeds, classes


def pair_class(gpu: GpuSpec, a: Layout | ResolvedLayout, b: Layout | ResolvedLayout) -> str:
    """The class of the worse link serving layouts ``a`` and ``b`` on ``gpu`` cross with their tensor-, pipeline- and
    expert-parallel traffic, and whether one splits the experts over GPUs
    (:func:`~anchorgpu.planner.speed.topology.layout_margin_class`)."""
    return layout_margin_class(*(serving_link_kind(gpu, lay.tp or 1, lay.pp or 1, lay.ep or 1,
                                                   gpus_per_server=SERVER_GPUS) for lay in (a, b)),
                               experts=max((expert_split(lay.tp or 1, lay.ep or 1) for lay in (a, b)),
                                           key=EXPERT_SPLITS.index))


def pair_margin(gpu: GpuSpec, a: Layout, b: Layout) -> float:
    """The calibration's margin between serving layouts ``a`` and ``b`` on ``gpu``: its ``layout_margin`` of the
    class of the worse link their tensor-, pipeline- and expert-parallel traffic crosses
    (:func:`~anchorgpu.planner.speed.topology.layout_margin_class`): ``scale-up`` where both stay on NVLink, xGMI or
    NVSwitch, ``scale-up-ep`` there where one runs EP inside TP, ``scale-up-adp`` where one runs attention data
    parallelism with EP (each the pooled margin until the calibration has enough such pairs of its own),
    ``pcie-or-network`` where one crosses PCIe or the network (the median disagreement of the model between two held-out measured layouts of one workload, per
    class).

    >>> from anchorgpu.hardware import get_gpu
    >>> h200, rtx = get_gpu("h200"), get_gpu("rtx-pro-6000")
    >>> tp8, dp8, staged = Layout(gpus=8, tp=8), Layout(gpus=8, tp=1, dp=8), Layout(gpus=16, tp=8, pp=2)
    >>> adp = Layout(gpus=8, tp=1, dp=8, ep=8)
    >>> inside = Layout(gpus=8, tp=8, ep=8)
    >>> [pair_class(h200, tp8, b) for b in (dp8, inside, adp, staged)], pair_class(rtx, tp8, dp8)
    (['scale-up', 'scale-up-ep', 'scale-up-adp', 'pcie-or-network'], 'pcie-or-network')
    >>> pair_margin(h200, tp8, adp) == calibration().layout_margin_of("scale-up-adp")
    True
    """
    return calibration().layout_margin_of(pair_class(gpu, a, b))


def pick_over_first(speeds: list[float], margin: float | list[float]) -> int:
    """Index of the fastest of ``speeds`` (the first of equals) of those faster than ``speeds[0]`` (the planner's
    first, the conventional layout) by more than their ``margin`` (a fraction, one for all or one a layout:
    :func:`pair_margin`, the median disagreement of the model between two layouts of one measured workload whose
    links are of that class, so a smaller predicted advantage is not one the calibration resolves), else 0.
    Qwen3-30B-A3B for 64 users of 8,192 tokens on 8 H200s: attention data parallelism, predicted 7% faster than TP 8,
    within NVLink's margin for a layout that runs attention data parallelism, leaves TP 8; Mixtral 8x22B for 6,144
    users on 24 H200s: three one-server attention-DP engines, predicted 62% faster, replace TP 8 x 3.

    >>> pick_over_first([100.0, 110.0], margin=0.163), pick_over_first([100.0, 120.0, 117.0], margin=0.163)
    (0, 1)
    >>> pick_over_first([100.0, 112.0, 108.0], margin=[0.0, 0.159, 0.051])  # the fastest within its margin
    2
    """
    margins = margin if isinstance(margin, list) else [margin] * len(speeds)
    beyond = [i for i in range(1, len(speeds)) if speeds[i] > speeds[0] * (1.0 + margins[i])]
    return max(beyond, key=lambda i: (speeds[i], -i)) if beyond else 0


def _fastest_index(speeds: list[float]) -> int:
    """Index of the fastest of ``speeds``, the first of equals."""
    return max(range(len(speeds)), key=lambda i: (speeds[i], -i))


def which(held: list[tuple[Layout, Plan]], pick: int, speeds: list[float], classes: list[str],
          users: str | None, first: str = "the planner's first") -> str:
    """What the chosen layout is among those that hold the users (``users``: how many, else "that do"); where the
    planner's first is kept though another is predicted faster (within the margin), which one and by how much, the
    layout recommend's sweep, which ranks with no margin, may show on the same GPUs (``first``: how the first is
    named). The margin quoted is the one between the first and the layout named (of its class of link, ``classes``:
    :func:`pair_class`)."""
    if len(held) == 1:
        return f"the only layout on them that holds {users}"
    best = _fastest_index(speeds)
    named = classes[best if pick == 0 else pick]
    margin = calibration().layout_margin_of(named)
    which = (f"{first} ({speeds[0]:,.0f} output tok/s), no other predicted more than {margin:.1%} faster"
             if pick == 0 else
             f"the {'fastest' if pick == best else 'fastest beyond its margin'} ({speeds[pick]:,.0f} output tok/s), "
             f"predicted more than {margin:.1%} faster than {first}")
    others = "".join(f"; {calibration().layout_margin_of(c):.1%} {_CLASS_WORDS[c]}"
                     for c in _CLASS_WORDS if c != named and c in classes[1:])
    return (f"of the {len(held)} layouts on them that {'do' if users is None else 'hold ' + users}, {which} ("
            + _fastest_kept_over(held, pick, speeds) + "a smaller advantage is within the model's usual error between "
            f"two layouts of one measured workload {_CLASS_WORDS[named]}{others})")


_CLASS_WORDS = {"scale-up": "whose traffic stays on the scale-up link (NVLink, xGMI)",
                "scale-up-ep": "whose traffic stays on the scale-up link and one splits the experts whole over its TP "
                               "group (EP inside TP)",
                "scale-up-adp": "whose traffic stays on the scale-up link and one runs attention data parallelism "
                                "with EP",
                "pcie-or-network": "where one's traffic crosses PCIe or the network"}
"""How the assumptions name each class of :func:`pair_class`."""


def _fastest_kept_over(held: list[tuple[Layout, Plan]], pick: int, speeds: list[float]) -> str:
    """``the fastest, TP 2, DP 4, EP 8, by 3.7% at 7,190; `` where the layout picked is not the fastest, else empty."""
    best = _fastest_index(speeds)
    if best == pick or speeds[pick] <= 0:
        return ""
    return (f"the fastest, {split_label(held[best][0])}, by {speeds[best] / speeds[pick] - 1.0:.1%} at "
            f"{speeds[best]:,.0f}; ")


def users_words(want: int) -> str:
    return f"{want:,} sequence{'s' if want > 1 else ''}"
