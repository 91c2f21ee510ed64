"""Stop 63 probe (dev tooling, h100mem63): the trtllm-bench attention-DP MoE rows on the given GPUs sized as
TensorRT-LLM sizes its cache (``kv_free_fraction`` F: ``_torch/pyexecutor/_util.py``, a fraction of the memory its
profiling pass leaves free), each row's error before and after, and which cross 25%. Changes nothing on disk.

    PYTHONPATH=src python benchmarks/h100_adp_fraction_probe.py 0.6 h100-sxm     # the shipped value: 22/22
    PYTHONPATH=src python benchmarks/h100_adp_fraction_probe.py 0.4 h100-sxm     # the sensitivity sweep 0.40-0.60
    PYTHONPATH=src python benchmarks/h100_adp_fraction_probe.py 0.8 h200         # H200: 29 -> 29 of 30
"""

from __future__ import annotations

import sys

from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration


def main() -> None:
    fraction, gpus = float(sys.argv[1]), sys.argv[2].split(",")
    cal = calibration()
    runs = [r for r in rs.load_runs() if r.row.get("attention_dp_weights") and r.row["gpu"] in gpus
            and r.metric == "max_output_tokens_per_s"]
    before = {r.id: rs.predict(r, cal) for r in runs}
    saved = {r.id: r.row.get("kv_free_fraction") for r in runs}
    for r in runs:
        r.row["kv_free_fraction"] = fraction
    rs._serve_plan.cache_clear()
    n_before = n_after = 0
    for r in runs:
        eb, ea = 100 * (before[r.id] / r.value - 1), 100 * (rs.predict(r, cal) / r.value - 1)
        n_before, n_after = n_before + (abs(eb) <= 25), n_after + (abs(ea) <= 25)
        flag = " IN" if abs(eb) > 25 >= abs(ea) else " OUT" if abs(ea) > 25 >= abs(eb) else ""
        print(f"{r.id:26s} {r.role:8s} {eb:+6.1f} -> {ea:+6.1f}{flag}")
    print(f"within 25%: {n_before} -> {n_after} of {len(runs)}")
    for r in runs:  # restore the rows as loaded
        if saved[r.id] is None:
            r.row.pop("kv_free_fraction")
        else:
            r.row["kv_free_fraction"] = saved[r.id]
    rs._serve_plan.cache_clear()


if __name__ == "__main__":
    main()
