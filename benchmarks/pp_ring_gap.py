"""How much longer than predicted a pipeline cycle of the RTX PRO 6000 serving rows is, per stage boundary
(benchmarks/rtx_pro_6000_findings.md, section 4).

    .venv/bin/python benchmarks/pp_ring_gap.py            # every serving row of trtllm-pcie-moe / trtllm-moe on RTX

For each row: the planner's saturation batch ``B`` (its KV capacity; the engine's batch is not published), the
predicted cycle ``B / predicted rate`` (one token for every running sequence) and the implied one ``B / measured
rate``. Where the same model and shape were measured on one card (PP1), ``r1`` is that row's implied over predicted
cycle (the one-card miss, the NVFP4 rate of rtx_pro_6000_findings.md section 2); ``gap`` is what the implied cycle
has beyond ``r1`` times the predicted one, and ``gap / (pp - 1)`` that per stage boundary. Dev tooling; reads no
constant and changes none.
"""

from __future__ import annotations

import re

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.rows_report import set_of
from anchorgpu.planner.speed.runs import _serve_plan, load_runs, predict

SETS = ("trtllm-pcie-moe", "trtllm-moe")
LAYOUT = re.compile(r"^(?P<model>.+)-RTXTP(?P<tp>\d+)(?:PP(?P<pp>\d+))?-(?P<shape>.+)$")


def main() -> None:
    cal = calibration()
    rows: dict[tuple[str, str, str, int], tuple[str, int, float, float]] = {}
    for run in load_runs():
        m = LAYOUT.match(run.id)
        if run.phase != "serve" or set_of(run) not in SETS or m is None:
            continue
        r = run.row
        p = _serve_plan(run.id)
        perf = plan_performance(p, cal=cal, kv_reservation=r.get("kv_reservation", "average"),
                                graph_batch_sizes=tuple(r.get("graph_batch_sizes", ())))
        batch = int(perf["saturation_concurrency"])
        pp = int(m.group("pp") or 1)
        rows[(m.group("model"), m.group("tp"), m.group("shape"), pp)] = (
            run.id, batch, batch / predict(run, cal), batch / run.value)
    print(f"{'row':28s} {'B':>5s} {'B/pp':>6s} {'pred ms':>8s} {'implied':>8s} {'r1':>5s} {'gap ms':>7s} "
          f"{'/(pp-1)':>7s}")
    staged = {(model, tp) for model, tp, _, pp in rows if pp > 1}
    for (model, tp, shape, pp), (rid, batch, pred, implied) in sorted(rows.items()):
        if (model, tp) not in staged:  # no pipeline stages measured for this model and TP
            continue
        one = rows.get((model, tp, shape, 1))
        r1 = one[3] / one[2] if one else float("nan")
        gap = implied - r1 * pred
        per = gap / (pp - 1) if pp > 1 else 0.0
        print(f"{rid:28s} {batch:5d} {batch / pp:6.0f} {pred * 1e3:8.1f} {implied * 1e3:8.1f} {r1:5.2f} "
              f"{gap * 1e3:7.1f} {per * 1e3:7.1f}")


if __name__ == "__main__":
    main()
