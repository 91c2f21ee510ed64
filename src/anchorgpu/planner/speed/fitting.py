"""The Nelder-Mead fit of the speed model's constants on the measured runs' ``fit`` rows.

Minimises the sum of squared ``log(predicted / measured)`` over the rows whose role is ``fit``, separately for
training and serving constants of the CUDA stack (Nelder-Mead, restarted, over an unbounded coordinate that maps
each constant inside its physical bounds, from the bounds' geometric means: the same rows always give the same
constants). Driven by :mod:`anchorgpu.planner.speed.calibrate` (``--write``). Dev tooling: uses numpy.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from anchorgpu.planner.speed.constants import Calibration, StackConstants
from anchorgpu.planner.speed.rows_report import band_kind, stack_of_row
from anchorgpu.planner.speed.runs import Run, predict

__all__ = ["BOUNDS", "FITTED", "FITTED_FEW", "fit"]

FITTED: dict[str, tuple[str, ...]] = {
    "train": ("train_matmul_efficiency", "train_matmul_half_width", "fp8_matmul_efficiency",
              "elementwise_bytes_per_hidden", "pytorch_elementwise_bytes_per_hidden"),
    "serve": ("decode_mbu", "serve_matmul_efficiency", "serve_matmul_half_width", "roofline_exponent", "per_step_s",
              "per_layer_step_s", "fp4_matmul_efficiency"),
    "serve-moe": ("moe_expert_half_tokens",),
    "train-moe": ("moe_host_s_per_expert_gemm",),
}
"""Each group is fitted on its own rows (:func:`_group_rows`): training, dense serving, and the MoE serving rows,
which fit only the MoE term (so a mixture of experts' rows never move a dense model's figures), and the MoE training
rows, which fit only the host time of the experts' launches (``experts.expert_launch_s``)."""
BOUNDS: dict[str, tuple[float, float]] = {
    # physical limits, not tuning: no kernel beats the datasheet, achieved HBM bandwidth tops out near 93%
    # (STREAM-like copies on H100/MI300X), a kernel launch costs microseconds, a step's fixed cost is below 20 ms
    "train_matmul_efficiency": (0.3, 0.95), "train_matmul_half_width": (1.0, 4000.0),
    "fp8_matmul_efficiency": (0.2, 0.95), "fp4_matmul_efficiency": (0.1, 0.95), "elementwise_bytes_per_hidden": (1.0, 200.0),
    # PyTorch-native stacks run norms, activations, rotary and casts as more, separately launched kernels (eager, or
    # partly fused by torch.compile): up to five times the fused stack's traffic
    "pytorch_elementwise_bytes_per_hidden": (1.0, 1000.0),
    "serve_matmul_half_width": (1.0, 8000.0), "roofline_exponent": (1.0, 64.0),
    "decode_mbu": (0.5, 0.93), "serve_matmul_efficiency": (0.2, 0.95), "per_step_s": (2e-4, 0.02),
    "per_layer_step_s": (2e-6, 6e-5), "scaleup_latency_s": (5e-6, 2e-4),
    # a grouped GEMM's tile is 64-256 rows; from one row an expert to far more than a step's tokens
    "moe_expert_half_tokens": (1.0, 2048.0),
    # a kernel launch through PyTorch costs microseconds; a product with its FP8 quantisation and allocations some tens
    "moe_host_s_per_expert_gemm": (1e-6, 1e-3),
}


def _from_z(name: str, z: float) -> float:
    """A constant from its unbounded fitting coordinate: ``lo * (hi/lo)^sigmoid(z)``, inside its physical bounds
    everywhere (so the objective has no flat region beyond a bound), the bounds' geometric mean at ``z = 0``."""
    lo, hi = BOUNDS[name]
    return float(lo * (hi / lo) ** (1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))))


RESTARTS = 4
"""Nelder-Mead runs per group, each from the previous one's best point (a fresh simplex escapes a collapsed one)."""

FIT_STARTS = (0.0, -1.5, 1.5)
"""The fitting coordinates every group starts from, each constant alike: the bounds' geometric mean, then a point
towards each bound. A simplex that drives a constant onto its bound stops there (the coordinate's map is flat far
from the middle), so one start can end in a worse corner: the training fit of stop 39 left
``train_matmul_half_width`` at its 1.0 floor with a loss of 0.091 where another start reaches 0.076."""


def _with(cal: Calibration, stack: str, names: tuple[str, ...], values: list[float]) -> Calibration:
    k = cal.stacks[stack]
    clipped = {n: min(max(v, BOUNDS[n][0]), BOUNDS[n][1]) for n, v in zip(names, values, strict=True)}
    return replace(cal, stacks={**cal.stacks, stack: replace(k, **clipped)})


def _loss(cal: Calibration, rows: list[Run]) -> float:
    total = 0.0
    for run in rows:
        value = predict(run, cal)
        if not math.isfinite(value) or value <= 0:
            return math.inf
        total += math.log(value / run.value) ** 2
    return total


def _nelder_mead(f: Any, x0: list[float], iterations: int = 300) -> list[float]:
    """Minimise ``f`` over R^n from ``x0`` (the textbook simplex method; no dependency on scipy)."""
    import numpy as np

    n = len(x0)
    simplex = [np.array(x0, dtype=float)]
    for i in range(n):
        x = np.array(x0, dtype=float)
        x[i] += 0.25
        simplex.append(x)
    values = [f(list(x)) for x in simplex]
    for _ in range(iterations):
        order = np.argsort(values)
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = np.mean(simplex[:-1], axis=0)
        worst = simplex[-1]
        reflected = centroid + (centroid - worst)
        fr = f(list(reflected))
        if fr < values[0]:
            expanded = centroid + 2.0 * (centroid - worst)
            fe = f(list(expanded))
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = centroid + 0.5 * (worst - centroid)
            fc = f(list(contracted))
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best + 0.5 * (x - best) for x in simplex]
                values = [f(list(x)) for x in simplex]
        if max(values) - min(values) < 1e-9:
            break
    return list(simplex[int(np.argmin(values))])


FITTED_FEW: dict[str, tuple[str, ...]] = {
    "train": ("fp8_matmul_efficiency",),
    "serve": ("serve_matmul_efficiency", "per_layer_step_s", "decode_mbu"),
}
"""A stack with only a few rows (ROCm) refits these from the CUDA values: its products' share of peak, its fixed
cost per layer and the share of the memory bandwidth its decode steps reach (a stack's kernels, not the GPU's
datasheet, set how much of it a weight read gets); the rest keep CUDA's, and its BF16 training efficiency moves with
its FP8 one (the stated assumption that the stack's gap is the same for both). A fourth serving constant (the
per-step cost) was tried and over-fitted the seven ROCm serving rows: per-layer cost went to its 2 us floor,
per-step cost to 4.1 ms, and InferenceMAX's held-out ROCm rows went from 4 of 8 within 25% to 1 of 8."""


MAX_PASSES = 4
"""The training and serving groups share constants (the optimizer update reads memory at ``decode_mbu``; FP8
serving products scale by the training FP8/BF16 ratio), so the CUDA fit repeats both until neither moves."""


def fit(cal: Calibration, runs: tuple[Run, ...], stack: str = "cuda") -> Calibration:
    """``cal`` with the fitted constants of ``stack`` refitted on the ``fit`` rows of that stack: for CUDA the
    fixed point of fitting training then serving, so refitting the shipped constants gives them back."""
    if stack != "cuda":
        return _fit_once(cal, runs, stack)
    # every fitted constant starts from its bounds' geometric mean, not from the file: the passes stop within a
    # tolerance, so a loop started from the last fit's constants came back to a neighbouring point (two shipped
    # states took turns at --write, about 1e-5 apart); from one start it is one answer
    names = tuple(n for group in FITTED.values() for n in group)
    cal = _with(cal, stack, names, [_from_z(n, 0.0) for n in names])
    for _ in range(MAX_PASSES):
        new = _fit_once(cal, runs, stack)
        before, after = cal.stacks[stack], new.stacks[stack]
        cal = new
        if all(math.isclose(getattr(before, n), getattr(after, n), rel_tol=1e-3) for n in StackConstants.__dataclass_fields__):
            break
    return cal


def _fit_once(cal: Calibration, runs: tuple[Run, ...], stack: str) -> Calibration:
    groups = FITTED if stack == "cuda" else FITTED_FEW
    if stack != "cuda":
        cal = replace(cal, stacks={**cal.stacks, stack: cal.stacks["cuda"]})
    for group, names in groups.items():
        rows = _group_rows(runs, group, stack)
        if not rows:
            continue

        def objective(z: list[float], names: tuple[str, ...] = names, rows: list[Run] = rows,
                      base: Calibration = cal) -> float:
            return _loss(_with(base, stack, names, [_from_z(n, v) for n, v in zip(names, z, strict=True)]), rows)

        # from fixed starts (the bounds' geometric means and points either side of them), never from the shipped
        # values: reproducible; the lowest loss wins
        ends = []
        for start in FIT_STARTS:
            end = [start] * len(names)
            for _ in range(RESTARTS):
                end = _nelder_mead(objective, end)
            ends.append((objective(end), end))
        best = min(ends, key=lambda pair: pair[0])[1]
        cal = _with(cal, stack, names, [_from_z(n, v) for n, v in zip(names, best, strict=True)])
        if stack != "cuda" and group == "train":
            # before the serving fit: serving's FP8/FP4 products run at serve_matmul_efficiency times
            # fp8/bf16 (Calibration.low_precision_ratio), so the BF16 figure must be final when serving is fitted
            k, cuda = cal.stacks[stack], cal.stacks["cuda"]
            scaled = cuda.train_matmul_efficiency * k.fp8_matmul_efficiency / cuda.fp8_matmul_efficiency
            cal = replace(cal, stacks={**cal.stacks, stack: replace(k, train_matmul_efficiency=min(scaled, 0.95))})
    return cal


def _group_rows(runs: tuple[Run, ...], group: str, stack: str) -> list[Run]:
    """The ``fit`` rows of ``stack`` a group of :data:`FITTED` is fitted on: its phase's, the MoE serving rows apart
    (``serve-moe``) from the rest."""
    phase, _, kind = group.partition("-")
    return [r for r in runs if r.role == "fit" and r.phase == phase and stack_of_row(r) == stack
            and (band_kind(r) == "moe") == (kind == "moe")]

