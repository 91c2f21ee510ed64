"""Stop 59 accroot: the chosen-layout configurations (benchmarks/chosen_equivalence.py, 2,000 at seed 41) planned for
``--recipe accelerate`` on the PyTorch stack, with torchtitan's FSDP units (``launch_accelerate`` False) against
accelerate's (True), all else as drawn and held to PP 1 as that launch is. Prints each configuration whose chosen
layout or fit verdict moves, then the counts.

    PYTHONPATH=src python benchmarks/hardening/accroot_moves.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from chosen_equivalence import chosen_configurations  # noqa: E402
from equivalence import _tuples  # noqa: E402

from anchorgpu.architectures import load_model  # noqa: E402
from anchorgpu.errors import AnchorError  # noqa: E402
from anchorgpu.hardware import get_gpu  # noqa: E402
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan  # noqa: E402
from anchorgpu.planner.engine_choice import launch_reach  # noqa: E402


def _words(p: Any) -> str:
    lay = p.layout
    return (f"{lay.gpus} GPUs TP{lay.tp} PP{lay.pp} CP{lay.cp} DP{lay.dp} EP{lay.ep} ZeRO-{lay.zero}"
            f"{' fsdp' if lay.fsdp else ''} off={lay.offload} mb{p.workload.micro_batch} rc={p.workload.recompute}")


def main() -> int:
    planned = memory = moved = 0
    for c in chosen_configurations(2000, 41):
        work = {**dict(_tuples(c["workload"])), "train_stack": "pytorch"}
        if c["layout"].get("pp", 1) != 1:
            continue
        plans = []
        for accelerate in (False, True):
            reach = {**launch_reach("accelerate"), "launch_accelerate": accelerate}
            try:
                plans.append(plan(load_model(c["model"]), Workload(**{**work, **reach}),
                                  precision=PrecisionPlan(**c["precision"]), layout=Layout(**c["layout"]),
                                  gpu=get_gpu(c["gpu"]) if c["gpu"] else None, suggest=False))
            except (AnchorError, ValueError):
                plans.append(None)
        a, b = plans
        if a is None or b is None:
            continue
        planned += 1
        memory += a.per_gpu.total_bytes != b.per_gpu.total_bytes
        if _words(a) != _words(b) or a.fits != b.fits:
            moved += 1
            print(f"config {c['i']}: {c['model']} {c['workload'].get('task')} {c['gpu']} {c['layout']} "
                  f"prec={c['workload'].get('train_precision')}: {_words(a)} fits={a.fits} -> {_words(b)} fits={b.fits}")
    print("planned", planned, "memory differs", memory, "chosen moved", moved)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
