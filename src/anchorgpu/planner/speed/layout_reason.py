"""The sentence that says why ``plan``'s training chooser (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`)
chose its layout: the layout, how many candidates it was the fastest of, what was kept as given, the ZeRO stages
tried, and where the wider search of :mod:`~anchorgpu.planner.speed.chooser_margin` moved off the first layout that
fits, or kept it though a faster split was within the calibration's training layout margin. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.errors import Said, said, said_joined
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Layout, Recompute, Workload
from anchorgpu.planner.speed.chooser_margin import features, simpler
from anchorgpu.planner.speed.train_layout import TrainLayout

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["SERVER_GPUS", "Found", "training_reason"]

SERVER_GPUS = 8
# what the search leaves out of the ZeRO stages, as the chosen layout's sentence says (when the stage was left open)
_ZERO_RULE = said("; ZeRO tried: 1, 2 (timed reducing every micro-batch's gradients, as it must to keep a shard of "
                  "them) and FSDP (3), the last two without pipeline stages (they are Megatron-FSDP, which runs none; "
                  "with stages Megatron-Core shards the optimizer state only, ZeRO-1)")
_ZERO_RULE_PYTORCH = said("; ZeRO tried: 1, 2 without pipeline stages (DeepSpeed's pipeline engine refuses it; timed "
                          "reducing every micro-batch's gradients) and FSDP (3), with pipeline stages as torchtitan "
                          "runs FSDP2 under them")
_TP_INSIDE = said("; tensor parallelism stays inside one server.")

_FEATURE_WORDS = (("tp", said("no tensor parallelism")), ("cp", said("no context parallelism")),
                  ("ep", said("no expert parallelism")), ("pp", said("no pipeline stages")),
                  ("interleave", said("no interleaving")))  # chooser_margin.features, in words
_ZERO_WORDS: dict[int, Said | str] = {0: said("no sharding"), 1: said("ZeRO-1 (distributed optimizer)"), 2: "ZeRO-2",
                                      3: "FSDP / ZeRO-3"}  # the stage's words (2 and 3 are names, the same in any words)


@dataclass(frozen=True, slots=True)
class Found:
    """A configuration the chooser found to fit (climbed): its tokens/s, layouts, micro-batch, recompute and plan."""

    tokens_per_s: float
    lay: TrainLayout
    layout: Layout
    mb: int
    rc: Recompute
    plan: Plan


def _words(model: ModelSpec, given: Layout, f: Found) -> Said:
    """``TP 1, PP 2 (v 8), CP 1, DP 32, EP 8, ZeRO-1 (distributed optimizer), recompute none, micro-batch 8``."""
    lay = f.lay
    staged = ("" if lay.virtual_stages <= 1 else
              said(" (v {v}, layout {layout})", v=lay.virtual_stages, layout=lay.pipeline_layout.text)
              if lay.pipeline_layout is not None and given.pipeline_layout is None else
              said(" (v {v})", v=lay.virtual_stages))
    return said("TP {tp}, PP {pp}{staged}, CP {cp}, DP {dp}{ep}, {zero}, recompute {recompute}, micro-batch {mb}",
                tp=lay.tp, pp=lay.pp, staged=staged, cp=lay.cp, dp=lay.dp,
                ep=said(", EP {ep}", ep=lay.ep) if model.moe is not None else "", zero=_ZERO_WORDS[lay.zero],
                recompute=f.rc, mb=f.mb)


def training_reason(model: ModelSpec, given: Layout, w: Workload, gpu: GpuSpec, chosen: Found, candidates: int,
                    fixed_zero: int | None, kept: Found | None, first: Found, margin: float) -> str:
    """The chosen layout's sentence. ``candidates``: every configuration the search could have chosen (each layout
    and micro-batch up to 4 at each recompute level, and the micro-batch-8 rung of each that runs it); ``first``: the
    first that fits, climbed; ``kept``: the fastest split past it the margin kept out (``None``: none met faster;
    the search seeks no split that could beat the first by the margin or less, so where the first stays the sentence
    says so: Mixtral 8x7B on 16 B200 keeps ZeRO-1 at micro-batch 4, where ZeRO-2 at micro-batch 8, never met, is
    predicted 1.5% faster; recommend's row for those GPUs keeps ZeRO-1 too, choosing by the same rule:
    :func:`~.chooser_margin.pick_split`). Said clause by clause, so a page words it in its language."""
    lay = chosen.lay
    fixed = [name for name, value in (("tp", given.tp), ("pp", given.pp), ("dp", given.dp), ("cp", given.cp),
                                      ("ep", given.ep),
                                      ("zero", given.zero if not given.fsdp else 3),
                                      ("virtual-stages", given.virtual_stages),
                                      ("pipeline-layout", given.pipeline_layout), ("micro-batch", w.micro_batch),
                                      ("no-" * (given.sequence_parallel is False) + "sequence-parallel",
                                       given.sequence_parallel),
                                      ("tp-overlap", given.tp_overlap or None),
                                      ("recompute", w.recompute)) if value is not None]
    dropped = features(first.lay) - features(lay)
    why = (said("simpler ({dropped})",
                dropped=said_joined([words for name, words in _FEATURE_WORDS if name in dropped]))
           if simpler(lay, first.lay)
           else said("beyond the {margin:.1%} the calibration tells two training layouts apart by (calibration.json "
                     "training_layout_margin)", margin=margin))
    moved: Said | str = (said("; chosen over the first that fits ({first}): predicted {faster:.1%} faster, {why}",
                              first=_words(model, given, first), faster=chosen.tokens_per_s / first.tokens_per_s - 1,
                              why=why) if chosen is not first else "")
    held: Said | str = ""
    if kept is not None:
        values = {"kept": _words(model, given, kept), "faster": kept.tokens_per_s / chosen.tokens_per_s - 1,
                  "margin": margin}
        held = (said("; {kept} is predicted {faster:.1%} faster, within the {margin:.1%} the calibration tells two "
                     "training layouts apart by (calibration.json training_layout_margin): kept the first that fits "
                     "(recommend's rows choose by the same rule)", **values) if chosen is first else
                said("; {kept} is predicted {faster:.1%} faster, within the {margin:.1%} the calibration tells two "
                     "training layouts apart by (calibration.json training_layout_margin): kept the simpler layout "
                     "(recommend's rows choose by the same rule)", **values))
    elif chosen is first and margin > 0 and candidates > 1:
        held = said("; another split replaces it only where simpler or predicted more than {margin:.1%} faster "
                    "(calibration.json training_layout_margin), so one faster by less is not sought (recommend's rows "
                    "choose by the same rule)", margin=margin)
    return said("Layout chosen: {words} - the fastest of {candidates} candidates that fits {gpu}{fixed}{moved}{held}"
                "{zero_rule}{tp_rule}", words=_words(model, given, chosen), candidates=candidates, gpu=gpu.name,
                fixed=said(" (kept as given: {flags})", flags=", ".join("--" + f for f in fixed)) if fixed else "",
                moved=moved, held=held,
                zero_rule=((_ZERO_RULE_PYTORCH if w.train_stack == "pytorch" else _ZERO_RULE)
                           if fixed_zero is None and lay.dp * lay.cp > 1 else ""),
                tp_rule=_TP_INSIDE if lay.tp <= SERVER_GPUS else
                said("; TP {tp} as given spans servers of {server_gpus} (tp_across_nodes).", tp=lay.tp,
                     server_gpus=SERVER_GPUS))
