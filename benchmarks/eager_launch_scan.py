"""Scan the eager prompt-step launch cost (``benchmarks/eager_prompt_launch.patch``) over its one constant, on the
shipped steady state or on trtllm-bench's makespan (``benchmarks/trtllm_bench_makespan.py``). Dev tooling; writes
nothing but the JSON named. Findings: benchmarks/hardening/stop60_eagerstep.md.

    git apply benchmarks/eager_prompt_launch.patch
    PYTHONPATH=src .venv/bin/python benchmarks/eager_launch_scan.py steady OUT.json 0 20e-6 30e-6
    PYTHONPATH=src .venv/bin/python benchmarks/eager_launch_scan.py makespan OUT.json 0 29e-6 34e-6 40e-6
    PYTHONPATH=src .venv/bin/python benchmarks/eager_launch_scan.py moved OUT.json 0 3.4e-05
    git apply -R benchmarks/eager_prompt_launch.patch

Each value is ``eager_host_s_per_launch`` (an x86 host's seconds per kernel a layer counts, ``launches.py``; a Grace
host's is 2.75 times it, the stated host ratio). Per value: the fit and held-out rows within 25% and the sum over the
fit rows of log(predicted / measured)^2 (calibrate's loss, every other constant held at the shipped one). ``moved``:
the rows whose error moves by more than 2 points between two values of a saved scan.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.constants import StackConstants
from anchorgpu.planner.speed.rows_report import report_rows


def _makespan() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import trtllm_bench_makespan as tm

    serve = rs._serve

    def retimed(run: rs.Run, cal: Any) -> Any:
        if tm._bench(run):
            new, _ = tm.makespan_rate(run, cal, 0.0, steady=False)
            if new is not None:
                return new
        return serve(run, cal)

    rs._serve = retimed  # type: ignore[assignment]


def scan(out: str, values: list[float]) -> None:
    runs, base = rs.load_runs(), calibration()
    res: dict[str, dict[str, tuple[str, float]]] = {}
    for v in values:
        cal = replace(base, stacks={**base.stacks, "cuda": replace(base.stacks["cuda"], eager_host_s_per_launch=v)})
        r = {row["id"]: (row["role"], row["error"]) for row in report_rows(cal, runs)}
        res[repr(v)] = r
        fit = [e for role, e in r.values() if role == "fit"]
        held = [e for role, e in r.values() if role != "fit"]
        loss = sum(math.log(1.0 + e) ** 2 for e in fit)
        print(f"{v * 1e6:6.1f} us  fit {sum(abs(e) <= 0.25 for e in fit)}/{len(fit)}  "
              f"held out {sum(abs(e) <= 0.25 for e in held)}/{len(held)}  fit loss {loss:.4f}", flush=True)
    Path(out).write_text(json.dumps(res), encoding="utf-8")


def moved(path: str, a: str, b: str) -> None:
    res = json.loads(Path(path).read_text(encoding="utf-8"))
    for row, (role, e) in res[repr(float(b))].items():
        e0 = res[repr(float(a))][row][1]
        if abs(e - e0) > 0.02:
            print(f"{row:32} {role:8} {e0:+.1%} -> {e:+.1%}")


if __name__ == "__main__":
    if "eager_host_s_per_launch" not in StackConstants.__dataclass_fields__:
        sys.exit("apply benchmarks/eager_prompt_launch.patch first")
    mode, out, *rest = sys.argv[1:]
    if mode == "moved":
        moved(out, rest[0], rest[1])
    else:
        if mode == "makespan":
            _makespan()
        scan(out, [float(x) for x in rest])
