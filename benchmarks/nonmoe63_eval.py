"""Stop 63 probe (dev tooling, nonmoe63): every serving row of the inferencemax, inferencemax-trt-moe, trtllm-moe and
trtllm-table sets predicted on this tree (``runs.predict``) against a saved ``calibrate`` output (main's errors), with
the rows that cross 25% and the within-25% counts per role; ``--all`` takes every serving row.

    PYTHONPATH=src python benchmarks/nonmoe63_eval.py --base BEFORE.txt [--all] [--show PATTERN]
"""

from __future__ import annotations

import argparse
import re

from _row_errors import read_errors

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

SETS = ("inferencemax", "inferencemax-trt-moe", "trtllm-moe", "trtllm-table")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", required=True, help="a saved `calibrate` report to compare with")
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--show", default="")
    parser.add_argument("--save", default="", help="write this tree's errors here (a file --base can read)")
    args = parser.parse_args()
    base = read_errors(args.base)
    saved = []
    cal, counts = calibration(), {"fit": [0, 0, 0], "holdout": [0, 0, 0]}
    for run in load_runs():
        if run.phase != "serve" or (not args.all and run.row.get("set") not in SETS):
            continue
        err, before = (predict(run, cal) / run.value - 1) * 100, base[run.id]
        counts[run.role][0] += abs(before) <= 25
        counts[run.role][1] += abs(err) <= 25
        counts[run.role][2] += 1
        saved.append(f"{run.id} {run.role} serve - - - {err:+.2f}%")
        if (abs(before) <= 25) != (abs(err) <= 25) or (args.show and re.search(args.show, run.id)):
            flag = "" if (abs(before) <= 25) == (abs(err) <= 25) else ("IN " if abs(err) <= 25 else "OUT")
            print(f"{run.id:34s} {run.role:8s} {before:+6.1f} -> {err:+6.1f} {flag}")
    print("within 25%, base -> here (of n):", counts)
    if args.save:
        with open(args.save, "w") as f:
            f.write("\n".join(saved) + "\n")


if __name__ == "__main__":
    main()
