"""The per-user limit search's answers (planner.sweep_floor.limit_sequences) over a fixed set of sweeps and run.py's
three ``recommend`` calls, one sha256 a line, to hold a change of the search to the answers it gave (a dev script, not
a test). Each line hashes every result column of one sweep (or one call's JSON), so two trees' outputs compare by
``diff``; ``--positions`` also prints the positions each sweep's search asked, call by call:

    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/limit_search_check.py > /tmp/before.txt
    .venv/bin/python benchmarks/limit_search_check.py > /tmp/after.txt
    diff /tmp/before.txt /tmp/after.txt && echo IDENTICAL

The sweeps: 8 models (dense, MoE, MLA, sliding-window) x vLLM / TensorRT-LLM / SGLang x 5 limits (33.3 tok/s a user;
20 tok/s and a 2 s first token; a 0.5 s first token alone; 5 tok/s; 60 tok/s and 1 s) over the catalog's 1- and
2-server shapes at 3 weight formats x 2 KV dtypes, and the 5 limits again with one-token outputs (a request's step is
its first token's) on two models. TensorRT-LLM is swept over the NVIDIA shapes only (it refuses the others).
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, datetime

import numpy as np

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.sweep import SweepSpec, sweep
from anchorgpu.recommend import recommend, recommendation_to_json, shapes_from_catalog

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-30b-a3b", "mixtral-8x7b-v0.1", "deepseek-v3", "gemma-3-27b",
          "qwen2.5-7b", "qwen3-235b-a22b")
ENGINES = ("vllm", "trtllm", "sglang")
LIMITS = ((33.3, None), (20.0, 2.0), (None, 0.5), (5.0, None), (60.0, 1.0))
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def _digest(columns: dict[str, object]) -> str:
    h = hashlib.sha256()
    for name in sorted(columns):
        h.update(name.encode())
        h.update(np.ascontiguousarray(np.asarray(columns[name])).tobytes())
    return h.hexdigest()[:16]


def main() -> None:
    catalog = load_catalog()
    shapes = shapes_from_catalog(catalog.offerings, max_servers=2)
    ladder = SweepSpec(workload=Workload(task="inference", context_tokens=8192))
    model = load_model("llama-3.1-70b")
    for floor, ttft in ((None, None), (33.3, None), (20.0, 2.0)):  # run.py (a)'s three calls
        doc = recommendation_to_json(recommend(model, ladder, catalog, "1month", NOW, lower_precision=True,
                                               min_tokens_per_s_per_user=floor, max_ttft_s=ttft))
        print("run.py recommend", floor, ttft, hashlib.sha256(repr(doc).encode()).hexdigest()[:16], flush=True)
    cases = [(m, e, lim, None) for m in MODELS for e in ENGINES for lim in LIMITS]
    cases += [(m, "vllm", lim, 1) for m in ("llama-3.1-70b", "qwen3-30b-a3b") for lim in LIMITS]
    for name, engine, (floor, ttft), output in cases:
        spec = SweepSpec(workload=Workload(task="inference", context_tokens=8192, engine=engine),
                         weights=("bf16", "fp8", "int4-awq"), kv_caches=("bf16", "fp8"), output_tokens=output,
                         min_tokens_per_s_per_user=floor, max_ttft_s=ttft)
        try:
            on = shapes if engine != "trtllm" else tuple(s for s in shapes if s.gpu.vendor == "NVIDIA")  # NVIDIA only
            result = sweep(load_model(name), on, spec)
        except (ValueError, SystemExit) as exc:  # a combination the planner refuses: its reason, hashed
            print(name, engine, floor, ttft, output, "refused", hashlib.sha256(str(exc).encode()).hexdigest()[:16])
            continue
        print(name, engine, floor, ttft, output, result.evaluated, _digest(dict(result.columns)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
