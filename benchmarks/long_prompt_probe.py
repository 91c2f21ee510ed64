"""Stop 63 probe (dev tooling, longctx63): every long-prompt row (20000/2000, 5000/500) of the ``trtllm-moe`` and
``trtllm-table`` sets plus PL4S-GB200-1000/1000, with its error at the shipped constants, its attention-DP flag,
tp and predicted sequences in flight. Changes nothing on disk.

    PYTHONPATH=src python benchmarks/long_prompt_probe.py
"""

from __future__ import annotations

from anchorgpu.planner.speed import runs as rs
from anchorgpu.planner.speed.calibration import calibration

EXTRA = {"PL4S-GB200-1000/1000", "PL4S-B200-1000/1000"}


def main() -> None:
    cal = calibration()
    n_in = 0
    rows = [r for r in rs.load_runs() if r.id in EXTRA or (
        r.row.get("set") in ("trtllm-moe", "trtllm-table")
        and (r.row.get("prompt_tokens"), r.row.get("output_tokens")) in ((20000, 2000), (5000, 500)))]
    for r in rows:
        p = rs.predict(r, cal)
        e = 100 * (p / r.value - 1)
        n_in += abs(e) <= 25
        print(f"{r.id:28s} {r.role:8s} {r.row.get('set'):13s} adp={int(bool(r.row.get('attention_dp_weights')))} "
              f"tp={r.row.get('tp')} pp={r.row.get('pp')} meas={r.value:8.0f} pred={p:8.0f} {e:+6.1f}%")
    print(f"within 25%: {n_in}/{len(rows)}")


if __name__ == "__main__":
    main()
