"""Runs inside ``benchmarks/.aic-venv`` with aiconfigurator installed unmodified (see README.md).

Reads a JSON job on stdin: {"rows": [{id, hf_model, system, tp, gemm_quant, kv_quant, isl, osl}, ...],
"batches": [...]}. For each row it asks ``aiconfigurator.cli.api.cli_estimate`` (aggregated in-flight
batching, TensorRT-LLM backend, its silicon-measured database) for the output tokens/s at each batch size
in turn, stopping at the first one its memory model refuses (OOM), and keeps the best: what
``trtllm-bench``'s maximum-throughput figures measure. Prints {"rows": [{id, best_tokens_per_s,
best_batch, stopped_at (the batch it refused), estimates, seconds, first_seconds, error}], "import_seconds": ...} on stdout.
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


def _one(row: dict, batch: int) -> float:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        result = cli_estimate(row["hf_model"], row["system"], isl=row["isl"], osl=row["osl"], batch_size=batch,
                              tp_size=row["tp"], gemm_quant_mode=row["gemm_quant"], kvcache_quant_mode=row["kv_quant"])
    return float(result.tokens_per_second)


def main() -> None:
    job = json.load(sys.stdin)
    out = []
    for row in job["rows"]:
        best, best_batch, times, error, stopped = None, None, [], None, None
        for batch in job["batches"]:
            t = time.perf_counter()
            try:
                value = _one(row, batch)
            except RuntimeError as exc:  # its memory model refuses the batch: larger ones will not fit either
                times.append(time.perf_counter() - t)
                stopped = batch
                if "OOM" not in str(exc):
                    error = str(exc).splitlines()[0][:200]
                break
            except Exception as exc:  # noqa: BLE001 - report whatever it raised, in one line
                times.append(time.perf_counter() - t)
                error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
                stopped = batch
                break
            times.append(time.perf_counter() - t)
            if best is None or value > best:
                best, best_batch = value, batch
        out.append({"id": row["id"], "best_tokens_per_s": best, "best_batch": best_batch, "stopped_at": stopped, "estimates": len(times),
                    "seconds": sum(times), "first_seconds": times[0] if times else None, "error": error})
    json.dump({"rows": out, "import_seconds": IMPORT_SECONDS}, sys.stdout)


if __name__ == "__main__":
    main()
