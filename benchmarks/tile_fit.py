"""Fit the serving tile cost in-process (nothing written) and print every set's counts and the rows that move.

    PYTHONPATH=src python benchmarks/tile_fit.py VARIANT OUT.json

VARIANT: ``refit`` (the shipped model refitted from its starts), ``tile`` (``serve_tile_s`` fitted in place of
``fp4_matmul_efficiency``; every serving precision at ``serve_matmul_efficiency`` less the per-tile cost,
``Calibration.serve_product_efficiency``), or ``tile=SECONDS`` (the tile cost fixed, the rest refitted).
The rows (id, role, error) and the fitted constants go to OUT.json; ``--compare A.json B.json`` prints per-set counts
side by side and the rows whose error moved more than two points.
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import asdict, replace

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import SETS, set_of, stack_of_row
from anchorgpu.planner.speed.runs import load_runs


def run(variant: str, out: str) -> None:
    runs = load_runs()
    cal = calibration()
    if variant.startswith("tileK"):
        from anchorgpu.planner.speed import step_constants
        step_constants.TILE_REDUCTION_HIDDEN = True
        variant = variant[len("tileK"):] or "tile"
    if variant.startswith("tile"):
        serve = tuple(n for n in calibrate.FITTED["serve"] if n != "fp4_matmul_efficiency")
        if variant == "tile":
            serve += ("serve_tile_s",)
            calibrate.BOUNDS["serve_tile_s"] = (1e-8, 1e-5)  # 10 ns to 10 us a tile
        else:
            tile_s = float(variant.split("=")[1])
            cal = replace(cal, stacks={n: replace(k, serve_tile_s=tile_s) for n, k in cal.stacks.items()})
        calibrate.FITTED["serve"] = serve
    if variant != "shipped":
        cal = calibrate.fit(cal, runs, "cuda")
        cal = calibrate.fit(cal, runs, "rocm")
    rows = calibrate.report_rows(cal, runs)
    doc = {"constants": {n: asdict(k) for n, k in cal.stacks.items()},
           "rows": [{"id": r["id"], "role": r["role"], "error": r["error"]} for r in rows]}
    with open(out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def _sets(doc: dict) -> dict[str, tuple[int, int, float, float]]:
    by_id = {r.id: r for r in load_runs()}
    out: dict[str, list[float]] = {}
    for r in doc["rows"]:
        run_ = by_id[r["id"]]
        out.setdefault(f"{set_of(run_)} {stack_of_row(run_).upper()} {r['role']}", []).append(abs(r["error"]))
    order = {name: i for i, name in enumerate(SETS)}
    return {k: (sum(e <= 0.25 for e in v), len(v), statistics.median(v), max(v))
            for k, v in sorted(out.items(), key=lambda kv: (order.get(kv[0].split()[0], 99), kv[0]))}


def compare(paths: list[str]) -> None:
    docs = [json.load(open(p, encoding="utf-8")) for p in paths]
    sets = [_sets(d) for d in docs]
    print("| set | " + " | ".join(paths) + " |")
    for name in sets[0]:
        cells = [f"{s[name][0]}/{s[name][1]} ({s[name][2]:.1%}, {s[name][3]:.1%})" for s in sets]
        print(f"| {name} | " + " | ".join(cells) + " |")
    for role in ("fit", "holdout"):
        tot = [sum(v[0] for k, v in s.items() if k.endswith(role)) for s in sets]
        n = sum(v[1] for k, v in sets[0].items() if k.endswith(role))
        print(f"| total {role} | " + " | ".join(f"{t}/{n}" for t in tot) + " |")
    first, last = ({r["id"]: r for r in d["rows"]} for d in (docs[0], docs[-1]))
    print("\nrows moving more than 2 points (first -> last):")
    for rid, r in first.items():
        a, b = r["error"], last[rid]["error"]
        if abs(b - a) > 0.02:
            flag = " *crosses 25%*" if (abs(a) <= 0.25) != (abs(b) <= 0.25) else ""
            print(f"  {rid:28} {r['role']:8} {a:+7.1%} -> {b:+7.1%}{flag}")
    for d, p in zip(docs, paths, strict=True):
        k = d["constants"]["cuda"]
        print(p, {n: float(f"{v:.4g}") for n, v in k.items()})


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2:])
    else:
        run(sys.argv[1], sys.argv[2])
