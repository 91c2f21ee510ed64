"""Shared by the stop-63 probes (moe_half_refit_probe, nonmoe63_eval, nonmoe63_fixed_probe): each row's error read back
from a saved ``python -m anchorgpu.planner.speed.calibrate > FILE``, and a golden-section search on a log scale (a
dev helper, not a test)."""
from __future__ import annotations

import math
import re
from collections.abc import Callable

ROW = re.compile(r"(\S+)\s+(fit|holdout)\s+\S+\s+\S+\s+\S+\s+\S+\s+([+-][\d.]+)%")


def read_errors(path: str) -> dict[str, float]:
    """Each row's error in percent, by row id, from a saved calibrate report."""
    errors: dict[str, float] = {}
    with open(path) as f:
        for line in f:
            m = ROW.match(line)
            if m:
                errors[m.group(1)] = float(m.group(3))
    return errors


def golden_log(loss: Callable[[float], float], lo: float, hi: float, steps: int) -> float:
    """The ``x`` in ``[lo, hi]`` minimising ``loss``, searched on ``log(x)`` (``steps`` golden-section steps)."""
    a_lo, a_hi, g = math.log(lo), math.log(hi), (math.sqrt(5) - 1) / 2
    a, b = a_hi - g * (a_hi - a_lo), a_lo + g * (a_hi - a_lo)
    fa, fb = loss(math.exp(a)), loss(math.exp(b))
    for _ in range(steps):
        if fa < fb:
            a_hi, b, fb = b, a, fa
            a = a_hi - g * (a_hi - a_lo)
            fa = loss(math.exp(a))
        else:
            a_lo, a, fa = a, b, fb
            b = a_lo + g * (a_hi - a_lo)
            fb = loss(math.exp(b))
    return math.exp((a_lo + a_hi) / 2)
