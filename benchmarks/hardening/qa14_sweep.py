"""Stop 55 qa14: property sweeps over plan / recommend / gpus compare (CLI in-process and the HTTP API).

Run: PYTHONPATH=src python benchmarks/hardening/qa14_sweep.py [section ...]
Prints one line per violated property; nothing when all hold.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from typing import Any

from anchorgpu.cli import main
from anchorgpu.planner.speed.figures import MODEL_FLOP_FIGURES, TIME_FIGURES


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:  # pragma: no cover
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def plan_json(*argv: str) -> Any:
    code, out, err = cli("plan", *argv, "--json")
    if code != 0:
        return {"_code": code, "_err": err.strip()}
    return json.loads(out)


def problems(tag: str, answer: Any) -> list[str]:
    """Band and breakdown faults in one plan answer."""
    bad: list[str] = []
    perf = answer.get("performance") or {}
    for key, value in perf.items():
        if isinstance(value, float) and not math.isfinite(value):
            bad.append(f"{tag}: {key} = {value}")
        low, high, ceil = perf.get(key + "_low"), perf.get(key + "_high"), perf.get(key + "_ceiling")
        if isinstance(value, (int, float)) and isinstance(low, (int, float)) and isinstance(high, (int, float)):
            if not low <= value * (1 + 1e-9) or not value <= high * (1 + 1e-9):
                bad.append(f"{tag}: {key} band {low:.4g} <= {value:.4g} <= {high:.4g} broken")
            if isinstance(ceil, (int, float)) and ceil:
                is_time = key in TIME_FIGURES
                if is_time and ceil > low * (1 + 1e-9):
                    bad.append(f"{tag}: time {key} floor {ceil:.4g} above low {low:.4g}")
                if not is_time and key not in MODEL_FLOP_FIGURES and high > ceil * (1 + 1e-9):
                    bad.append(f"{tag}: rate {key} high {high:.4g} above ceiling {ceil:.4g}")
    b = perf.get("step_time_breakdown_s")
    if b and perf.get("step_time_s"):
        if abs(sum(b.values()) - perf["step_time_s"]) > 1e-6 * perf["step_time_s"]:
            bad.append(f"{tag}: breakdown {sum(b.values()):.6g} != step {perf['step_time_s']:.6g}")
    m, mm = perf.get("output_tokens_per_s"), perf.get("max_output_tokens_per_s")
    if isinstance(m, (int, float)) and isinstance(mm, (int, float)) and mm < m * (1 - 1e-9):
        bad.append(f"{tag}: max_output {mm:.4g} < output {m:.4g}")
    return bad


if __name__ == "__main__":
    print("harness only; see /tmp/qa14 scripts")
