"""Which dense serving fit rows pull ``decode_mbu`` up once TensorRT-LLM's prompt attention is timed apart
(benchmarks/moe_small_batch_findings.md, "Stop 54 (branch mbubound)"). Dev tooling; changes no constant, writes
nothing. For every row the serving group fits (``fitting._group_rows(..., "serve", "cuda")``), at the shipped
constants: its error with the prompt's attention under the KV read (the rule before Stop 54 (longctx):
``step_constants.prompt_attention_apart`` forced False) and apart (as shipped), how its prediction moves with
``decode_mbu`` (d log prediction / d log mbu, by a 1% step) and its share of the loss's gradient in log mbu
(``2 e s``: negative pulls ``decode_mbu`` up).

    PYTHONPATH=src python benchmarks/mbubound_rows.py
"""

from __future__ import annotations

import math
from dataclasses import replace

from anchorgpu.planner.speed import fitting, step_constants
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict


def main() -> None:
    cal = calibration()
    k = cal.stacks["cuda"]
    up = replace(cal, stacks={**cal.stacks, "cuda": replace(k, decode_mbu=k.decode_mbu * 1.01)})
    rows = fitting._group_rows(load_runs(), "serve", "cuda")
    shipped = step_constants.prompt_attention_apart
    table: dict[str, list[tuple[float, float]]] = {r.id: [] for r in rows}
    for apart in (False, True):
        step_constants.prompt_attention_apart = shipped if apart else (lambda engine: False)  # type: ignore[assignment]
        step_constants._STEP_MEMO.clear()
        for r in rows:
            p = predict(r, cal)
            table[r.id].append((math.log(p / r.value), math.log(predict(r, up) / p) / math.log(1.01)))
    step_constants.prompt_attention_apart = shipped  # type: ignore[assignment]
    step_constants._STEP_MEMO.clear()
    print(f"{'row':30s} {'under':>7s} {'apart':>7s} {'sens':>5s} {'grad under':>10s} {'grad apart':>10s}  shape")
    sums = [0.0, 0.0]
    for r in rows:
        (e0, s0), (e1, s1) = table[r.id]
        sums[0] += 2 * e0 * s0
        sums[1] += 2 * e1 * s1
        shape = f"{r.row.get('prompt_tokens')}/{r.row.get('output_tokens')} tp{r.row.get('tp')} {r.row.get('gpu')}"
        print(f"{r.id:30s} {100 * math.expm1(e0):+6.1f}% {100 * math.expm1(e1):+6.1f}% {s1:5.2f} {2 * e0 * s0:10.4f} "
              f"{2 * e1 * s1:10.4f}  {shape}")
    print(f"gradient of the serving loss in log decode_mbu: under {sums[0]:+.4f}, apart {sums[1]:+.4f}")


if __name__ == "__main__":
    main()
