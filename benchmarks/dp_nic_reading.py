"""The training rows read two ways, without refitting anything: as the calibration times a data-parallel group that
spans servers (its collectives at one GPU's network link, ``network_gbit_per_s_per_gpu``), and with the group's
members in each server sharing all their NICs (NCCL's rings and trees leave a server through every member GPU's own
NIC, so a group with ``8 / (tp * cp)`` members a server moves that many times one NIC's bytes, up to the scale-up
link). Only the data-parallel group's link changes: pipeline transfers, expert all-to-alls and TP stay as they are.

The second reading is not shipped (stop 37): it brings NeMo 24.07's GPT-3 20B (``N24-GPT3-20B``, TP 2 x DP 32, whose
ZeRO-1 sync the calibration leaves 0.76 s exposed) from -33.8% to within 2%, but T37 (OLMo-core's 32B, layout not
published, FSDP over 32 GPUs assumed) from -13% to about +75%, and refitted it moves GPUStack's vLLM A100 rows from 6
to 5 of 10 within 25%.

    .venv/bin/python benchmarks/dp_nic_reading.py              # each training set's count within 25%, both readings
    .venv/bin/python benchmarks/dp_nic_reading.py N24 T37 MX   # and each matching row's error
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import replace
from typing import Any

import anchorgpu.planner.speed.training as _training
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import paired_errors
from anchorgpu.planner.speed.runs import load_runs, predict

SERVER_GPUS = 8
training: Any = _training  # its functions patched in place for the second reading


def _errors() -> dict[str, float]:
    cal = calibration()
    return {run.id: predict(run, cal) / run.value - 1 for run in load_runs() if run.phase == "train"}


def _every_nic() -> tuple[Any, Any]:
    """``training``'s link and layout functions, patched so the data-parallel group's network link carries each
    member GPU's NIC at once (the originals returned, to restore)."""
    group_link, layout_terms = training.group_link, training._layout_terms
    members: list[tuple[int, int]] = []  # (the data-parallel span, members a server) of the layout being timed

    def layout_terms_noting(model: Any, gpu: Any, cal: Any, gpus: int, tp: int, pp: int, cp: int, *rest: Any) -> Any:
        members.append((gpus // pp, max(1, SERVER_GPUS // (tp * cp))))
        try:  # unmemoised: the memo holds the calibrated reading's terms
            return training._compute_layout_terms(model, gpu, cal, gpus, tp, pp, cp, *rest)
        finally:
            members.pop()

    def link(gpu: Any, span_gpus: int, **kw: Any) -> Any:
        found = group_link(gpu, span_gpus, **kw)
        if found.kind != "network" or not members or span_gpus != members[-1][0]:
            return found
        inside = group_link(gpu, SERVER_GPUS, gpus_per_server=kw.get("gpus_per_server"))
        return replace(found, bytes_per_s=min(found.bytes_per_s * members[-1][1], inside.bytes_per_s))

    training.group_link, training._layout_terms = link, layout_terms_noting
    return group_link, layout_terms


def both() -> tuple[dict[str, float], dict[str, float]]:
    """Each training row's error (predicted over measured, less one) as calibrated and with every NIC."""
    one = _errors()
    originals = _every_nic()
    try:
        every = _errors()
    finally:
        training.group_link, training._layout_terms = originals
    return one, every


def main(argv: list[str]) -> int:
    one, every = both()
    runs = {run.id: run for run in load_runs()}
    sets = sorted({calibrate.set_of(runs[rid]) for rid in one})
    print(f"{'set':24s} {'rows':>5s} {'one NIC':>9s} {'every NIC':>10s}   (within 25%; median |error|)")
    for name in sets:
        ids = [rid for rid in one if calibrate.set_of(runs[rid]) == name]
        cells = []
        for errors in (one, every):
            within = sum(abs(errors[rid]) <= 0.25 for rid in ids)
            cells.append(f"{within:>3d} {statistics.median(abs(errors[rid]) for rid in ids):5.1%}")
        print(f"{name:24s} {len(ids):5d} {cells[0]:>9s} {cells[1]:>10s}")
    for line in paired_errors(argv, one, every, ("one NIC", "every NIC")):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
