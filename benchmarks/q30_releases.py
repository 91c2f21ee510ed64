"""Qwen3-30B-A3B and gpt-oss-120b training on Megatron-Bridge across four releases, planned with today's model.

Stop 61 (brief mboss, issue 11): decides whether MB-H100-Q30 should be restated to the 25.09 figure. Each case is a
row of NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md: 25.11 at 00b7660 (the rows in measured_runs.json);
25.09, 26.02 and 26.02.01 from later versions of the same page (code-corpus search ids 44345524581, 52152684950).
The later layouts are the stored rows with the table's GPUs, GBS, MBS, PP/VP and EP put in; nothing else changes
(precision, network, cross-entropy fusion, dispatcher are the 25.11 rows'). Run:

    PYTHONPATH=src python benchmarks/q30_releases.py
"""

from __future__ import annotations

from dataclasses import replace

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

SEQ_TOKENS = 4096  # every Qwen3-30B-A3B case; gpt-oss cases state their own
# (base row, release, what changes, measured tokens/s/GPU, the table's note)
CASES: tuple[tuple[str, str, dict[str, int], float, str], ...] = (
    ("MB-H100-Q30", "25.09", {}, 10494, "token-drop, same layout"),
    ("MB-H100-Q30", "25.11", {}, 5275, "dropless (the row)"),
    ("MB-H100-Q30", "26.02", {"global_batch_tokens": 1024 * SEQ_TOKENS, "micro_batch": 1, "virtual_stages": 12}, 5113,
     "dropless"),
    ("MB-H100-Q30", "26.02.01", {"global_batch_tokens": 1024 * SEQ_TOKENS, "micro_batch": 1, "virtual_stages": 12},
     9058, "dropless"),
    ("MB-B200-Q30", "25.09", {}, 18066, "token-drop, same layout"),
    ("MB-B200-Q30", "25.11", {}, 9299, "dropless (the row)"),
    ("MB-B200-Q30", "26.02", {}, 9691, "dropless, same layout"),
    ("MB-B200-Q30", "26.02.01", {"micro_batch": 4}, 26695, "dropless, MBS 4"),
    ("MB-GB200-Q30", "25.09", {}, 22775, "token-drop, same layout"),
    ("MB-GB200-Q30", "25.11", {}, 23766, "dropless (the row)"),
    ("MB-GB200-Q30", "26.02.01", {}, 26373, "dropless, same layout"),
    ("MB-GB300-Q30", "25.11", {}, 28934, "dropless (the row)"),
    ("MB-GB300-Q30", "26.02.01", {"micro_batch": 8}, 30411, "dropless, MBS 8"),
    ("MB-GB300-OSS120", "25.11", {}, 18347, "the row: MBS 2 x 8,192"),
    ("MB-GB300-OSS120", "26.02.01", {"seq_tokens": 4096, "micro_batch": 4, "global_batch_tokens": 1280 * 4096}, 19366,
     "MBS 4 x 4,096"),
    ("MB-GB200-OSS120", "25.11", {}, 15876, "the row: MBS 1 x 8,192"),
    ("MB-GB200-OSS120", "26.02.01", {"seq_tokens": 4096, "micro_batch": 4, "global_batch_tokens": 1280 * 4096}, 15754,
     "MBS 4 x 4,096"),
    ("MB-B200-OSS120", "25.11", {}, 8213, "the row: GBS 512, EP 8"),
    ("MB-B200-OSS120", "26.02.01", {"global_batch_tokens": 1280 * 4096}, 13722, "GBS 1,280, EP 8"),
    ("MB-B200-OSS120", "26.02", {"global_batch_tokens": 1280 * 4096, "ep": 64}, 8047, "GBS 1,280, EP 64 over 8 servers"),
    ("MB-H100-OSS120", "25.11", {}, 5630, "the row: MBS 4, GBS 512"),
    ("MB-H100-OSS120", "26.02.01", {"micro_batch": 1, "global_batch_tokens": 1280 * 4096}, 5984, "MBS 1, GBS 1,280"),
)


def main() -> None:
    rows = {r.id: r for r in load_runs()}
    cal = calibration()
    print(f"{'row':14} {'release':9} {'measured':>9} {'planned':>9} {'error':>8}  note")
    for rid, release, change, measured, note in CASES:
        base = rows[rid]
        run = replace(base, value=measured, row={**base.row, **change, "value": measured})
        planned = predict(run, cal)
        print(f"{rid:14} {release:9} {measured:9.0f} {planned:9.0f} {planned / measured - 1:+8.1%}  {note}")


if __name__ == "__main__":
    main()
