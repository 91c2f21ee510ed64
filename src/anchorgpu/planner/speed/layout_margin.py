"""How far apart the calibration can tell two serving layouts of one model on one GPU: the margin the serving
chooser (:mod:`~anchorgpu.planner.speed.serving_layouts`) keeps the planner's first layout within.

Measured serving rows that differ only in layout (the same model, GPU, engine and workload at TP 1, 2, 4 and 8, or
over 1 to 8 pipeline stages) each fall some way from the model; the model ranks two of them wrongly when their two
measured/predicted ratios differ by more than the predicted gap between them. :func:`layout_spread` pairs every two
held-out rows of such a group (rows the fit never saw, as the bands are read from) and takes the median of
``|log(ratio_a) - log(ratio_b)|`` over all the pairs: a predicted advantage larger than ``exp(that) - 1`` is larger
than the usual error of the model's comparison between two layouts. The same median is also taken per class of the
worse link the pair's two layouts cross (:func:`~anchorgpu.planner.speed.topology.layout_margin_class`: ``scale-up``
where neither layout's tensor-, pipeline- or expert-parallel traffic leaves NVLink/xGMI/NVSwitch, ``scale-up-ep`` the
same where one of the two runs EP inside TP, ``scale-up-adp`` where one runs attention data parallelism (EP wider than
TP), ``pcie-or-network`` where one crosses PCIe or the network): the model separates TP splits and replicas on a
scale-up fabric much better than over PCIe, so one pooled value set mostly by PCIe pairs would keep slower layouts on
NVLink servers; and much better than it separates layouts whose attention replicas route tokens to experts on other
GPUs, so those are measured apart, as is EP inside TP. A class with fewer than
:data:`MIN_CLASS_PAIRS` pairs takes the pooled value. Computed by
``python -m anchorgpu.planner.speed.calibrate`` (printed, and written to ``data/calibration.json`` with ``--write``).
Dev tooling beside the fit. Pure.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.rows_report import engine_of, set_of, speed_ratio
from anchorgpu.planner.speed.runs import Run
from anchorgpu.planner.speed.topology import EXPERT_SPLITS, expert_split, layout_margin_class, serving_link_kind

__all__ = ["LINK_CLASSES", "MIN_CLASS_PAIRS", "TRAINING_FALLBACK", "LayoutSpread", "layout_groups", "layout_spread",
           "training_layout_groups", "training_layout_spread"]

LINK_CLASSES = ("scale-up", "scale-up-ep", "scale-up-adp", "pcie-or-network")
"""The classes of :func:`~anchorgpu.planner.speed.topology.layout_margin_class`, each given a margin."""

MIN_CLASS_PAIRS = 8
"""Fewer pairs than this in a class of link and its median says little (a few groups of one model and GPU): the class
takes the pooled margin instead. 8: the scale-up class's 10 pairs (three GPUs' TP sweeps) are the least counted on."""

_WORKLOAD_KEYS = ("gpu", "metric", "weights", "kv_cache", "prompt_tokens", "output_tokens", "concurrency", "batch",
                  "burst_requests", "absorbed_dequant")
"""What a serving row's workload is: rows equal on all of these (and model and engine) differ only in layout."""

_LAYOUT_KEYS = ("gpus", "tp", "pp", "ep")

_TRAIN_WORKLOAD_KEYS = ("gpu", "gpus", "seq_tokens", "global_batch_tokens", "precision", "kind", "train_stack",
                        "power_limit_w", "memory_bandwidth_tb_per_s", "network_gbit_per_s_per_gpu")
"""What a training row's workload is: rows equal on these (and model and source document) are one benchmark's
configurations of one job; the rest of a row (split, ZeRO, interleaving, overlaps, micro-batch, recompute, and the
gradient-reduce width, dispatcher or loss kernel its configuration ran with) is what they may differ in."""

_TRAIN_LAYOUT_KEYS = ("tp", "pp", "cp", "ep", "virtual_stages", "zero", "tp_overlap", "ep_overlap", "pipeline_layout",
                      "micro_batch", "recompute", "offload_activation_layers")

TRAINING_FALLBACK = "serving pooled"
"""What stands in for the training margin below :data:`MIN_CLASS_PAIRS` pairs: the serving chooser's pooled margin
(the model's usual disagreement between two layouts of one measured workload, most of its pairs on one server's
links, as a training layout's tensor and expert traffic is)."""


@dataclass(frozen=True, slots=True)
class LayoutSpread:
    """The median of ``|log(ratio_a / ratio_b)|`` over ``pairs`` pairs of rows in ``groups`` groups, as a fraction
    (``exp(median) - 1``, rounded up to a thousandth); ``by_set``: the same per set of rows (pairs, fraction);
    ``by_link``: per class of :data:`LINK_CLASSES` (pairs, the fraction in force: the class's own from
    :data:`MIN_CLASS_PAIRS` pairs, else ``margin``)."""

    margin: float
    groups: int
    pairs: int
    by_set: dict[str, tuple[int, float]]
    by_link: dict[str, tuple[int, float]] = field(default_factory=dict)


def _link_kind(run: Run) -> str:
    """The slowest link a measured serving row's layout crosses (:func:`serving_link_kind`, 8 GPUs a server as the
    speed model times it)."""
    r = run.row
    return serving_link_kind(get_gpu(r["gpu"]), int(r["tp"]), int(r.get("pp", 1)), int(r.get("ep", 1)))


def _key(run: Run) -> tuple[Any, ...]:
    r = run.row
    return (repr(sorted(r["model"].items())), engine_of(run), *(repr(r.get(k)) for k in _WORKLOAD_KEYS))


def _layout(run: Run) -> tuple[int, ...]:
    return tuple(int(run.row.get(k, 1)) for k in _LAYOUT_KEYS)


def layout_groups(runs: tuple[Run, ...]) -> list[list[Run]]:
    """The held-out serving rows grouped by model, engine and workload, only the groups with at least two layouts
    (one row a layout: the first)."""
    groups: dict[tuple[Any, ...], dict[tuple[int, ...], Run]] = {}
    for run in runs:
        if run.phase == "serve" and run.role == "holdout":
            groups.setdefault(_key(run), {}).setdefault(_layout(run), run)
    return [list(by_layout.values()) for by_layout in groups.values() if len(by_layout) >= 2]


def _fraction(logs: list[float]) -> float:
    return math.ceil((math.exp(statistics.median(logs)) - 1.0) * 1000 - 1e-9) / 1000


def layout_spread(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> LayoutSpread:
    """:class:`LayoutSpread` of the report rows (``report_rows``: each run's prediction) over :func:`layout_groups`.

    >>> from anchorgpu.planner.speed.runs import Run
    >>> def run(i, tp, value):
    ...     return Run(id=i, role="holdout", phase="serve", metric="tpot_s", value=value, source="", note="",
    ...                row={"model": {"registry": "m"}, "gpu": "h100", "tp": tp, "gpus": tp, "engine": "vllm"})
    >>> runs = (run("a", 1, 1.0), run("b", 2, 1.0), run("c", 4, 1.0))
    >>> rows = [{"id": "a", "predicted": 1.0}, {"id": "b", "predicted": 1.1}, {"id": "c", "predicted": 1.21}]
    >>> s = layout_spread(rows, runs)
    >>> (s.groups, s.pairs, s.margin)
    (1, 3, 0.1)
    >>> s.by_link  # H100 TP 2 and 4 on NVLink: a scale-up class of 3 pairs, too few, at the pooled value
    {'scale-up': (3, 0.1), 'scale-up-ep': (0, 0.1), 'scale-up-adp': (0, 0.1), 'pcie-or-network': (0, 0.1)}
    """
    predicted = {r["id"]: float(r["predicted"]) for r in rows}
    logs: list[float] = []
    per_set: dict[str, list[float]] = {}
    per_link: dict[str, list[float]] = {name: [] for name in LINK_CLASSES}
    groups = layout_groups(runs)
    for group in groups:
        ratios = [(math.log(speed_ratio(run, predicted[run.id])), _link_kind(run),
                   expert_split(int(run.row.get("tp", 1)), int(run.row.get("ep", 1)))) for run in group]
        for i, (a, link_a, ep_a) in enumerate(ratios):
            for b, link_b, ep_b in ratios[i + 1:]:
                logs.append(abs(a - b))
                per_set.setdefault(set_of(group[0]), []).append(abs(a - b))
                per_link[layout_margin_class(link_a, link_b, experts=max(ep_a, ep_b, key=EXPERT_SPLITS.index))].append(
                    abs(a - b))
    if not logs:
        return LayoutSpread(margin=0.0, groups=0, pairs=0, by_set={})
    pooled = _fraction(logs)
    return LayoutSpread(margin=pooled, groups=len(groups), pairs=len(logs),
                        by_set={name: (len(v), _fraction(v)) for name, v in sorted(per_set.items())},
                        by_link={name: (len(v), _fraction(v) if len(v) >= MIN_CLASS_PAIRS else pooled)
                                 for name, v in per_link.items()})


def _source_document(run: Run) -> str:
    """The document a row's figure is from: its source's repository and path (the first two words), e.g.
    ``pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md``: one benchmark's software and setup."""
    return " ".join(run.source.split()[:2])


def training_layout_groups(runs: tuple[Run, ...]) -> list[list[Run]]:
    """The held-out training rows grouped by source document, model and workload (:data:`_TRAIN_WORKLOAD_KEYS`),
    only the groups with at least two configurations (one row a configuration: the first)."""
    groups: dict[tuple[Any, ...], dict[tuple[Any, ...], Run]] = {}
    for run in runs:
        if run.phase == "train" and run.role == "holdout":
            r = run.row
            key = (_source_document(run), repr(sorted(r["model"].items())), *(repr(r.get(k)) for k in _TRAIN_WORKLOAD_KEYS))
            groups.setdefault(key, {}).setdefault(tuple(repr(r.get(k)) for k in _TRAIN_LAYOUT_KEYS), run)
    return [list(by_layout.values()) for by_layout in groups.values() if len(by_layout) >= 2]


def training_layout_spread(rows: list[dict[str, Any]], runs: tuple[Run, ...]) -> LayoutSpread:
    """:class:`LayoutSpread` of the report rows over :func:`training_layout_groups` (no classes of link: ``by_link``
    empty). ``margin``: the pooled median from :data:`MIN_CLASS_PAIRS` pairs, else 0 (the caller's fallback).

    >>> from anchorgpu.planner.speed.runs import Run
    >>> def run(i, pp, value):
    ...     return Run(id=i, role="holdout", phase="train", metric="tokens_per_s_per_gpu", value=value, source="o/r x.md",
    ...                note="", row={"model": {"registry": "m"}, "gpu": "h100", "gpus": 8, "tp": 1, "pp": pp})
    >>> runs = (run("a", 1, 1.0), run("b", 2, 1.0), run("c", 4, 1.0))
    >>> rows = [{"id": "a", "predicted": 1.0}, {"id": "b", "predicted": 1.1}, {"id": "c", "predicted": 1.21}]
    >>> s = training_layout_spread(rows, runs)
    >>> (s.groups, s.pairs, s.margin)  # 3 pairs: too few for a margin of its own
    (1, 3, 0.0)
    """
    predicted = {r["id"]: float(r["predicted"]) for r in rows}
    logs: list[float] = []
    per_set: dict[str, list[float]] = {}
    groups = training_layout_groups(runs)
    for group in groups:
        ratios = [math.log(speed_ratio(run, predicted[run.id])) for run in group]
        for i, a in enumerate(ratios):
            for b in ratios[i + 1:]:
                logs.append(abs(a - b))
                per_set.setdefault(set_of(group[0]), []).append(abs(a - b))
    return LayoutSpread(margin=_fraction(logs) if len(logs) >= MIN_CLASS_PAIRS else 0.0, groups=len(groups),
                        pairs=len(logs), by_set={name: (len(v), _fraction(v)) for name, v in sorted(per_set.items())})
