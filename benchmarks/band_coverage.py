"""How many held-out measured runs fall inside the band a plan shows (a dev script, not a timed test).

    .venv/bin/python benchmarks/band_coverage.py

For every held-out row of ``planner/speed/data/measured_runs.json`` (its stored prediction in ``calibration.json``'s
``fit_report``), two bands are checked against the measured/predicted ratio:

* the stack-wide band of its kind (``Calibration.band``: the 10th-90th percentile of every held-out row of the software
  stack and kind, so about eight in ten of them by construction);
* that band widened by its own GPU's other held-out runs of the kind (``Band.holding``, as ``Calibration.band_for``
  widens a plan's), with the row itself left out of its GPU's median, so no row widens the band it is checked
  against; serving rows take their engine's runs where at least three others were held out, as plans do.

The roofline cap a plan puts on the band's top is left out here (it only narrows it), so the counts are per set of
rows; the sum is what the README quotes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibrate import band_kind
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.evidence import MIN_HELD_OUT, GpuEvidence, engine_kind, evidence_kind
from anchorgpu.planner.speed.rows_report import engine_of
from anchorgpu.planner.speed.runs import load_runs


def main() -> int:
    cal = calibration()
    runs = {r.id: r for r in load_runs()}
    rows = []
    for stored in read_calibration_doc()["fit_report"]:
        run = runs[stored["id"]]
        if run.role != "holdout":
            continue
        ratio = run.value / stored["predicted"] if run.higher_is_better else stored["predicted"] / run.value
        rows.append((run, ratio, get_gpu(run.row["gpu"]), evidence_kind(run.phase, band_kind(run)), engine_of(run)))
    held: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for run, ratio, gpu, kind, engine in rows:
        held[(gpu.name, kind)].append((run.id, ratio))
        if engine:
            held[(gpu.name, engine_kind(kind, engine))].append((run.id, ratio))
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for run, ratio, gpu, kind, engine in rows:
        band = cal.band(gpu, run.phase, band_kind(run))

        def others(key: tuple[str, str], me: str = run.id) -> list[float]:
            return [r for row_id, r in held.get(key, []) if row_id != me]

        own = others((gpu.name, engine_kind(kind, engine))) if engine and run.phase == "serve" else []
        if len(own) < MIN_HELD_OUT:
            own = others((gpu.name, kind))
        # the GPU's evidence without this row, widening the band as a plan's is (Band.holding)
        wide = band.holding(GpuEvidence(rows=len(own), held_out=len(own), basis="held-out",
                                        median=statistics.median(own), low=min(own), high=max(own))
                            if len(own) >= MIN_HELD_OUT else None)
        c = counts[str(run.row.get("set") or "core")]
        c[0] += 1
        c[1] += band.low <= ratio <= band.high
        c[2] += wide.low <= ratio <= wide.high
    print(f"{'set':24s} {'held out':>8s} {'in stack band':>14s} {'in GPU-widened band (row left out)':>36s}")
    for name, (n, inside, widened) in sorted(counts.items()):
        print(f"{name:24s} {n:8d} {inside:14d} {widened:36d}")
    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    print(f"{'all':24s} {total[0]:8d} {total[1]:14d} {total[2]:36d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
