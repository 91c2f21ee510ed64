"""What the layout chosen for the user costs in process, on two trees in the same run: ``benchmarks/run.py``'s three
searches (Llama 3.1 70B on 512 H100, Qwen3-235B-A22B on 256 H100, and the fewest H100 for the 70B) and DeepSeek-V3
on 1,024 H100 (``dsv3``: its uneven interleaved layouts, stop 55), each ``plan()``
with its ``plan_performance``, as run.py times them. Not a test.

``warm`` repeats one question, as run.py does (the step terms of its layouts memoised by the first call); ``cold``
clears those memos before each call: a new question's cost. Each tree runs in its own processes, the trees taking turns
(``--rounds`` each), and the median CPU time a call (``time.process_time``) of each round is printed with the median
over the rounds; on a shared machine compare the two trees within a run. ``--instructions`` counts instructions a call
instead (``valgrind --tool=cachegrind``: the count of N calls less the count of none, over N), which load does not move.

    git -C /work/main archive HEAD src | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    .venv/bin/python benchmarks/chooser_timing.py /tmp/base .            # CPU time, 5 rounds of 20 calls
    .venv/bin/python benchmarks/chooser_timing.py /tmp/base . --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

CASES = ("dense", "moe", "count", "dsv3")
MODES = ("warm", "cold")


def _child(case: str, mode: str, calls: int) -> None:
    """Run in a child process with the tree's src first on the path: ``calls`` calls after two unmeasured ones."""
    from anchorgpu.architectures import load_model
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed import training
    from anchorgpu.planner.speed.estimate import plan_performance

    gpu = get_gpu("h100")
    model, layout = {"dense": ("llama-3.1-70b", Layout(gpus=512)), "moe": ("qwen3-235b-a22b", Layout(gpus=256)),
                     "count": ("llama-3.1-70b", None),
                     "dsv3": ("deepseek-v3", Layout(gpus=1024))}[case]
    spec = load_model(model)
    work = Workload(task="train") if case == "count" else Workload(task="train", seq_tokens=4096)
    memos = [training._layout_terms]
    try:
        from anchorgpu.planner.speed import micro_step
        memos.append(micro_step.micro_step)
    except ImportError:  # a tree before speed/micro_step.py
        pass
    caches = [m.__globals__["cache"] for m in memos if "cache" in getattr(m, "__globals__", {})]

    def one() -> None:
        plan_performance(plan(spec, work, layout=layout, gpu=gpu))

    one()
    one()
    times = []
    for _ in range(calls):
        if mode == "cold":
            for cache in caches:
                cache.clear()
        start = time.process_time()
        one()
        times.append(time.process_time() - start)
    print(f"median_s {statistics.median(times) if times else 0.0!r}")


def _run(tree: Path, case: str, mode: str, calls: int, valgrind: bool = False) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONHASHSEED": "0"}
    cmd = [sys.executable, __file__, "--child", case, mode, str(calls)]
    if valgrind:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    if valgrind:
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if found is None:
            raise SystemExit(out.stderr[-2000:])
        return float(found.group(1).replace(",", ""))
    return float(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="a tree (checkout or export) with src/anchorgpu")
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--instructions", action="store_true", help="instructions a call under cachegrind")
    parser.add_argument("--case", choices=CASES, action="append")
    args = parser.parse_args(argv)
    trees = (args.before.resolve(), args.after.resolve())
    print(f"load average {os.getloadavg()[0]:.2f}; {trees[0]} -> {trees[1]}")
    for case in args.case or CASES:
        for mode in MODES:
            if args.instructions:
                n = max(1, args.calls // 2)
                per = [(_run(t, case, mode, n, True) - _run(t, case, mode, 0, True)) / n for t in trees]
                print(f"{case:5} {mode}: {per[0] / 1e6:7.2f}M -> {per[1] / 1e6:7.2f}M instructions a call "
                      f"({per[1] / per[0] - 1:+.0%})")
                continue
            rounds: list[list[float]] = [[], []]
            for _ in range(args.rounds):
                for k, tree in enumerate(trees):
                    rounds[k].append(_run(tree, case, mode, args.calls))
            med = [statistics.median(r) for r in rounds]
            print(f"{case:5} {mode}: {med[0] * 1e3:6.2f} ms -> {med[1] * 1e3:6.2f} ms CPU a call ({med[1] / med[0] - 1:+.0%});"
                  f" rounds {' '.join(f'{x * 1e3:.2f}' for x in rounds[0])} | {' '.join(f'{x * 1e3:.2f}' for x in rounds[1])}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
