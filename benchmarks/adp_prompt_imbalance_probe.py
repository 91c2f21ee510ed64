"""Stop 63 probe (dev tooling, longctx63): the worst case of attention DP's prompt imbalance on the attention-DP rows
over more than one GPU (each prompt's attention run by one rank while the others wait: its attention FLOPs x tp in
the TP-restated step), each row's error before and after, and which cross 25%. Changes nothing on disk.

    PYTHONPATH=src python benchmarks/adp_prompt_imbalance_probe.py
"""

from __future__ import annotations

from typing import Any

from anchorgpu.planner.speed import batching
from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration

_ORIGINAL = batching._attention_flops
_FACTOR = {"prompt": 1.0}


def _scaled(*args: Any) -> tuple[float, float]:
    decode, prompt = _ORIGINAL(*args)
    return decode, prompt * _FACTOR["prompt"]


def main() -> None:
    batching._attention_flops = _scaled  # type: ignore[assignment]
    cal = calibration()
    runs = [r for r in rs.load_runs() if r.row.get("attention_dp_weights") and int(r.row.get("tp", 1)) > 1
            and r.metric == "max_output_tokens_per_s" and "bench_requests" in r.row]
    n_before = n_after = 0
    for r in runs:
        _FACTOR["prompt"] = 1.0
        eb = 100 * (rs.predict(r, cal) / r.value - 1)
        _FACTOR["prompt"] = float(r.row["tp"])
        ea = 100 * (rs.predict(r, cal) / r.value - 1)
        n_before, n_after = n_before + (abs(eb) <= 25), n_after + (abs(ea) <= 25)
        flag = " IN" if abs(eb) > 25 >= abs(ea) else " OUT" if abs(ea) > 25 >= abs(eb) else ""
        print(f"{r.id:28s} {r.role:8s} {eb:+6.1f} -> {ea:+6.1f}{flag}")
    print(f"within 25%: {n_before} -> {n_after} of {len(runs)}")
    batching._attention_flops = _ORIGINAL


if __name__ == "__main__":
    main()
