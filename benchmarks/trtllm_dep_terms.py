"""The planner's decode step of InferenceMAX's TensorRT-LLM gpt-oss-120b rows, term by term (trtllm_gptoss_findings.md,
"DEP2 against DEP4 and TP, term by term"): each row's plain (decode-only) step split into fixed, weights and products,
attention, communication and the elementwise rest; the routed experts' bytes read (with the share the step's tokens
touch) and the rest of the weights; and what the steps that carry a prompt chunk add to the TPOT.

    PYTHONPATH=src .venv/bin/python benchmarks/trtllm_dep_terms.py 1k-1k-DEP2-C64 1k-1k-DEP4-C64

Dev tooling; reads no constant, patches nothing the planner keeps (it wraps ``serving._tick`` to see its parts).
"""

from __future__ import annotations

import sys

from anchorgpu.planner.speed import serving
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

_seen: list[tuple] = []
_tick = serving._tick


def _recording_tick(setup, c, batch, prefill, *args, **kwargs):  # type: ignore[no-untyped-def]
    t = _tick(setup, c, batch, prefill, *args, **kwargs)
    _seen.append((setup, batch, prefill, t, c))
    return t


def main(patterns: list[str]) -> None:
    serving._tick = _recording_tick  # type: ignore[assignment]
    cal = calibration()
    for run in load_runs():
        if not run.id.startswith("IMT-OSS") or not any(run.id.endswith(p) for p in patterns):
            continue
        _seen.clear()
        value = predict(run, cal)
        setup, batch, _, t, c = next(x for x in _seen if x[2] == 0.0)
        mixed = next((x[3][0] for x in _seen if x[2] > 0), None)
        touched = 1 - c.miss_per_token ** (batch * c.expert_token_scale)
        streamed = setup.weights_bytes_per_gpu - setup.lookup_table_bytes_per_gpu  # the step's read (lookup_tables)
        routed = streamed * c.routed_share * touched
        rest = streamed * (1 - c.routed_share)
        elementwise = t[0] - sum(t[1:5])
        print(f"{run.id:30s} measured {run.value * 1e3:6.2f} ms, planner {value * 1e3:6.2f} "
              f"({(value / run.value - 1) * 100:+5.1f}%): plain step B={batch:.0f} {t[0] * 1e3:5.2f} = fixed "
              f"{t[1] * 1e3:.2f} + weights {t[2] * 1e3:.2f} + attention {t[3] * 1e3:.2f} + comm {t[4] * 1e3:.2f} + "
              f"elementwise {elementwise * 1e3:.2f}; experts {routed / 1e9:4.1f} GB read (touched {touched:.2f}, "
              f"{routed / c.mem_rate * 1e3:.2f} ms), rest {rest / 1e9:.1f} GB; chunk steps "
              f"{'-' if mixed is None else f'{mixed * 1e3:.2f} ms'} add {(value - t[0]) * 1e3:.2f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
