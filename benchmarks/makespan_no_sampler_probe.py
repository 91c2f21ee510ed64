"""Probe (stop 61, benchmarks/hardening/stop61_makespan.md section 6): calibrate with the trtllm-bench rows
(``engine_limits: trtllm-bench``) planned without vLLM's sampler warm-up term. Those rows are sized by vLLM's rule
(``runs.serve_plan_of``: no ``kv_free_fraction``), which holds ``sequences x vocab x 35`` bytes of sampler logits
(``memory.activations.sampler_activation_bytes``; 17.1 GiB a GPU for Llama 3.1 405B at trtllm-bench's batch of 4,096),
but TensorRT-LLM's profiling pass runs context requests only (``serving_engine._engine_footprint``'s own note, the
reason a ``Workload.engine="trtllm"`` plan holds 0 there). Dev tooling: patches two functions in memory, writes
nothing unless given ``--write`` (then restore data/calibration.json).

    git apply benchmarks/makespan_combined.patch
    PYTHONPATH=src .venv/bin/python benchmarks/makespan_no_sampler_probe.py [--write]
"""
from __future__ import annotations

import sys
from typing import Any

import anchorgpu.planner.inference as inference
from anchorgpu.planner import serving_engine
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed import runs as rs

_BENCH = [False]  # True while a trtllm-bench row is planned
_sampler = serving_engine.mm.sampler_activation_bytes
_memoised = inference.engine_memory
_plan_of = rs.serve_plan_of


def sampler(*, sequences: int, vocab: int) -> int:
    return 0 if _BENCH[0] else _sampler(sequences=sequences, vocab=vocab)


def engine_memory(*args: Any) -> Any:
    # unmemoised while a bench row is planned, so no vLLM row shares its footprint
    return serving_engine.engine_memory.__wrapped__(*args) if _BENCH[0] else _memoised(*args)  # type: ignore[attr-defined]


def plan_of(r: dict[str, Any]) -> Any:
    _BENCH[0] = r.get("engine_limits") == "trtllm-bench"
    try:
        return _plan_of(r)
    finally:
        _BENCH[0] = False


if __name__ == "__main__":
    serving_engine.mm.sampler_activation_bytes = sampler  # type: ignore[assignment]
    inference.engine_memory = engine_memory  # type: ignore[assignment]
    rs.serve_plan_of = plan_of  # type: ignore[assignment]
    sys.exit(calibrate.main(sys.argv[1:]))
