"""Runs inside the benchmark's own venv (/work/main/.bench-venv) with llm-analysis installed unmodified.

Reads a JSON job on stdin: {"model_config": {...}, "configs": [{gpu_name, dtype_name, tp, pp, dp, batch,
seq_len, tokens, kv_bytes}, ...]}; evaluates every configuration one by one with ``llm_analysis.analysis.infer``
and prints {"seconds": ..., "cpu_seconds": ..., "evaluated": ..., "decode_tokens_per_sec": [...]} on stdout (null where
llm-analysis refused the configuration as not fitting: it asserts instead of answering). With ``"passes": K`` in
the job it goes over the configurations K times and reports the median pass as ``seconds``/``cpu_seconds``.

With ``"interactive": true`` the job is one line, and each further line ``pass`` on stdin runs one pass and
answers one JSON line {"seconds", "cpu_seconds", "evaluated"}: the benchmark alternates these passes with its
own timings, so both sides meet the same load on a shared machine.
Imports are done before the clock starts, so only the per-configuration analysis is timed.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import time

logging.disable(logging.WARNING)  # llm-analysis warns on every call; silence it for a fair timing

from llm_analysis.analysis import infer  # noqa: E402


def one_pass(model_path: str, configs: list[dict]) -> tuple[float, float, list[float | None]]:
    """(wall seconds, CPU seconds, decode tokens/s or None per configuration) of one pass over ``configs``."""
    results: list[float | None] = []
    start, start_cpu = time.perf_counter(), time.process_time()
    for c in configs:
        try:
            summary = infer(
                model_name=model_path, gpu_name=c["gpu_name"], dtype_name=c["dtype_name"], log_level="ERROR",
                batch_size_per_gpu=c["batch"], tp_size=c["tp"], pp_size=c["pp"], dp_size=c["dp"],
                seq_len=c["seq_len"], num_tokens_to_generate=c["tokens"], kv_cache_dtype_bytes=c["kv_bytes"],
            )
            results.append(summary.get("decode_tokens_per_sec"))
        except AssertionError:  # llm-analysis asserts when a configuration does not fit its memory model
            results.append(None)
    return time.perf_counter() - start, time.process_time() - start_cpu, results


def main() -> None:
    job = json.loads(sys.stdin.readline())  # the job is one line (json.dumps writes no newline)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(job["model_config"], handle)
        model_path = handle.name
    try:
        try:  # warm llm-analysis's config caches (a 70B model does not fit its default single GPU)
            infer(model_name=model_path, gpu_name="h100-sxm-80gb", tp_size=8, log_level="ERROR")
        except AssertionError:
            pass
        if job.get("interactive"):
            for line in sys.stdin:
                if line.strip() != "pass":
                    break
                wall, cpu, _ = one_pass(model_path, job["configs"])
                print(json.dumps({"seconds": wall, "cpu_seconds": cpu, "evaluated": len(job["configs"])}), flush=True)
            return
        walls, cpus, results = [], [], []
        for _ in range(max(1, int(job.get("passes", 1)))):
            wall, cpu, results = one_pass(model_path, job["configs"])
            walls.append(wall)
            cpus.append(cpu)
    finally:
        os.unlink(model_path)
    json.dump({"seconds": statistics.median(walls), "cpu_seconds": statistics.median(cpus),
               "evaluated": len(job["configs"]), "decode_tokens_per_sec": results}, sys.stdout)


if __name__ == "__main__":
    main()
