"""The sentence that says why ``plan``'s training chooser (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`)
chose its layout: the layout, how many candidates it was the fastest of, what was kept as given, the ZeRO stages
tried, and where the wider search of :mod:`~anchorgpu.planner.speed.chooser_margin` moved off the first layout that
fits, or kept it though a faster split was within the calibration's training layout margin. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchorgpu.architectures.spec import ModelSpec
from anchorgpu.hardware.spec import GpuSpec
from anchorgpu.planner.inputs import Layout, Recompute, Workload
from anchorgpu.planner.speed.chooser_margin import features, simpler
from anchorgpu.planner.speed.train_layout import TrainLayout

if TYPE_CHECKING:
    from anchorgpu.planner.plan import Plan

__all__ = ["SERVER_GPUS", "Found", "training_reason"]

SERVER_GPUS = 8
# what the search leaves out of the ZeRO stages, as the chosen layout's sentence says (when the stage was left open)
_ZERO_RULE = ("; ZeRO tried: 1, 2 (timed reducing every micro-batch's gradients, as it must to keep a shard of "
              "them) and FSDP (3), the last two without pipeline stages (they are Megatron-FSDP, which runs none; "
              "with stages Megatron-Core shards the optimizer state only, ZeRO-1)")
_ZERO_RULE_PYTORCH = ("; ZeRO tried: 1, 2 without pipeline stages (DeepSpeed's pipeline engine refuses it; timed "
                      "reducing every micro-batch's gradients) and FSDP (3), with pipeline stages as torchtitan runs "
                      "FSDP2 under them")

_FEATURE_WORDS = (("tp", "tensor parallelism"), ("cp", "context parallelism"), ("ep", "expert parallelism"),
                  ("pp", "pipeline stages"), ("interleave", "interleaving"))  # chooser_margin.features, in words


@dataclass(frozen=True, slots=True)
class Found:
    """A configuration the chooser found to fit (climbed): its tokens/s, layouts, micro-batch, recompute and plan."""

    tokens_per_s: float
    lay: TrainLayout
    layout: Layout
    mb: int
    rc: Recompute
    plan: Plan


def _words(model: ModelSpec, given: Layout, f: Found) -> str:
    """``TP 1, PP 2 (v 8), CP 1, DP 32, EP 8, ZeRO-1 (distributed optimizer), recompute none, micro-batch 8``."""
    lay = f.lay
    staged = (f" (v {lay.virtual_stages}" + (f", layout {lay.pipeline_layout.text}" if lay.pipeline_layout is not None
                                             and given.pipeline_layout is None else "") + ")"
              if lay.virtual_stages > 1 else "")
    parts = [f"TP {lay.tp}", f"PP {lay.pp}{staged}",
             f"CP {lay.cp}", f"DP {lay.dp}", *([f"EP {lay.ep}"] if model.moe is not None else []),
             {0: "no sharding", 1: "ZeRO-1 (distributed optimizer)", 2: "ZeRO-2", 3: "FSDP / ZeRO-3"}[lay.zero],
             f"recompute {f.rc}", f"micro-batch {f.mb}"]
    return ", ".join(parts)


def training_reason(model: ModelSpec, given: Layout, w: Workload, gpu: GpuSpec, chosen: Found, candidates: int,
                    fixed_zero: int | None, kept: Found | None, first: Found, margin: float) -> str:
    """The chosen layout's sentence. ``candidates``: every configuration the search could have chosen (each layout
    and micro-batch up to 4 at each recompute level, and the micro-batch-8 rung of each that runs it); ``first``: the
    first that fits, climbed; ``kept``: the fastest split past it the margin kept out (``None``: none met faster;
    the search seeks no split that could beat the first by the margin or less, so where the first stays the sentence
    says so: Mixtral 8x7B on 16 B200 keeps ZeRO-1 at micro-batch 4, where ZeRO-2 at micro-batch 8, never met, is
    predicted 1.5% faster; recommend's row for those GPUs keeps ZeRO-1 too, choosing by the same rule:
    :func:`~.chooser_margin.pick_split`)."""
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
    why = (f"simpler ({', '.join('no ' + words for name, words in _FEATURE_WORDS if name in dropped)})"
           if simpler(lay, first.lay)
           else f"beyond the {margin:.1%} the calibration tells two training layouts apart by (calibration.json "
                "training_layout_margin)")
    moved = (f"; chosen over the first that fits ({_words(model, given, first)}): predicted "
             f"{chosen.tokens_per_s / first.tokens_per_s - 1:.1%} faster, {why}" if chosen is not first else "")
    held = (f"; {_words(model, given, kept)} is predicted {kept.tokens_per_s / chosen.tokens_per_s - 1:.1%} faster, "
            f"within the {margin:.1%} the calibration tells two training layouts apart by (calibration.json "
            "training_layout_margin): kept the "
            + ("first that fits" if chosen is first else "simpler layout")
            + " (recommend's rows choose by the same rule)" if kept is not None else
            f"; another split replaces it only where simpler or predicted more than {margin:.1%} faster (calibration.json "
            "training_layout_margin), so one faster by less is not sought (recommend's rows choose by the same "
            "rule)" if chosen is first and margin > 0 and candidates > 1 else "")
    return (f"Layout chosen: {_words(model, given, chosen)} - the fastest of {candidates} candidates that fits "
            f"{gpu.name}" + (f" (kept as given: {', '.join('--' + f for f in fixed)})" if fixed else "")
            + moved + held
            + ((_ZERO_RULE_PYTORCH if w.train_stack == "pytorch" else _ZERO_RULE)
               if fixed_zero is None and lay.dp * lay.cp > 1 else "")
            + ("; tensor parallelism stays inside one server." if lay.tp <= SERVER_GPUS else
               f"; TP {lay.tp} as given spans servers of {SERVER_GPUS} (tp_across_nodes)."))
