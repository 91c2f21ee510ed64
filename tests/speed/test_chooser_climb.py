"""The search past the first training layout that fits (:func:`~anchorgpu.planner.speed.chooser_climb.climbers`):
every split whose climb past micro-batch 4 could beat the first is met, however far down the order before the climb
it sits, and one that cannot is dropped before it is planned. Toy speeds, so each property stands alone: a cap on the
layouts met (stop 57's ``CLIMBED_LAYOUTS = 8``) fails the first test, planning a rung whose micro-batch 4 did not fit
the second (benchmarks/hardening/stop58_widen.md)."""

from __future__ import annotations

from anchorgpu.planner.inputs import Recompute
from anchorgpu.planner.speed.chooser_climb import climbers
from anchorgpu.planner.speed.train_layout import TrainLayout

LEVELS: tuple[Recompute, ...] = ("none", "full")
FIRST = TrainLayout(gpus=64, tp=1, pp=2, dp=32, ep=8, zero=1)


def _layouts() -> list[TrainLayout]:
    """20 splits besides the first, fastest at micro-batch 4 first (the order before the climb)."""
    return [
        TrainLayout(gpus=64, tp=1, pp=1, dp=64, ep=ep, zero=zero)
        for ep in (2, 4, 8, 16, 32, 64, 1)
        for zero in (1, 2, 3)
    ][:20]


def _search(target: TrainLayout, unfit_at_4: set[tuple[int, int, Recompute]]) -> tuple[list[object], list[tuple]]:
    lays = _layouts()
    pairs = [(lay, mb) for lay in [FIRST, *lays] for mb in (1, 2, 4)]
    planned: list[tuple] = []

    def speed(lay: TrainLayout, mb: int, rc: Recompute) -> float:
        at_4 = 100.0 if lay == FIRST else 99.0 - lays.index(lay)  # every other split slower than the first at 4
        gain = 1.6 if lay == target else 1.2  # 16 others could climb past the first: their rungs do not fit
        return (at_4 * (gain if mb == 8 else mb / 4)) * (1.0 if rc == "none" else 0.9)

    def fits(lay: TrainLayout, mb: int, rc: Recompute) -> bool:
        planned.append((lay.ep, lay.zero, mb, rc))
        return rc == "full" and lay == target

    found = climbers(
        pairs,
        LEVELS,
        FIRST,
        100.0,
        0.1,
        False,
        speed=speed,
        bound=lambda lay, mb: speed(lay, mb, "none"),
        rung_bound=lambda lay, mb, low: speed(lay, mb, "none"),
        over=lambda lay, mb: None,
        runs=lambda lay, mb: True,
        fits=fits,
        unfit=lambda lay, mb, rc: (lay.ep, lay.zero, rc) in unfit_at_4,
        row=lambda stream, members: next(stream)[2],
        outgrown=set(),
        settled={(1, 1, 2, 32, 8, 1)},
    )
    return found, planned


def test_a_split_last_before_the_climb_is_met() -> None:
    """The target is the slowest of 20 splits at micro-batch 4 (80 tok/s against the first's 100); its climb (x1.6 at
    micro-batch 8: 128 without recompute, which does not fit, 115.2 with) beats the first. The 16 splits before it
    whose rung (x1.2) could beat the first too are planned there and do not fit; the 3 whose rung cannot
    (83-81 x 1.2 < 100 at most) are not."""
    target = _layouts()[-1]
    found, planned = _search(target, set())
    assert found == [target]  # its row (the toy row: the first of its stream)
    assert len({(ep, zero) for ep, zero, _, _ in planned}) == 17
    assert (target.ep, target.zero, 8, "full") in planned


def test_a_rung_whose_micro_batch_4_did_not_fit_is_not_planned() -> None:
    """At one recompute level memory never shrinks with a larger micro-batch (tests/recommend/
    test_sweep_micro_batch.py): where the target's micro-batch 4 was planned and did not fit at full recompute, its
    rung there is not planned, and at none (planned: does not fit) it cannot end the climb either: nothing found."""
    target = _layouts()[-1]
    found, planned = _search(target, {(target.ep, target.zero, "full")})
    assert found == [] and (target.ep, target.zero, 8, "none") in planned
    assert (target.ep, target.zero, 8, "full") not in planned
