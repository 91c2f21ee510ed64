"""A user's own efficiencies (``--mfu``, ``--mbu``) in place of the calibrated ones, and the calibration they give."""

from __future__ import annotations

from dataclasses import dataclass, replace

from anchorgpu.errors import InvalidWorkload, said
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Band, Calibration
from anchorgpu.units import fmt_given

__all__ = ["MIN_EFFICIENCY", "Overrides", "calibrated"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Overrides:
    """A user's own efficiencies in place of the calibrated ones (``--mfu``, ``--mbu``); ``None`` keeps them.

    ``mfu`` replaces every matrix-product efficiency (training BF16/FP8 and serving) and drops the shape
    term; ``mbu`` replaces the memory-bandwidth efficiency of weight and KV reads.
    """

    mfu: float | None = None
    mbu: float | None = None

    def __post_init__(self) -> None:
        for name in ("mfu", "mbu"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not MIN_EFFICIENCY <= value <= 1.0):
                raise InvalidWorkload(said("--{name} {fmt_given}: an efficiency is a fraction from "
                                           "{MIN_EFFICIENCY:g} to 1 (below 1% is not a real efficiency: the speed "
                                           "would print as 0 tok/s)", name=name, fmt_given=fmt_given(value),
                                           MIN_EFFICIENCY=MIN_EFFICIENCY))


MIN_EFFICIENCY = 0.01
"""The smallest ``--mfu`` / ``--mbu`` taken (the API's bound too): ``5e-324`` printed 0.0 tok/s, not a real efficiency."""


def calibrated(overrides: Overrides | None = None) -> Calibration:
    """The shipped calibration with the user's overrides applied (the same object when there are none)."""
    cal = calibration()
    if overrides is None or (overrides.mfu is None and overrides.mbu is None):
        return cal
    stacks = {}
    for name, k in cal.stacks.items():
        if overrides.mfu is not None:
            k = replace(k, train_matmul_efficiency=overrides.mfu, fp8_matmul_efficiency=overrides.mfu,
                        fp4_matmul_efficiency=overrides.mfu,
                        serve_matmul_efficiency=overrides.mfu, train_matmul_half_width=0.0, serve_matmul_half_width=0.0)
        if overrides.mbu is not None:
            k = replace(k, decode_mbu=overrides.mbu)
        stacks[name] = k
    # the bands are where measured runs fell around the calibrated model; nothing says where they fall around
    # the user's own efficiencies, so a prediction made with them has no band (low = high = the prediction)
    return replace(cal, stacks=stacks, bands={name: Band(low=1.0, high=1.0) for name in cal.bands}, origin="user",
                   user_efficiencies=tuple(n for n in ("mfu", "mbu") if getattr(overrides, n) is not None))
