"""The answerai-fsdp-qlora rows' planned step split into the part that scales with compute and the part that scales
with HBM (the bandwidth set 1e6x higher removes the elementwise and dequantization terms). Findings:
benchmarks/hardening/stop62_singles.md section 1.

    PYTHONPATH=src python benchmarks/aa_qlora_split.py
"""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

import anchorgpu.hardware as hardware
from anchorgpu.planner.speed import runs
from anchorgpu.planner.speed.calibration import calibration


def main() -> None:
    cal = calibration()
    rows = [r for r in runs.load_runs() if r.id.startswith("AA-70B")]
    plain = {r.id: runs.predict(r, cal) for r in rows}
    real_gpu = hardware.get_gpu

    def no_hbm(name: str) -> object:
        gpu = real_gpu(name)
        return replace(gpu, memory_bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s * 1e6)

    with mock.patch.object(hardware, "get_gpu", no_hbm):
        compute_only = {r.id: runs.predict(r, cal) for r in rows}
    for r in rows:
        per_token_ms = 1e3 / plain[r.id]
        compute_ms = 1e3 / compute_only[r.id]
        print(f"{r.id:15s} measured {r.value:7.1f} planned {plain[r.id]:7.1f} tok/s/GPU: {per_token_ms:.3f} ms a token "
              f"({compute_ms:.3f} compute, {per_token_ms - compute_ms:.3f} HBM and FSDP comm); measured {1e3 / r.value:.3f} ms")


if __name__ == "__main__":
    main()
