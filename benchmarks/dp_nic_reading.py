"""The training rows read two ways, without refitting anything: as the calibration times a data-parallel group that
spans servers since stop 38 (its members in each server leave it through all their NICs: NCCL's rings and trees
cross the network on every member GPU's own NIC, so a group with ``8 / tp`` members a server moves that many times
one NIC's bytes, up to the scale-up link; ``links.data_parallel_link``), and as it did before (the whole group's
collectives at one GPU's network link, ``network_gbit_per_s_per_gpu``). Only the data-parallel (and FSDP) group's
link changes: pipeline transfers, expert all-to-alls and TP stay as they are.

Read with one NIC, NeMo 24.07's GPT-3 20B (``N24-GPT3-20B``, TP 2 x DP 32, whose ZeRO-1 sync that reading leaves
0.76 s exposed) comes out 37% slow; with every NIC, 6.5% slow. T37 (OLMo-core's 32B, restated as the script it names
runs: FSDP over 128 GPUs, full recompute, gradients reduced in FP32) comes out 19% fast with one NIC and 33% fast with
every NIC; OLMo-core's own runs on one server (T35, T36), where no NIC is involved, already come out 13% and 20% fast.

    .venv/bin/python benchmarks/dp_nic_reading.py              # each training set's count within 25%, both readings
    .venv/bin/python benchmarks/dp_nic_reading.py N24 T37 MX   # and each matching row's error
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import anchorgpu.planner.speed.training as _training
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.rows_report import paired_errors
from anchorgpu.planner.speed.runs import load_runs, predict

training: Any = _training  # its layout memo bypassed for the second reading
# the namespace the training step's data-parallel terms read their link from (patched for the second reading; taken
# from the function itself, so a second import of the module, as a doctest collection may make, cannot be patched instead)
data_parallel: Any = _training.data_parallel_terms.__globals__


def _errors() -> dict[str, float]:
    cal = calibration()
    return {run.id: predict(run, cal) / run.value - 1 for run in load_runs() if run.phase == "train"}


def _one_nic() -> tuple[Any, Any]:
    """``data_parallel``'s link and ``training``'s layout memo, patched so the data-parallel group's network link is
    one GPU's NIC whatever its members a server (the originals returned, to restore)."""
    data_parallel_link, layout_terms = data_parallel["data_parallel_link"], training._layout_terms

    def one_nic(gpu: Any, span_gpus: int, members_per_server: int, **kw: Any) -> Any:
        return data_parallel_link(gpu, span_gpus, 1, **kw)

    data_parallel["data_parallel_link"] = one_nic
    training._layout_terms = training._compute_layout_terms  # unmemoised: the memo holds the shipped reading's terms
    return data_parallel_link, layout_terms


def both() -> tuple[dict[str, float], dict[str, float]]:
    """Each training row's error (predicted over measured, less one) with one NIC and as calibrated (every NIC)."""
    originals = _one_nic()
    try:
        one = _errors()
    finally:
        data_parallel["data_parallel_link"], training._layout_terms = originals
    return one, _errors()


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
