"""Refit the speed model's constants on the measured runs and print each row's error.

    python -m anchorgpu.planner.speed.calibrate            # report with the shipped constants
    python -m anchorgpu.planner.speed.calibrate --write    # refit, write data/calibration.json, report

The fit minimises the sum of squared ``log(predicted / measured)`` over the rows whose role is ``fit``,
separately for training and serving constants of the CUDA stack (Nelder-Mead, restarted, over an unbounded
coordinate that maps each constant inside its physical bounds, from the bounds' geometric means: the same
rows always give the same constants; :mod:`anchorgpu.planner.speed.fitting`). Rows whose role is ``holdout`` are never seen by the fit; they are
reported apart to show how well the model predicts runs it was not fitted on. The bands the planner
shows around each prediction are the 10th-90th percentile of ``measured / predicted`` over the held-out rows of
the phase, widened to include 1. Dev tooling: uses numpy (a dependency of the sweep), not the CLI.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from anchorgpu.planner.speed.calibration import calibration, parse_calibration, read_calibration_doc
from anchorgpu.planner.speed.constants import Band, StackConstants
from anchorgpu.planner.speed.evidence import engine_kind, evidence_kind, summarise
from anchorgpu.planner.speed.fitting import fit
from anchorgpu.planner.speed.layout_margin import (
    MIN_CLASS_PAIRS,
    TRAINING_FALLBACK,
    LayoutSpread,
    layout_spread,
    training_layout_spread,
)
from anchorgpu.planner.speed.rows_report import (
    SETS,
    band_kind,
    engine_of,
    markdown,
    report_rows,
    serving_kind,
    set_of,
    speed_ratio,
    stack_of_row,
    summary,
)
from anchorgpu.planner.speed.runs import Run, load_runs

__all__ = ["SETS", "band_kind", "main", "markdown", "report_rows", "serving_kind", "set_of", "stack_of_row"]


def _bands(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> dict[str, Band]:
    """Per phase, and per ``stack-phase`` where a stack has at least three rows of the phase: from the rows the
    fit never saw where there are at least three (a fitted row's residual understates the error, to nothing where
    a stack has as many constants as rows), else from all its rows."""
    by_id = {r.id: r for r in runs}
    groups: dict[str, list[float]] = {}
    held: dict[str, list[float]] = {}
    for row in rows:
        run = by_id[row["id"]]
        ratio = speed_ratio(run, row["predicted"])
        kind = band_kind(run)
        names: tuple[str, ...] = (row["phase"], f"{stack_of_row(run)}-{row['phase']}")
        if kind is not None:  # a kind's rows make its own band, not the rest's
            names = tuple(f"{name}-{kind}" for name in names)
        for name in names:
            groups.setdefault(name, []).append(ratio)
            if run.role == "holdout":
                held.setdefault(name, []).append(ratio)
    bands: dict[str, Band] = {}
    for name, every in sorted(groups.items()):
        if len(every) < 3:
            continue
        ratios = held[name] if len(held.get(name, ())) >= 3 else every
        q = statistics.quantiles(sorted(ratios), n=10, method="inclusive")
        # rounded outward to three places, so the percentiles the band is made of stay inside it
        bands[name] = Band(low=math.floor(min(q[0], 0.95) * 1000) / 1000, high=math.ceil(max(q[-1], 1.05) * 1000) / 1000)
    for name, band in list(bands.items()):  # a stack with few held-out rows keeps at least the phase's band
        parts = name.split("-")
        phase = "-".join(parts[1:]) if parts[0] in ("cuda", "rocm") else name
        if name != phase and phase in bands and len(held.get(name, ())) < FEW_HELD_OUT:
            bands[name] = Band(low=min(band.low, bands[phase].low), high=max(band.high, bands[phase].high))
    return bands


def _evidence(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per GPU (its catalog name) and kind of run (:data:`~anchorgpu.planner.speed.evidence.EVIDENCE_KINDS`): how its
    rows fell around the model, measured over predicted as a speed (:func:`~anchorgpu.planner.speed.evidence.summarise`)."""
    from anchorgpu.hardware import get_gpu

    by_id = {r.id: r for r in runs}
    ratios: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for row in rows:
        run = by_id[row["id"]]
        ratio = speed_ratio(run, row["predicted"])
        gpu, kind, engine = get_gpu(run.row["gpu"]).name, evidence_kind(run.phase, band_kind(run)), engine_of(run)
        for key in ((gpu, kind), *(((gpu, engine_kind(kind, engine)),) if engine else ())):
            fitted, held = ratios.setdefault(key, ([], []))
            (held if run.role == "holdout" else fitted).append(ratio)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (gpu, kind), (fitted, held) in sorted(ratios.items()):
        out.setdefault(gpu, {})[kind] = asdict(summarise(fitted, held))
    return out


def _layout_margin_line(spread: LayoutSpread) -> str:
    """The report's line of the serving chooser's margin, e.g. ``layout margin: 13.8% (median over 105 pairs ...)``."""
    sets = ", ".join(f"{name} {margin:.1%} ({pairs})" for name, (pairs, margin) in spread.by_set.items())
    links = ", ".join(f"{name} {margin:.1%} ({pairs}{'' if pairs >= MIN_CLASS_PAIRS else ', pooled'})"
                      for name, (pairs, margin) in spread.by_link.items())
    return (f"layout margin: {spread.margin:.1%} (median |log(ratio a / ratio b)| over {spread.pairs} pairs of "
            f"held-out serving rows that differ only in layout, {spread.groups} groups; by link: {links}; "
            f"by set: {sets})")


def _layout_margin_entry(spread: LayoutSpread) -> dict[str, Any]:
    """``layout_margin`` of ``data/calibration.json``: the value, how many pairs and groups it comes from, per class
    of link (the value in force) and per set."""
    return {"value": spread.margin, "pairs": spread.pairs, "groups": spread.groups,
            "min_class_pairs": MIN_CLASS_PAIRS,
            "by_link": {name: {"pairs": pairs, "value": margin} for name, (pairs, margin) in spread.by_link.items()},
            "by_set": {name: {"pairs": pairs, "value": margin} for name, (pairs, margin) in spread.by_set.items()},
            "source": LAYOUT_MARGIN_SOURCE}


def _training_margin_in_force(training: LayoutSpread, serving: LayoutSpread) -> float:
    """The training chooser's margin: its own median from :data:`MIN_CLASS_PAIRS` pairs, else the serving pooled one
    (:data:`~anchorgpu.planner.speed.layout_margin.TRAINING_FALLBACK`)."""
    return training.margin if training.pairs >= MIN_CLASS_PAIRS else serving.margin


def _training_margin_line(training: LayoutSpread, serving: LayoutSpread) -> str:
    """The report's line of the training chooser's margin, e.g. ``training layout margin: 10.0% (median ... 14 pairs``."""
    sets = ", ".join(f"{name} {margin:.1%} ({pairs})" for name, (pairs, margin) in training.by_set.items())
    own = (f"median |log(ratio a / ratio b)| over {training.pairs} pairs of held-out training rows of one benchmark "
           f"at two configurations, {training.groups} groups; by set: {sets}" if training.pairs >= MIN_CLASS_PAIRS else
           f"only {training.pairs} pairs of held-out training rows of one benchmark at two configurations, fewer than "
           f"{MIN_CLASS_PAIRS}: the {TRAINING_FALLBACK} margin stands in")
    return f"training layout margin: {_training_margin_in_force(training, serving):.1%} ({own})"


def _training_margin_entry(training: LayoutSpread, serving: LayoutSpread) -> dict[str, Any]:
    """``training_layout_margin`` of ``data/calibration.json``: the value in force, its pairs and groups, per set."""
    return {"value": _training_margin_in_force(training, serving), "pairs": training.pairs, "groups": training.groups,
            "min_pairs": MIN_CLASS_PAIRS,
            "by_set": {name: {"pairs": pairs, "value": margin} for name, (pairs, margin) in training.by_set.items()},
            "source": TRAINING_MARGIN_SOURCE}


TRAINING_MARGIN_SOURCE = (
    "computed by `python -m anchorgpu.planner.speed.calibrate` (its 'training layout margin' line; written here by "
    "--write) with the constants of this file: the held-out training rows of data/measured_runs.json grouped by "
    "source document (repository and path), model, GPU and its stated clocks, GPU count, sequence, global batch, "
    "precision, kind and stack, only the groups with at least two configurations of what the chooser picks (split, "
    "ZeRO stage, interleaving, overlaps, micro-batch, recompute); for each pair of rows in a group, |log of the ratio "
    "of their two measured/predicted speed ratios|; the value is exp(median over all pairs) - 1, rounded up to a "
    "thousandth (anchorgpu.planner.speed.layout_margin.training_layout_spread); with fewer than 'min_pairs' pairs the "
    "serving pooled 'layout_margin' value stands in. The training chooser (anchorgpu.planner.speed.layouts) keeps "
    "its first layout that fits unless another is predicted faster than it by more than this fraction, or is "
    "simpler and faster")


LAYOUT_MARGIN_SOURCE = (
    "computed by `python -m anchorgpu.planner.speed.calibrate` (its 'layout margin' line; written here by --write) "
    "with the constants of this file: the held-out serving rows of data/measured_runs.json grouped by model, GPU, "
    "engine and workload (prompt and output tokens, metric, weights, KV cache, requests in flight), only the groups "
    "with at least two layouts (GPUs, TP, PP, EP); for each pair of rows in a group, |log of the ratio of their two "
    "measured/predicted speed ratios|; the value is exp(median over all pairs) - 1, rounded up to a thousandth "
    "(anchorgpu.planner.speed.layout_margin.layout_spread). 'by_link': the same median over the pairs of each class "
    "of the worse link the pair's two layouts' tensor-, pipeline- and expert-parallel traffic crosses "
    "(anchorgpu.planner.speed.topology.layout_margin_class: 'scale-up' where neither leaves NVLink/xGMI/NVSwitch, "
    "'scale-up-ep' the same where one of the two runs EP inside TP, 'scale-up-adp' where one runs attention data "
    "parallelism (EP wider than TP), 'pcie-or-network' where one "
    "crosses PCIe or the network), the pooled value where a class has fewer than "
    "'min_class_pairs' pairs. The serving chooser keeps the planner's first layout unless another is predicted "
    "faster than it by more than the fraction of the two layouts' class")


FEW_HELD_OUT = 10
"""Below this many held-out rows, a stack's own percentiles say little: its band is widened to its phase's."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m anchorgpu.planner.speed.calibrate", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="refit and write data/calibration.json")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--markdown", action="store_true", help="print the README's accuracy table (core rows)")
    parser.add_argument("--all", action="store_true", help="with --markdown: every row, not only the core ones")
    args = parser.parse_args(argv)
    runs = load_runs()
    cal = calibration()
    if args.write:
        cal = fit(cal, runs, "cuda")
        cal = fit(cal, runs, "rocm")
        doc = read_calibration_doc()
        for name in ("cuda", "rocm"):
            for key in StackConstants.__dataclass_fields__:
                doc["stacks"][name][key] = float(f"{float(getattr(cal.stacks[name], key)):.10g}")  # 10 significant digits
        rows = report_rows(cal, runs)
        bands = _bands(rows, runs)
        doc["bands"] = {k: {"low": b.low, "high": b.high} for k, b in bands.items()}
        doc["evidence"] = _evidence(rows, runs)
        doc["layout_margin"] = _layout_margin_entry(layout_spread(rows, runs))
        doc["training_layout_margin"] = _training_margin_entry(training_layout_spread(rows, runs),
                                                               layout_spread(rows, runs))
        doc["fit_report"] = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items() if k != "source"}
                             for r in rows]
        path = Path(str(resources.files("anchorgpu.planner.speed").joinpath("data", "calibration.json")))
        path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        cal = parse_calibration(doc)
    rows = report_rows(cal, runs)
    if args.json:
        print(json.dumps(rows, indent=1))
    elif args.markdown:
        print(markdown(rows, runs, tuple(SETS) if args.all else ("core",)))
    else:
        print(summary(rows, runs))
        print(_layout_margin_line(layout_spread(rows, runs)))
        print(_training_margin_line(training_layout_spread(rows, runs), layout_spread(rows, runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
