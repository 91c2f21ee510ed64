"""Which of the planner's step terms the InferenceMAX TensorRT-LLM gpt-oss rows disagree with (stop62_dep2.md,
section 3): each row's measured decode step (TPOT less the planner's chunk-step share) against the planner's plain
decode step split into fixed, weights, attention and exchange/all-reduce + elementwise, and the least-squares
multipliers of those four terms over the 38 rows. A diagnostic: nothing it prints is a constant to ship.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_imt_term_fit.py

Dev tooling; wraps ``serving._tick`` to see its parts (as ``trtllm_dep_terms.py`` does), changes nothing.
"""

from __future__ import annotations

import numpy as np

from anchorgpu.planner.speed import serving
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

_seen: list[tuple] = []
_tick = serving._tick


def _recording_tick(setup, c, batch, prefill, *args, **kwargs):  # type: ignore[no-untyped-def]
    t = _tick(setup, c, batch, prefill, *args, **kwargs)
    _seen.append((batch, prefill, t))
    return t


def main() -> None:
    serving._tick = _recording_tick  # type: ignore[assignment]
    cal = calibration()
    terms, measured = [], []
    for run in load_runs():
        if not run.id.startswith("IMT-OSS"):
            continue
        _seen.clear()
        value = predict(run, cal)
        batch, _, t = next(x for x in _seen if x[1] == 0.0)
        decode_s = run.value - (value - t[0])
        rest = t[0] - t[1] - t[2] - t[3]  # exchange/all-reduce + elementwise
        terms.append((t[1], t[2], t[3], rest))
        measured.append(decode_s)
        print(f"{run.id:30s} decode step measured {decode_s * 1e3:6.2f} ms, planner {t[0] * 1e3:6.2f} (B {batch:5.1f}: "
              f"fixed {t[1] * 1e3:.2f}, weights {t[2] * 1e3:.2f}, attention {t[3] * 1e3:.2f}, exchange/all-reduce + "
              f"elementwise {rest * 1e3:.2f})")
    a, y = np.array(terms), np.array(measured)
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    print("least-squares multipliers (fixed, weights, attention, exchange + elementwise):", np.round(coef, 3))
    print("residuals after them, %:", np.round((a @ coef / y - 1) * 100, 1))


if __name__ == "__main__":
    main()
