"""Stop 63 probe (dev tooling): refit ``moe_expert_half_tokens`` alone on the MoE serving fit rows
(``fitting._group_rows(runs, "serve-moe", "cuda")``, the group ``calibrate --write`` fits it on, same log-squared
loss), then count every row within 25% against a saved ``calibrate`` output. For a change that moves only MoE
serving rows this is ``--write``'s answer without the other groups' passes (checked on stop 63's request bound:
81.10 and the same five rows crossing as the full refit; on main it returns main's 93.69). To judge
``adp_request_bound_group_limits.patch``: ``git apply`` it, then run this.

    PYTHONPATH=src python benchmarks/moe_half_refit_probe.py --base BEFORE.txt   # BEFORE.txt: `python -m anchorgpu.planner.speed.calibrate > BEFORE.txt`
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace

from _row_errors import golden_log, read_errors

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import Calibration
from anchorgpu.planner.speed.fitting import _group_rows
from anchorgpu.planner.speed.runs import load_runs, predict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="a saved `calibrate` report to compare with")
    args = parser.parse_args()
    runs, cal0 = load_runs(), calibration()
    rows = _group_rows(runs, "serve-moe", "cuda")

    def with_half(h: float) -> Calibration:
        k = cal0.stacks["cuda"]
        return replace(cal0, stacks={**cal0.stacks, "cuda": replace(k, moe_expert_half_tokens=h)})

    def loss(h: float) -> float:
        c = with_half(h)
        return sum(math.log(predict(r, c) / r.value) ** 2 for r in rows)

    h = golden_log(loss, 20.0, 400.0, 22)  # golden section on log(half)
    shipped = cal0.stacks["cuda"].moe_expert_half_tokens
    print(f"{len(rows)} MoE serving fit rows; shipped {shipped:.2f} loss {loss(shipped):.4f}; refit {h:.2f} "
          f"loss {loss(h):.4f}")
    base = read_errors(args.base)
    cal, counts = with_half(h), {"fit": [0, 0], "holdout": [0, 0]}
    for run in runs:
        err, before = (predict(run, cal) / run.value - 1) * 100, base[run.id]
        counts[run.role][0] += abs(before) <= 25
        counts[run.role][1] += abs(err) <= 25
        if (abs(before) <= 25) != (abs(err) <= 25):
            print(f"{run.id:28s} {run.role:8s} {before:+6.1f} -> {err:+6.1f}")
    print("within 25%, base -> refit:", counts)


if __name__ == "__main__":
    main()
