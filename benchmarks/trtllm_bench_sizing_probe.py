"""Probe (stop 61, benchmarks/hardening/stop61_trtmem.md): calibrate with every trtllm-bench row
(``engine_limits: trtllm-bench``, TensorRT-LLM's perf-overview page, 328 rows) planned as TensorRT-LLM sizes its KV
cache: ``Workload.engine="trtllm"`` through the row's ``kv_free_fraction`` (``runs.serve_plan_of``), at the page's
``--kv_cache_free_gpu_mem_fraction 0.95`` ("In many cases, we also use a higher KV cache percentage by setting
`--kv_cache_free_gpu_mem_fraction 0.95` ... better performance than the default setting of `0.90`. We fall back to
`0.90` or lower if out-of-memory errors are encountered", docs/source/performance/perf-overview.md), or at a fraction
given as ``--fraction F`` (0.90: trtllm-bench's default, ``bench/dataclasses/configuration.py`` ``kv_cache_percent``).
Dev tooling: patches ``runs.serve_plan_of`` in memory; writes nothing unless given ``--write`` (then restore
data/calibration.json). The other variant, vLLM's rule without its sampler term, is
``benchmarks/makespan_no_sampler_probe.py`` (it runs on main without the makespan patch too).

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_bench_sizing_probe.py [--fraction 0.90] [--write]
"""
from __future__ import annotations

import sys
from typing import Any

from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed import runs as rs

_plan_of = rs.serve_plan_of
_FRACTION = [0.95]


def plan_of(r: dict[str, Any]) -> Any:
    if r.get("engine_limits") == "trtllm-bench" and "kv_free_fraction" not in r:
        r = dict(r, kv_free_fraction=_FRACTION[0])
    return _plan_of(r)


if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--fraction" in argv:
        i = argv.index("--fraction")
        _FRACTION[0] = float(argv[i + 1])
        del argv[i:i + 2]
    rs.serve_plan_of = plan_of  # type: ignore[assignment]
    sys.exit(calibrate.main(argv))
