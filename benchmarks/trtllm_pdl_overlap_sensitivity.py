"""Stop62_dep2.md section 4, reproducible: calibrate with the TensorRT-LLM step's fixed cost F and GPU work W combined
as ``max(F, W)`` or ``sqrt(F**2 + W**2)`` instead of ``F + W`` (the exchange/all-reduce added as before), on the
TRTLLM-gen MoE rows only (``imt``: InferenceMAX's gpt-oss rows, whose recipe sets ``TRTLLM_ENABLE_PDL=1``) or on every
TensorRT-LLM row (``all``). A sensitivity of an unsourced form, not a mechanism: nothing here is shipped.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_pdl_overlap_sensitivity.py soft imt > /tmp/cal_soft.txt

Dev tooling; wraps ``serving._tick`` in this process only.
"""

from __future__ import annotations

import runpy
import sys

from anchorgpu.planner.speed import serving

_tick = serving._tick


def main(form: str, scope: str) -> None:
    def overlapped(setup, c, *args, **kwargs):  # type: ignore[no-untyped-def]
        t = _tick(setup, c, *args, **kwargs)
        if setup.engine != "trtllm" or (scope == "imt" and setup.moe_backend != "trtllm-gen"):
            return t
        fixed, comm = t[1], t[4]
        work = t[0] - fixed - comm
        step = max(fixed, work) if form == "max" else (fixed * fixed + work * work) ** 0.5
        return (step + comm, *t[1:])

    serving._tick = overlapped  # type: ignore[assignment]
    sys.argv = ["calibrate"]
    runpy.run_module("anchorgpu.planner.speed.calibrate", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
