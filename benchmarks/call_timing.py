"""CPU time of one plan + speed estimate, the two calls benchmarks/run.py section (c) times against llm-analysis,
and of one ``recommend`` over batch 1..512 with its JSON, the row of (a) timed per configuration against it
(a dev script, not a test). Run it with one tree, then another, each in its own process, to compare them side by side:

    .venv/bin/python benchmarks/call_timing.py                       # this tree
    git archive 35cac82 src | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/call_timing.py   # another

Each call builds its inputs afresh, as in run.py; 200 calls warm up, then 3,000 are timed (``time.process_time``).
``--instructions`` counts instructions a call instead, which load does not move: each of the two calls run ``N`` and
``2N`` times (after two unmeasured ones) under ``valgrind --tool=cachegrind``, the difference over ``N`` (the
interpreter's start-up and first calls cancel out):

    .venv/bin/python benchmarks/call_timing.py --instructions                 # this tree
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/call_timing.py --instructions

Name calls after the flag to time only those (``serve``, ``serve-varied``, ``train``, ``train-varied``,
``recommend``; default all five):

    .venv/bin/python benchmarks/call_timing.py --instructions serve serve-varied

``serve-varied`` is ``serve``'s layout with a new request each call (:data:`_REQUESTS`, more pairs than a memo keyed
on the whole request holds): a change that makes ``serve`` cheaper but not it has only memoised a repeated question, which
(c) is meant not to time. ``train-varied`` is the same for ``train`` (:data:`_TRAIN_REQUESTS`).
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import recommend, recommendation_to_json

MODEL, GPU, CATALOG = load_model("llama-3.1-70b"), get_gpu("h100"), load_catalog()


def serve() -> None:
    plan_performance(plan(MODEL, Workload(task="inference", context_tokens=8192, concurrency=32),
                          layout=Layout(gpus=4, tp=4, pp=1, dp=1), gpu=GPU, precision=PrecisionPlan(weights="fp8")))


# a new question each call: the same layout at 1,088 (context, concurrency) pairs in turn (4,096-8,192 tokens by
# 256, 8-71 users; every one fits and is timed), more than a memo keyed on the whole request holds (1,024 at most), so
# its cost beside ``serve``'s shows what of ``serve``'s is answered by a memo of a repeated request
_REQUESTS = [(context, users) for context in range(4096, 8193, 256) for users in range(8, 72)]
_NEXT = itertools.cycle(_REQUESTS).__next__


def serve_varied() -> None:
    context, users = _NEXT()
    plan_performance(plan(MODEL, Workload(task="inference", context_tokens=context, concurrency=users),
                          layout=Layout(gpus=4, tp=4, pp=1, dp=1), gpu=GPU, precision=PrecisionPlan(weights="fp8")))


def train() -> None:
    plan_performance(plan(MODEL, Workload(task="train", seq_tokens=4096, micro_batch=1, recompute="full",
                                          global_batch_tokens=2**22),
                          layout=Layout(gpus=64, tp=8, pp=4, zero=1, virtual_stages=5), gpu=GPU))


# ``train``'s layout with a new question each call: 1,200 (sequence, global batch) pairs in turn (2,048-8,192 tokens by
# 256, batches of 8 x 8-55 sequences: whole micro-batches a multiple of the 4 stages, as interleaving needs; every one
# fits and is timed), more than a memo keyed on the whole request holds
_TRAIN_REQUESTS = [(seq, 8 * seq * k) for seq in range(2048, 8193, 256) for k in range(8, 56)]
_NEXT_TRAIN = itertools.cycle(_TRAIN_REQUESTS).__next__


def train_varied() -> None:
    seq, batch = _NEXT_TRAIN()
    plan_performance(plan(MODEL, Workload(task="train", seq_tokens=seq, micro_batch=1, recompute="full",
                                          global_batch_tokens=batch),
                          layout=Layout(gpus=64, tp=8, pp=4, zero=1, virtual_stages=5), gpu=GPU))


_NOW = datetime(2026, 12, 1, tzinfo=UTC)
_LADDER = SweepSpec(workload=Workload(task="inference", context_tokens=8192))  # batch 1..512, as run.py's row


def recommend_json() -> None:
    recommendation_to_json(recommend(MODEL, _LADDER, CATALOG, "1month", _NOW, lower_precision=True))


def recommend_floor() -> None:  # run.py's ladder under 33.3 tok/s a user
    recommendation_to_json(recommend(MODEL, _LADDER, CATALOG, "1month", _NOW, lower_precision=True,
                                     min_tokens_per_s_per_user=33.3))


def recommend_ttft() -> None:  # and under 20 tok/s a user with a 2 s first token
    recommendation_to_json(recommend(MODEL, _LADDER, CATALOG, "1month", _NOW, lower_precision=True,
                                     min_tokens_per_s_per_user=20.0, max_ttft_s=2.0))


CALLS: dict[str, tuple[Callable[[], None], int]] = {  # the call, and how many a count of instructions makes
    "serve": (serve, 1000), "serve-varied": (serve_varied, 1088), "train": (train, 1000),
    "train-varied": (train_varied, 1200), "recommend": (recommend_json, 10),
    "recommend-floor": (recommend_floor, 10), "recommend-ttft": (recommend_ttft, 10)}


def cpu_us(fn: Callable[[], None], warm: int = 200, n: int = 3000) -> float:
    for _ in range(warm):
        fn()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n * 1e6


def _child(name: str, calls: int) -> None:
    fn = CALLS[name][0]
    fn()
    fn()
    for _ in range(calls):
        fn()


def instructions(name: str) -> float:
    """Instructions a call of ``name`` (:data:`CALLS`) under cachegrind (this process's ``sys.path`` and
    interpreter)."""
    calls = CALLS[name][1]
    # OpenBLAS (numpy, imported with the catalog) keeps worker threads whose idle loop valgrind runs in turn with the
    # interpreter's: their instructions moved a count by up to +-15% from run to run; with one thread, +-0.3%
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PYTHONHASHSEED": "0",
           "OPENBLAS_NUM_THREADS": "1"}

    def count(n: int) -> int:
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                              sys.executable, __file__, "--child", name, str(n)],
                             env=env, capture_output=True, text=True, check=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if found is None:
            raise SystemExit(out.stderr[-2000:])
        return int(found.group(1).replace(",", ""))

    return (count(2 * calls) - count(calls)) / calls


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--instructions"]:
        for name in sys.argv[2:] or list(CALLS):
            print(f"{name}: {instructions(name) / 1e3:,.1f}k instructions a call")
    else:
        for name in sys.argv[1:] or list(CALLS):
            fn, calls = CALLS[name]
            print(f"{name}: {cpu_us(fn, warm=max(2, calls // 5), n=3 * calls):,.1f} us CPU a call")
