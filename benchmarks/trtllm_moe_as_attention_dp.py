"""TensorRT-LLM's MoE throughput tables (``trtllm-moe`` and ``trtllm-pcie-moe`` rows of
``planner/speed/data/measured_runs.json``) planned two ways, without refitting anything: as the calibration reads them
(tensor parallelism of every layer over each column's TP size) and as attention data parallelism with expert
parallelism over the same GPUs (``tp 1, dp = ep = TP``), what the table's source runs MoE models with.

Under attention data parallelism each rank admits up to trtllm-bench's whole ``max_batch_size`` (TensorRT-LLM
``tensorrt_llm/_torch/pyexecutor/executor_request_queue.py``: ``_fetch_new_requests_attention_dp`` allows
``tp_size * max_num_active_requests`` in all and ``_schedule_attention_dp_requests`` fills each rank up to
``max_num_active_requests``, which ``PyTorchModelEngine.get_max_num_sequences`` makes ``pp_size * batch_size``);
trtllm-bench sizes that batch as for the whole engine (``--tp``), as the TP restatement does.

    .venv/bin/python benchmarks/trtllm_moe_as_attention_dp.py            # both restatements' counts within 25%
    .venv/bin/python benchmarks/trtllm_moe_as_attention_dp.py PQ235-H    # and each matching row's error
"""

from __future__ import annotations

import statistics
import sys
from functools import lru_cache
from typing import Any

import anchorgpu.planner.speed.runs as runs
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import paired_errors

SETS = ("trtllm-moe", "trtllm-pcie-moe")
_as_tp = runs._serve_plan


@lru_cache(maxsize=1024)
def _as_attention_dp(run_id: str) -> Any:
    """The row restated: TP 1, DP and EP over the column's TP GPUs, each rank admitting the batch trtllm-bench sized
    for the whole ``--tp`` engine; planned as every row is (``runs.serve_plan_of``)."""
    r = next(run.row for run in runs.load_runs() if run.id == run_id)
    model = runs._model(r)
    if model.moe is None or r.get("engine_limits") != "trtllm-bench" or r["tp"] <= 1:
        return _as_tp(run_id)
    max_seqs, max_tokens = runs.trtllm_bench_engine(model, runs._as_measured(get_gpu(r["gpu"]), r).memory_bytes, r)
    restated = {key: value for key, value in r.items() if key != "engine_limits"}
    return runs.serve_plan_of({**restated, "tp": 1, "ep": r["tp"], "max_num_seqs": max_seqs,
                               "max_num_batched_tokens": max_tokens})


def _errors() -> dict[str, float]:
    cal = calibration()
    return {run.id: runs.predict(run, cal) / run.value - 1 for run in runs.load_runs() if run.row.get("set") in SETS}


def both() -> tuple[dict[str, float], dict[str, float]]:
    """Each row's error (predicted over measured, less one) read as TP and read as attention DP + EP."""
    as_tp = _errors()
    runs._serve_plan = _as_attention_dp
    try:
        as_dp = _errors()
    finally:
        runs._serve_plan = _as_tp
    return as_tp, as_dp


def speeds(errors: dict[str, float], cells: list[str]) -> tuple[float, float, float, int]:
    """Measured over predicted speed of ``cells``: the median, the 10th and 90th percentiles (the middle eight in
    ten), and how many came within 25% of the prediction (what the calibration's reports count)."""
    ratios = sorted(1.0 / (1.0 + errors[c]) for c in cells)
    n = len(ratios)
    return (statistics.median(ratios), ratios[n // 10], ratios[9 * n // 10],
            sum(abs(errors[c]) <= 0.25 for c in cells))


def multi_gpu_cells(as_tp: dict[str, float], as_dp: dict[str, float]) -> list[str]:
    """The cells the two readings plan differently: MoE models over more than one GPU of a TP column."""
    return [c for c in as_tp if as_tp[c] != as_dp[c]]


def main(argv: list[str]) -> int:
    as_tp, as_dp = both()
    cells = multi_gpu_cells(as_tp, as_dp)
    for name, errors in (("as TP (the calibration's)", as_tp), ("as attention DP + EP", as_dp)):
        within = sum(abs(e) <= 0.25 for e in errors.values())
        median, low, high, cells_within = speeds(errors, cells)
        print(f"{name}: {within} of {len(errors)} within 25%, median |error| "
              f"{statistics.median(abs(e) for e in errors.values()):.1%}; the {len(cells)} multi-GPU cells ran at a "
              f"median {median:.2f}x of it ({low:.2f}x to {high:.2f}x for the middle eight in ten; {cells_within} "
              "within 25%)")
    for line in paired_errors(argv, as_tp, as_dp, ("as TP", "as attention DP")):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
