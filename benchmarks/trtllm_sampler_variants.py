"""The TensorRT-LLM rows' sampler reserve, taken out two ways (benchmarks/moe_small_batch_findings.md, Stop 61).
Dev tooling; changes no constant and writes nothing outside /tmp.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_sampler_variants.py base|nosampler|trtrule [refit]

``nosampler``: the rows planned with vLLM's memory model (``engine_limits: trtllm-bench`` and ``engine: trtllm``
without ``kv_free_fraction``) keep vLLM's budget (``gpu_memory_utilization`` of the whole memory) but lose the sampler
term (``serving_engine._engine_footprint``'s ``35 B x min(tokens, seqs) x vocab``). ``trtrule``: the trtllm-bench rows
get ``kv_free_fraction`` equal to their stated 0.95, i.e. TensorRT-LLM's own rule (``_torch/pyexecutor/_util.py``
``_cal_max_tokens``: the fraction of what the profiling pass leaves free; no sampler term). ``refit`` refits the CUDA
and ROCm constants in memory first (``fitting.fit``, a few minutes). Prints calibrate's per-set lines and the
constants, and dumps the rows to /tmp/trtsampler_rows_<variant>_<shipped|refit>.json.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from anchorgpu.planner import serving_engine as se
from anchorgpu.planner.speed import rows_report as rr
from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration


def _vllm_planned_trt(r: dict[str, Any]) -> bool:
    return "kv_free_fraction" not in r and (r.get("engine_limits") == "trtllm-bench" or r.get("engine") == "trtllm")


def _drop_sampler() -> None:
    """Patch the footprint so the rows of :func:`_vllm_planned_trt` plan without the sampler term (the engine memo
    is keyed on ``gpu_memory_utilization`` too, and no vLLM row shares their 0.95; checked: no other row moves)."""
    on = {"flag": False}
    footprint, plan_of = se._engine_footprint, rs.serve_plan_of

    def patched_footprint(*a: Any, **k: Any) -> Any:
        w, p, s, n, t = footprint(*a, **k)
        return (w, p, 0, n, dict(t, sampler_logits_bytes=0)) if on["flag"] else (w, p, s, n, t)

    def patched_plan_of(r: dict[str, Any]) -> Any:
        on["flag"] = _vllm_planned_trt(r)
        try:
            return plan_of(r)
        finally:
            on["flag"] = False

    se._engine_footprint = patched_footprint
    rs.serve_plan_of = patched_plan_of


def main(variant: str, refit: bool) -> None:
    if variant == "nosampler":
        _drop_sampler()
    elif variant == "trtrule":
        for run in rs.load_runs():
            if run.row.get("engine_limits") == "trtllm-bench":
                run.row["kv_free_fraction"] = float(run.row["gpu_memory_utilization"])
    elif variant != "base":
        raise SystemExit(f"unknown variant {variant!r}")
    runs, cal = rs.load_runs(), calibration()
    if refit:
        from anchorgpu.planner.speed.fitting import fit

        cal = fit(fit(cal, runs, "cuda"), runs, "rocm")
        st = cal.stacks["cuda"]
        print("CUDA constants:", {k: round(float(getattr(st, k)), 4) for k in st.__dataclass_fields__})
    rows = rr.report_rows(cal, runs)
    print(rr.summary(rows, runs))
    with open(f"/tmp/trtsampler_rows_{variant}_{'refit' if refit else 'shipped'}.json", "w", encoding="utf-8") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] == ["refit"])
