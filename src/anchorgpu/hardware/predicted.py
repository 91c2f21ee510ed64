"""Predicted speed ratios for ``gpus compare``: the calibrated model's figures beside the datasheet ratios. Pure.

The hardware core does not run the speed model (that lives in :mod:`anchorgpu.planner.speed`, one layer up).
A face asks :func:`anchorgpu.planner.speed.reference.predicted_speeds` for each reference workload's
prediction on both GPUs and hands the :class:`PredictedSpeed` rows to
:func:`~anchorgpu.hardware.compare.compare_gpus`, which only formats them. Every ratio is ``a / b``.

The ratio's band combines the two predictions' bands (the 10th-90th percentile of measured/predicted over
the calibration rows of each GPU's software stack) as independent errors in log space: the half-widths
add in quadrature. That is narrower than the worst case (``a_low / b_high``) and wider than assuming the
two errors cancel, which they would only if both GPUs missed by the same factor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PredictedSpeed", "SpeedFigure", "band_of_ratio", "predicted_statements"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SpeedFigure:
    """One GPU's prediction for a reference workload, its band, and the layout it assumed."""

    value: float | None  # None: the workload does not fit this GPU (``note`` says why)
    low: float | None = None
    high: float | None = None
    ceiling: float | None = None  # the roofline ceiling of the same layout (datasheet peaks, no efficiency): a bound,
    # never the prediction
    layout: str = ""  # e.g. "1 GPU", "TP 2, PP 16, DP 2, ZeRO-1, recompute none, micro-batch 1"
    note: str = ""
    evidence: str = ""  # how this GPU's own measured runs of the kind fell around the model (the plan's summary)


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictedSpeed:
    """One reference workload on both GPUs: predictions, their ratio with its band, and the datasheet ratio."""

    metric: str  # stable key, e.g. "serve_8b_output_tokens_per_s"
    label: str  # for people
    workload: str  # the reference workload, stated in full
    unit: str  # "tokens/s", "tokens/s per GPU"
    a: SpeedFigure
    b: SpeedFigure
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    datasheet_metric: str  # the datasheet row the roofline would scale with, e.g. "memory_bandwidth_bytes_per_s"
    datasheet_ratio: float | None = None
    note: str = ""


def band_of_ratio(a: SpeedFigure, b: SpeedFigure) -> tuple[float | None, float | None, float | None]:
    """``(ratio, low, high)`` of ``a / b``; ``None`` where either side has no prediction.

    >>> r, lo, hi = band_of_ratio(SpeedFigure(value=200, low=180, high=220), SpeedFigure(value=100, low=90, high=110))
    >>> round(r, 3), round(lo, 3), round(hi, 3)
    (2.0, 1.735, 2.305)
    """
    if not a.value or not b.value:
        return None, None, None
    ratio = a.value / b.value

    def spread(value: float, bound: float | None) -> float:
        return abs(math.log(bound / value)) if bound else 0.0

    down = math.hypot(spread(a.value, a.low), spread(b.value, b.high))
    up = math.hypot(spread(a.value, a.high), spread(b.value, b.low))
    return ratio, ratio * math.exp(-down), ratio * math.exp(up)


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def predicted_statements(a_name: str, b_name: str, rows: tuple[PredictedSpeed, ...],
                         price_ratio: float | None) -> list[str]:
    """Plain-language lines: each prediction and ratio with its band, beside the datasheet ratio."""
    out: list[str] = []
    for row in rows:
        if row.ratio is None or row.ratio_low is None or row.ratio_high is None:
            missing = [f"{name}: {fig.note or 'no prediction'}" for name, fig in ((a_name, row.a), (b_name, row.b))
                       if not fig.value]
            out.append(f"Predicted {row.label}: no ratio ({'; '.join(missing)}).")
            continue
        assert row.a.value is not None and row.b.value is not None
        sheet = (f"; the datasheet ratio it would scale with is {row.datasheet_ratio:.2f}x"
                 if row.datasheet_ratio is not None else "")
        dollars = (f"; per dollar {row.ratio / price_ratio:.2f}x" if price_ratio else "")
        out.append(
            f"Predicted {row.label} ({row.workload}): {a_name} {_fmt(row.a.value)}, {b_name} {_fmt(row.b.value)} "
            f"{row.unit}, so {row.ratio:.2f}x (likely {row.ratio_low:.2f}-{row.ratio_high:.2f}x){sheet}{dollars}.")
    seen: list[str] = []  # each GPU's evidence once per kind of run (both serving rows share theirs)
    for row in rows:
        seen += [fig.evidence for fig in (row.a, row.b) if fig.evidence and fig.evidence not in seen]
    if seen:
        out.append("Measured runs behind these predictions: " + "; ".join(seen) + ".")
    return out
