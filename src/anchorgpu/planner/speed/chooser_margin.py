"""When ``plan``'s training chooser (:func:`~anchorgpu.planner.speed.layouts.choose_training_layout`) leaves the
first layout that fits for another: the rule, and the bounds of the wider search that looks for one. Pure.

The chooser meets its candidates fastest first at micro-batches 1, 2 and 4 (:data:`~.micro_batch_ladder.MICRO_BATCHES`) and the
first that fits is its *first* layout, climbed past 4 while each rung is faster (:func:`~.micro_batch_ladder.climb_ladder`).
Another split's climb can then run faster still (Qwen3-30B-A3B on 64 H100 at 2,048 tokens: PP 2 v8 at micro-batch
8, 17% over the first's PP 1 at 4), so the search reads on past the first for every split whose climb could beat it
(:func:`~.chooser_climb.climbers`). One of them replaces the first (:func:`~.serving_ranking.pick_over_first`, the serving chooser's rule) only where the model can
tell them apart: predicted faster by more than the calibration's training layout margin
(:attr:`~.constants.Calibration.training_layout_margin`: the median disagreement of the model between two
configurations of one measured benchmark, :func:`~.layout_margin.training_layout_spread`), or simpler than the first
(:func:`simpler`) and faster at all. Within the margin the first stays: Qwen3-30B-A3B on 8 B200 keeps
Megatron-Bridge's own TP 1 PP 1 EP 8 over PP 2 v8 EP 4 predicted 2.7% faster.

Nor does the search leave the launches that can run the first (:func:`launchers`): under ``--fsdp`` or on the
PyTorch-native stack the plan may be launched by any training recipe that runs its layout
(:data:`~anchorgpu.planner.engine_choice.TRAINING_RECIPES`), and a faster split one of them cannot express (TP or
CP past 1 for DeepSpeed, pipeline stages for all three) is not taken over the first.
"""

from __future__ import annotations

from collections.abc import Sequence

from anchorgpu.planner.engine_choice import TRAINING_RECIPES, launches_stages, launches_tp_cp
from anchorgpu.planner.speed.train_layout import TrainLayout

__all__ = ["LADDER_GAIN", "features", "in_reach", "launchers", "needed", "pick_split", "simpler", "split_of"]

LADDER_GAIN = 2.0
"""The most a rung past :data:`~.micro_batch_ladder.MICRO_BATCHES` multiplies a layout's speed at the rung below, at the same
recompute level: a step's tokens stay the global batch, and each rung doubles the micro-batch, so it halves the
micro-batches, whose time never falls with their size (tests/speed/test_chooser_ladder_gain.py checks it over a
sample), and leaves the bubble's stage times and the per-step parts as they were: the step takes at least half as
long. So no layout whose bound at micro-batch 4 doubled is short of what it needs can climb past the first
(:func:`~.chooser_climb.climbers`)."""


def split_of(lay: TrainLayout) -> tuple[int, int, int, int, int, int]:
    """What one row of ``recommend``'s sweep fixes (TP, CP, PP, DP, EP, ZeRO): the interleaving, micro-batch and
    recompute are that row's own search. The chooser climbs one configuration a split (its fastest that fits, as the
    row does), so a plan given the split agrees with the row."""
    return (lay.tp, lay.cp, lay.pp, lay.dp, lay.ep, lay.zero)


def features(lay: TrainLayout) -> frozenset[str]:
    """The parallel dimensions a layout runs beyond plain data parallelism: ``tp``, ``cp``, ``ep`` past 1, ``pp``
    (pipeline stages, a schedule and its bubble), ``interleave`` (virtual stages past 1).

    >>> sorted(features(TrainLayout(gpus=64, tp=1, pp=2, dp=32, ep=8, virtual_stages=8)))
    ['ep', 'interleave', 'pp']
    """
    return frozenset(name for name, on in (("tp", lay.tp > 1), ("cp", lay.cp > 1), ("ep", lay.ep > 1),
                                           ("pp", lay.pp > 1), ("interleave", lay.virtual_stages > 1)) if on)


def simpler(a: TrainLayout, b: TrainLayout) -> bool:
    """Whether ``a`` is simpler than ``b`` as an engineer reads two layouts: it runs a strict subset of ``b``'s
    parallel dimensions (:func:`features`): no pipeline where ``b`` has one, no interleave where ``b`` interleaves, no
    TP, CP or EP where ``b`` runs it, and nothing ``b`` does not. Sizes alone (EP 4 against EP 8) and the ZeRO stage
    do not make a layout simpler, nor does a trade (PP for TP): those need the margin.

    >>> one = TrainLayout(gpus=8, tp=1, pp=1, dp=8, ep=8)
    >>> simpler(one, TrainLayout(gpus=8, tp=1, pp=2, dp=4, ep=4, virtual_stages=8)), simpler(one, one)
    (True, False)
    """
    return features(a) < features(b)


def launchers(lay: TrainLayout) -> frozenset[str]:
    """The training recipes that can launch ``lay`` (:data:`~anchorgpu.planner.engine_choice.TRAINING_RECIPES`, by
    :func:`~anchorgpu.planner.engine_choice.launches_stages` and
    :func:`~anchorgpu.planner.engine_choice.launches_tp_cp`, the rules that hold a plan asking for one to its reach).

    >>> sorted(launchers(TrainLayout(gpus=16, tp=4, pp=1, dp=4, ep=8, zero=3)))
    ['accelerate', 'torchrun-fsdp']
    """
    return frozenset(r for r in TRAINING_RECIPES if (lay.pp == 1 or launches_stages(r))
                     and (lay.tp == lay.cp == 1 or launches_tp_cp(r)))


def in_reach(lay: TrainLayout, first: TrainLayout, held: bool) -> bool:
    """Whether ``lay`` may replace ``first``: always, unless the launch is ``held`` to the recipes that can run the
    first (``--fsdp`` or the PyTorch stack: :func:`launchers`), and one of those cannot launch ``lay``.

    >>> first = TrainLayout(gpus=16, tp=1, pp=1, dp=16, ep=8, zero=3)
    >>> in_reach(TrainLayout(gpus=16, tp=4, pp=1, dp=4, ep=8, zero=3), first, True), in_reach(first, first, True)
    (False, True)
    """
    return not held or launchers(first) <= launchers(lay)


def pick_split(found: Sequence[tuple[TrainLayout, float]], margin: float) -> int:
    """Index into ``found`` (the first layout that fits with its speed, then the other splits met, in the order met)
    of the one chosen: the serving chooser's rule (:func:`~.serving_ranking.pick_over_first`), the fastest of those
    faster than the first by more than ``margin`` (the training layout margin), or by anything where
    :func:`simpler`, else the first. ``plan``'s chooser and ``recommend``'s per-offering pick
    (:func:`anchorgpu.recommend.selection.best_per_group`) both choose by it.

    >>> one = TrainLayout(gpus=8, tp=1, pp=1, dp=8, ep=8)
    >>> pp2 = TrainLayout(gpus=8, tp=1, pp=2, dp=4, ep=8)
    >>> pick_split([(one, 100.0), (pp2, 105.0)], 0.09), pick_split([(one, 100.0), (pp2, 110.0)], 0.09)
    (0, 1)
    >>> pick_split([(pp2, 100.0), (one, 100.5)], 0.09)  # simpler, and faster at all
    1
    """
    from anchorgpu.planner.speed.serving_ranking import pick_over_first  # it imports the serving model

    first = found[0][0]
    return pick_over_first([s for _, s in found], [0.0, *(0.0 if simpler(lay, first) else margin
                                                          for lay, _ in found[1:])])


def needed(lay: TrainLayout, first: TrainLayout, first_tokens_per_s: float, margin: float) -> float:
    """The speed ``lay`` must beat to replace ``first``: the first's where it is :func:`simpler`, else the first's
    raised by ``margin``."""
    return first_tokens_per_s if simpler(lay, first) else first_tokens_per_s * (1.0 + margin)
