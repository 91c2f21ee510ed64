"""Stop 63 probe (dev tooling, trtdense63): every trtllm-bench serving row that is still sized by the vLLM stand-in
(no ``kv_free_fraction``) evaluated three ways at shipped constants: as shipped; by TensorRT-LLM's own rule at the
page's 0.95; and at the page's fallback ("0.90 or lower if out-of-memory errors are encountered") taken mechanically
from the plan (``trtllm_fallback_sizing_probe.plan_of``: the largest fraction on a 0.05 grid from 0.95 whose
graph pool + eager logits at its own trtllm-bench cap fit in the memory it leaves free). Writes nothing.

    cd benchmarks && PYTHONPATH=../src:. python trtllm_dense_fraction_probe.py [ROW-PREFIX,...] [--dense]

``--dense`` also evaluates the dense rows, whose shipped ``kv_free_fraction`` it drops first (so "ship" is the vLLM
stand-in they were planned with before stop 63); without it only the rows still on the stand-in (MoE) are shown.
    cd benchmarks && PYTHONPATH=../src:. python trtllm_dense_fraction_probe.py --fractions   # the dense rows' rule

``--fractions`` prints, for every dense trtllm-bench row (no MoE), the fraction that rule gives: the values
measured_runs.json ships as their ``kv_free_fraction`` (stop 63, trtdense63).
"""

from __future__ import annotations

import sys
from collections import Counter

import trtllm_fallback_sizing_probe as fb

from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration


def _err(run: rs.Run, cal: object) -> float:
    rs._serve_plan.cache_clear()
    return 100 * (rs.predict(run, cal) / run.value - 1)  # type: ignore[arg-type]


def dense_fractions() -> dict[str, float]:
    """Each dense trtllm-bench row's fraction under the page's rule: 0.95, less 0.05 a step while the graph pool and
    the eager logits at the row's trtllm-bench cap (12 bytes a vocabulary entry a sequence) do not fit in what it
    leaves free (``trtllm_fallback_sizing_probe.plan_of``, whose fraction is read back from the planned KV)."""
    out = {}
    rs.trtllm_bench_engine, rs._as_measured = fb._bench_engine, fb._measured  # type: ignore[assignment,attr-defined]
    for r in rs.load_runs():
        row = r.row
        if (row.get("engine_limits") != "trtllm-bench" or rs._model(row).moe is not None
                or r.metric != "max_output_tokens_per_s"):
            continue
        at = fb._plan_of(dict(row, kv_free_fraction=0.95)).breakdown["kv_cache_capacity_bytes"]
        got = fb.plan_of({k: v for k, v in row.items() if k != "kv_free_fraction"}).breakdown["kv_cache_capacity_bytes"]
        out[r.id] = round(20 * 0.95 * got / at) / 20  # back on the 0.05 grid (the KV is not exactly linear)
    return out


def main(prefixes: tuple[str, ...], dense: bool) -> None:
    cal = calibration()
    runs = []
    for r in rs.load_runs():
        if r.row.get("engine_limits") != "trtllm-bench" or not r.id.startswith(prefixes) or r.metric != "max_output_tokens_per_s":
            continue
        if dense and rs._model(r.row).moe is None:  # as main 796c846c planned it: the vLLM stand-in
            r.row.pop("kv_free_fraction", None)
        if "kv_free_fraction" not in r.row:
            runs.append(r)
    cols: dict[str, dict[str, float]] = {"ship": {}, "0.95": {}, "oom": {}}
    for r in runs:
        cols["ship"][r.id] = _err(r, cal)
        r.row["kv_free_fraction"] = 0.95
        cols["0.95"][r.id] = _err(r, cal)
        del r.row["kv_free_fraction"]
    fb._OPTS.update(adp_peak=True, fallback=True, mixed=True)
    rs.serve_plan_of, rs.trtllm_bench_engine, rs._as_measured = fb.plan_of, fb._bench_engine, fb._measured  # type: ignore[assignment,attr-defined]
    for r in runs:
        cols["oom"][r.id] = _err(r, cal)
    count: Counter[str] = Counter()
    for r in runs:
        e = {k: v[r.id] for k, v in cols.items()}
        for k, v in e.items():
            count[f"{k} {r.role}"] += abs(v) <= 25
        count[f"n {r.role}"] += 1
        flags = "".join(f" {k}:{'IN' if abs(e['ship']) > 25 >= abs(v) else 'OUT'}" for k, v in e.items()
                        if k != "ship" and (abs(e["ship"]) > 25) != (abs(v) > 25))
        print(f"{r.id:28s} {r.role:7s} {r.row.get('set', ''):16s} ship {e['ship']:+6.1f} 0.95 {e['0.95']:+6.1f} "
              f"oom-rule {e['oom']:+6.1f}{flags}")
    print(dict(count))


if __name__ == "__main__":
    if "--fractions" in sys.argv:
        for rid, f in dense_fractions().items():
            print(rid, f)
        sys.exit()
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(tuple(args[0].split(",")) if args else ("",), "--dense" in sys.argv)
