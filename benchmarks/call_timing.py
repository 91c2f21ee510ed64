"""CPU time of one plan + speed estimate, the two calls benchmarks/run.py section (c) times against llm-analysis
(a dev script, not a test). Run it with one tree, then another, each in its own process, to compare them side by side:

    .venv/bin/python benchmarks/call_timing.py                       # this tree
    git archive 35cac82 src | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/call_timing.py   # another

Each call builds its inputs afresh, as in run.py; 200 calls warm up, then 3,000 are timed (``time.process_time``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance

MODEL, GPU = load_model("llama-3.1-70b"), get_gpu("h100")


def serve() -> None:
    plan_performance(plan(MODEL, Workload(task="inference", context_tokens=8192, concurrency=32),
                          layout=Layout(gpus=4, tp=4, pp=1, dp=1), gpu=GPU, precision=PrecisionPlan(weights="fp8")))


def train() -> None:
    plan_performance(plan(MODEL, Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="full",
                                          global_batch_tokens=2**22),
                          layout=Layout(gpus=64, tp=8, pp=4, zero=1, virtual_stages=5), gpu=GPU))


def cpu_us(fn: Callable[[], None], warm: int = 200, n: int = 3000) -> float:
    for _ in range(warm):
        fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


if __name__ == "__main__":
    print(f"serving plan + estimate: {cpu_us(serve):.1f} us CPU a call; training: {cpu_us(train):.1f} us")
