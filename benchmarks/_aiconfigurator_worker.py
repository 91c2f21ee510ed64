"""Runs inside ``benchmarks/.aic-venv`` with aiconfigurator installed unmodified (see README.md).

Reads a JSON job on stdin: {"rows": [{id, hf_model, system, tp, gemm_quant, kv_quant, isl, osl}, ...],
"batches": [...]}. For each row it asks ``aiconfigurator.cli.api.cli_estimate`` (aggregated in-flight
batching, TensorRT-LLM backend, its silicon-measured database) for the output tokens/s at each batch size
in turn, stopping at the first one its memory model refuses (OOM), and keeps the best: what
``trtllm-bench``'s maximum-throughput figures measure. Prints {"rows": [{id, best_tokens_per_s,
best_batch, stopped_at (the batch it refused), estimates, seconds, first_seconds, error}], "import_seconds": ...} on stdout.

A mixture-of-experts row may also carry ``pp``, ``attention_dp``, ``moe_tp``, ``moe_ep`` and ``moe_quant``
(passed as ``pp_size``, ``attention_dp_size``, ``moe_tp_size``, ``moe_ep_size``, ``moe_quant_mode``; with
attention data parallelism the batch is each rank's), and ``start`` (an index into the batches): then the
ladder is climbed from there instead of walked from its first size, upwards while the output tokens/s grows
(stopping at the first batch refused, as above, or the first that is slower), or downwards the same way when
the first step up does not help. A row without these keys is estimated exactly as before. A job may carry
``max_estimates``: the rows after that many estimates are not run (their error says so).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import sys
import time

logging.disable(logging.WARNING)  # it logs every fallback table it loads; keep stdout for the answer

start = time.perf_counter()
from aiconfigurator.cli.api import cli_estimate  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - start
MOE_KEYS = {"pp": "pp_size", "attention_dp": "attention_dp_size", "moe_tp": "moe_tp_size", "moe_ep": "moe_ep_size",
            "moe_quant": "moe_quant_mode"}


def _one(row: dict, batch: int) -> float:
    extra = {arg: row[key] for key, arg in MOE_KEYS.items() if key in row}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        result = cli_estimate(row["hf_model"], row["system"], isl=row["isl"], osl=row["osl"], batch_size=batch,
                              tp_size=row["tp"], gemm_quant_mode=row["gemm_quant"], kvcache_quant_mode=row["kv_quant"],
                              **extra)
    return float(result.tokens_per_second)


class _Stop(Exception):
    """A batch it refused (``oom``) or an estimate that failed otherwise (``error``)."""

    def __init__(self, oom: bool, error: str | None) -> None:
        super().__init__(error)
        self.oom, self.error = oom, error


def _timed(row: dict, batch: int, times: list[float]) -> float:
    t = time.perf_counter()
    try:
        return _one(row, batch)
    except RuntimeError as exc:  # its memory model refuses the batch: larger ones will not fit either
        raise _Stop("OOM" in str(exc), None if "OOM" in str(exc) else str(exc).splitlines()[0][:200]) from None
    except Exception as exc:  # noqa: BLE001 - report whatever it raised, in one line
        raise _Stop(False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}") from None
    finally:
        times.append(time.perf_counter() - t)


def _ladder(row: dict, batches: list[int], times: list[float]) -> tuple[float | None, int | None, int | None, str | None]:
    best, best_batch = None, None
    for batch in batches:
        try:
            value = _timed(row, batch, times)
        except _Stop as stop:
            return best, best_batch, batch, stop.error
        if best is None or value > best:
            best, best_batch = value, batch
    return best, best_batch, None, None


def _climb(row: dict, batches: list[int], times: list[float]) -> tuple[float | None, int | None, int | None, str | None]:
    """The best of the ladder found by climbing from ``row["start"]`` (see the module's docstring)."""
    i = min(int(row["start"]), len(batches) - 1)
    stopped = None
    value = None
    while value is None:  # the start refused: walk down to the first batch it holds
        try:
            value = _timed(row, batches[i], times)
        except _Stop as stop:
            if stop.error or i == 0:
                return None, None, batches[i], stop.error
            stopped, i = batches[i], i - 1
            continue
    best, best_i = value, i
    going_up = stopped is None
    j = i + 1 if going_up else i - 1
    step = 1 if going_up else -1
    while 0 <= j < len(batches):
        try:
            value = _timed(row, batches[j], times)
        except _Stop as stop:
            if stop.error:
                return best, batches[best_i], batches[j], stop.error
            stopped = batches[j]
            value = None
        if value is not None and value > best:
            best, best_i, j = value, j, j + step
            continue
        if step == 1 and best_i == i and i > 0:  # the first step up did not help: try downwards instead
            step, j = -1, i - 1
            continue
        break
    return best, batches[best_i], stopped, None


def main() -> None:
    job = json.load(sys.stdin)
    out = []
    cap, used = job.get("max_estimates"), 0  # optional: rows past this many estimates are not run
    for row in job["rows"]:
        if cap is not None and used >= cap:
            out.append({"id": row["id"], "best_tokens_per_s": None, "best_batch": None, "stopped_at": None, "estimates": 0,
                        "seconds": 0.0, "first_seconds": None, "error": f"not run: the cap of {cap} estimates was reached"})
            continue
        times: list[float] = []
        walk = _climb if "start" in row else _ladder
        best, best_batch, stopped, error = walk(row, job["batches"], times)
        out.append({"id": row["id"], "best_tokens_per_s": best, "best_batch": best_batch, "stopped_at": stopped, "estimates": len(times),
                    "seconds": sum(times), "first_seconds": times[0] if times else None, "error": error})
        used += len(times)
    json.dump({"rows": out, "import_seconds": IMPORT_SECONDS}, sys.stdout)


if __name__ == "__main__":
    main()
