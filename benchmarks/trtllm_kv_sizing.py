"""The KV cache of the trtllm-bench rows under two sizing rules (benchmarks/moe_small_batch_findings.md, Stop 56).
Dev tooling; changes no constant and writes nothing.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_kv_sizing.py PL4M-H100,PL4S-H100      # row-id prefixes
    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_kv_sizing.py PL4M-H100 --implied        # + the fraction the rate implies

Per row (GiB a GPU): the KV capacity the calibration plans it with (vLLM's rule: ``gpu_memory_utilization`` 0.95 of the
whole memory less weights, prefill peak, the sampler term and non-torch memory) and the sampler term in it; the
capacity under TensorRT-LLM's own rule (``_torch/pyexecutor/_util.py``: ``free_gpu_memory_fraction`` 0.95 of the
memory its profiling pass leaves free, no sampler term), the 5% that rule leaves free, and the decode logits of the
row's batch cap (``modules/logits_processor.py``: the LM head's 16-bit output and its FP32 copy, 6 bytes a vocabulary
entry a sequence). ``--implied`` adds, on a 0.05 grid, the smallest TensorRT-LLM fraction whose prediction reaches the
measured rate and the KV capacity at it.
"""

from __future__ import annotations

import sys
from typing import Any

from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration

GIB = 2**30


def _predict_as(run: rs.Run, row: dict[str, Any]) -> float:
    """The prediction for ``run`` planned from ``row`` instead of its own (the row dict restored after)."""
    saved = dict(run.row)
    run.row.clear()
    run.row.update(row)
    rs._serve_plan.cache_clear()
    try:
        return rs.predict(run, calibration())
    finally:
        run.row.clear()
        run.row.update(saved)
        rs._serve_plan.cache_clear()


def main(prefixes: tuple[str, ...], implied: bool) -> None:
    for run in rs.load_runs():
        r = run.row
        if (not run.id.startswith(prefixes) or run.metric != "max_output_tokens_per_s"
                or r.get("engine_limits") != "trtllm-bench"):
            continue
        b = rs.serve_plan_of(r).breakdown
        trt = dict(r, kv_free_fraction=0.95)
        p = rs.serve_plan_of(trt)
        kv = p.breakdown["kv_cache_capacity_bytes"]
        seqs = p.workload.max_num_seqs // int(r.get("pp", 1))
        line = (f"{run.id:26s} {run.role:7s} cap {seqs:5d} | calibrated KV {b['kv_cache_capacity_bytes'] / GIB:5.1f} "
                f"sampler {b.get('sampler_logits_bytes', 0) / GIB:4.1f} | TensorRT-LLM 0.95: KV {kv / GIB:5.1f} "
                f"left {kv / 0.95 * 0.05 / GIB:4.2f} decode logits {6 * p.model.vocab_size * seqs / GIB:4.2f}")
        if implied:
            for step in range(4, 20):
                f = step / 20
                if _predict_as(run, dict(r, kv_free_fraction=f)) >= run.value:
                    at = rs.serve_plan_of(dict(r, kv_free_fraction=f)).breakdown["kv_cache_capacity_bytes"]
                    line += f" | implied fraction {'<=' if step == 4 else ''}{f:.2f} (KV {at / GIB:4.1f})"
                    break
            else:
                line += " | implied fraction > 0.95"
        print(line)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(tuple(args[0].split(",")) if args else ("PL4M-H100",), "--implied" in sys.argv)
