"""Runs inside the benchmark's own venv (.bench-venv) with llm-analysis installed unmodified: its ``train``.

Reads one JSON job on stdin:

    {"gpu_configs": [{...GPUConfig fields...}, ...],      # GPUs its package lacks, registered by name
     "rows": [{"id", "model_config": {...ModelConfig fields...}, "gpu_name", "dtype_name", "tp", "pp", "dp",
               "ds_zero", "seq_len", "batch_size_per_gpu", "global_batch_size", "activation_recomputation",
               "flash_attn", "mlp_gated_linear_units"}, ...],
     "settings": [{"name", "flops_efficiency", "hbm_memory_efficiency"}, ...],   # null: llm-analysis's default
     "passes": K}

and prints one JSON object: for each setting, per row, ``latency_per_iter`` (seconds), ``global_batch_size``,
``total_num_gpus``, ``num_flops_total_per_micro_batch`` and the efficiencies it used (or ``error`` where it
refused the row), and the CPU and wall seconds of one evaluation (the median over K passes of a pass's time over
its rows). A GPU its package lacks is added to ``llm_analysis.config.gpu_configs`` as its own ``GPUConfig`` built
from the JSON the benchmark wrote (the in-memory form of the JSON file its README says to add). Each row's model
config is written to a file of its own and given to ``train`` as ``model_name`` (a path, as its docs allow).
Imports and file writes happen before the clock starts.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import tempfile
import time
from typing import Any

logging.disable(logging.WARNING)  # llm-analysis logs every step; silence it for a fair timing

import llm_analysis.config as la_config  # noqa: E402
from llm_analysis.analysis import train  # noqa: E402

KEEP = ("latency_per_iter", "global_batch_size", "gradient_accumulation_steps", "total_num_gpus",
        "num_flops_total_per_micro_batch", "flops_efficiency", "hbm_memory_efficiency", "batch_size_per_gpu")


def evaluate(row: dict[str, Any], path: str, setting: dict[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    if setting.get("flops_efficiency") is not None:
        kwargs["flops_efficiency"] = setting["flops_efficiency"]
    if setting.get("hbm_memory_efficiency") is not None:
        kwargs["hbm_memory_efficiency"] = setting["hbm_memory_efficiency"]
    try:
        summary = train(
            model_name=path, gpu_name=row["gpu_name"], dtype_name=row["dtype_name"], log_level="ERROR",
            batch_size_per_gpu=row["batch_size_per_gpu"], global_batch_size=row["global_batch_size"],
            seq_len=row["seq_len"], activation_recomputation=row["activation_recomputation"],
            ds_zero=row["ds_zero"], tp_size=row["tp"], pp_size=row["pp"], dp_size=row["dp"],
            flash_attn=row["flash_attn"], mlp_gated_linear_units=row["mlp_gated_linear_units"], **kwargs,
        )
    except (AssertionError, ValueError) as exc:  # it asserts on layouts and batches it cannot take
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {k: summary[k] for k in KEEP}


def main() -> None:
    job = json.loads(sys.stdin.read())
    for gpu in job.get("gpu_configs", []):
        la_config.gpu_configs[gpu["name"]] = la_config.GPUConfig(**gpu)
    tmp = tempfile.mkdtemp(prefix="la-train-")
    paths = {}
    for row in job["rows"]:
        path = os.path.join(tmp, f"{row['id']}.json")
        with open(path, "w") as handle:
            json.dump(row["model_config"], handle)
        paths[row["id"]] = path
    out: dict[str, Any] = {"settings": {}}
    try:
        for setting in job["settings"]:
            results: dict[str, Any] = {}
            walls, cpus = [], []
            for _ in range(max(1, int(job.get("passes", 1)))):
                start, start_cpu = time.perf_counter(), time.process_time()
                for row in job["rows"]:
                    results[row["id"]] = evaluate(row, paths[row["id"]], setting)
                walls.append((time.perf_counter() - start) / max(1, len(job["rows"])))
                cpus.append((time.process_time() - start_cpu) / max(1, len(job["rows"])))
            out["settings"][setting["name"]] = {"rows": results, "cpu_s_per_eval": statistics.median(cpus),
                                                "wall_s_per_eval": statistics.median(walls)}
    finally:
        for path in paths.values():
            os.unlink(path)
        os.rmdir(tmp)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
