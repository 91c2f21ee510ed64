"""The megatron-bridge set as it would stand on the 26.02.01 table: every 26.02.01 pre-training row that has a
25.11 row of the same model and GPU in measured_runs.json, planned with today's model (stop 63, brief mbmoe63).

Source: NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, the "26.02.01 NeMo Container" tables (a later version
of the page than the rows' 00b7660; code-corpus search id 52152684950). Each case is the 25.11 row with the 26.02.01
table's GPUs, precision, GBS, MBS, TP/PP/CP/VP/EP and FSDP put in; everything else (network, cross-entropy fusion,
dispatcher, recompute) is the 25.11 row's. A changed PP or VP drops the row's explicit pipeline layout (the planner
then splits the layers as evenly as it can). NVFP4 is planned as fp4, MXFP8 and FP8 as fp8, as the set does. B300
rows are left out (no 25.11 row). This asks whether restating the set (not single rows) to 26.02.01 would change
what passes; it is input for the lead, not a data change. Run:

    PYTHONPATH=src python benchmarks/mb_26_02_01.py
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anchorgpu.errors import InvalidWorkload
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

K = 1024
# (25.11 base row, label, what changes, 26.02.01 tokens/s/GPU); gbs in sequences, turned into tokens below
CASES: tuple[tuple[str, str, dict[str, Any], float], ...] = (
    ("MB-GB300-L3-70B", "GB300 L3-70B NVFP4", {"precision": "fp4", "gbs": 256, "zero": 1}, 7002),
    ("MB-GB200-L3-70B", "GB200 L3-70B NVFP4", {"precision": "fp4", "gbs": 256, "micro_batch": 1, "tp": 2, "pp": 4,
                                               "virtual_stages": 5, "zero": 1}, 4557),
    ("MB-GB300-L3-70B", "GB300 L3-70B MXFP8", {"gbs": 256, "pp": 4, "zero": 1}, 4798),
    ("MB-GB200-L3-70B", "GB200 L3-70B MXFP8", {"gbs": 256, "micro_batch": 1, "tp": 2, "pp": 4, "virtual_stages": 5,
                                               "zero": 1}, 3837),
    ("MB-GB300-L3-70B", "GB300 L3-70B FP8 (FSDP)", {"gbs": 256}, 5243),
    ("MB-GB200-L3-70B", "GB200 L3-70B FP8 (FSDP)", {"gbs": 256}, 4357),
    ("MB-H100-L3-70B", "H100 L3-70B FP8", {"gbs": 256}, 1639),
    ("MB-GB300-L31-405B", "GB300 L3.1-405B NVFP4", {"precision": "fp4", "tp": 4, "cp": 1}, 1358),
    ("MB-GB200-L31-405B", "GB200 L3.1-405B NVFP4", {"precision": "fp4"}, 1083),
    ("MB-GB300-L31-405B", "GB300 L3.1-405B MXFP8", {}, 949),
    ("MB-GB200-L31-405B", "GB200 L3.1-405B MXFP8", {"virtual_stages": 8}, 775),
    ("MB-GB300-L31-405B", "GB300 L3.1-405B FP8", {}, 1024),
    ("MB-GB200-L31-405B", "GB200 L3.1-405B FP8", {}, 818),
    ("MB-GB300-DSV3-MX", "GB300 DSV3 MXFP8", {"gbs": 4096, "micro_batch": 2, "virtual_stages": 8}, 4691),
    ("MB-GB200-DSV3", "GB200 DSV3 MXFP8", {"precision": "fp8", "gbs": 4096}, 4021),
    ("MB-B200-DSV3-MX", "B200 DSV3 MXFP8", {"gbs": 4096}, 2790),
    ("MB-GB300-OSS120", "GB300 gpt-oss MBS 4 x 4,096", {"seq_tokens": 4096, "micro_batch": 4, "gbs": 1280}, 19366),
    ("MB-GB200-OSS120", "GB200 gpt-oss MBS 4 x 4,096", {"seq_tokens": 4096, "micro_batch": 4, "gbs": 1280}, 15754),
    ("MB-B200-OSS120", "B200 gpt-oss GBS 1,280", {"gbs": 1280}, 13722),
    ("MB-H100-OSS120", "H100 gpt-oss MBS 1 GBS 1,280", {"micro_batch": 1, "gbs": 1280}, 5984),
    ("MB-GB300-Q30", "GB300 Q30 MBS 8", {"micro_batch": 8}, 30411),
    ("MB-GB200-Q30", "GB200 Q30", {}, 26373),
    ("MB-B200-Q30", "B200 Q30 MBS 4", {"micro_batch": 4}, 26695),
    ("MB-H100-Q30", "H100 Q30 MBS 1 VP 12 GBS 1,024", {"micro_batch": 1, "virtual_stages": 12, "gbs": 1024}, 9058),
    ("MB-GB200-Q235", "GB300 Q235 MXFP8", {"gpu": "gb300", "precision": "fp8", "micro_batch": 2, "pp": 4,
                                            "virtual_stages": 1}, 6583),
    ("MB-GB200-Q235", "GB200 Q235 MXFP8", {"precision": "fp8", "virtual_stages": 1}, 5530),
    ("MB-GB200-Q235", "H100 Q235 FP8", {"gpu": "h100-sxm", "precision": "fp8", "tp": 2, "virtual_stages": 4}, 1611),
)


def case_row(base: dict[str, Any], change: dict[str, Any], value: float) -> dict[str, Any]:
    """The 25.11 row with a 26.02.01 table row's settings put in."""
    change = dict(change)
    gbs = change.pop("gbs", None)
    row = {**base, **change, "value": value}
    if gbs is not None:
        row["global_batch_tokens"] = gbs * row["seq_tokens"]
    elif "seq_tokens" in change:  # the same sequences at a new length
        row["global_batch_tokens"] = base["global_batch_tokens"] // base["seq_tokens"] * row["seq_tokens"]
    if ("pp" in change or "virtual_stages" in change) and "pipeline_layout" in row:
        del row["pipeline_layout"]
    return row


def main() -> None:
    rows = {r.id: r for r in load_runs()}
    cal = calibration()
    inside = planned_cases = 0
    print(f"{'26.02.01 case':34} {'base 25.11 row':18} {'25.11 err':>9} {'measured':>9} {'planned':>9} {'error':>8}")
    for rid, label, change, measured in CASES:
        base = rows[rid]
        run = replace(base, value=measured, row=case_row(base.row, change, measured))
        try:
            planned = predict(run, cal)
        except InvalidWorkload as exc:  # e.g. more chunks than layers: the table's layout needs an explicit split
            print(f"{label:34} {rid:18} not planned: {exc}")
            continue
        err = planned / measured - 1
        inside += abs(err) <= 0.25
        planned_cases += 1
        print(f"{label:34} {rid:18} {predict(base, cal) / base.value - 1:+9.1%} {measured:9.0f} {planned:9.0f} "
              f"{err:+8.1%}")
    print(f"within 25%: {inside}/{planned_cases}")


if __name__ == "__main__":
    main()
