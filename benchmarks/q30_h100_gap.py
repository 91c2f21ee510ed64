"""What MB-H100-Q30's gap scales with: Qwen3-30B-A3B on H100 across Megatron-Bridge releases, against the same
release's Qwen3-235B-A22B H100 run and the B200 Qwen3-30B-A3B runs (stop 63, brief mbmoe63, issue 11).

Each case is a row of NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md: 25.11 at 00b7660 (measured_runs.json)
and 25.09, 26.02, 26.02.01 from a later version of the page (code-corpus search id 52152684950; 25.09's H100 and B200
Qwen3-30B-A3B runs are token-drop, every other one dropless). A case is its base row with the table's GPUs, GBS, MBS,
TP/PP/VP/EP and precision put in; nothing else changes. The two Qwen3-235B-A22B cases are 25.11 table rows that
measured_runs.json does not hold (DGX-H100 FP8-CS and DGX-GB300 BF16), planned from MB-GB200-Q235 with their layouts.

For each case: measured and planned step, and the measured-minus-planned gap divided four ways (per micro-batch, per
virtual-pipeline chunk a GPU runs, per token-layer, per routed-expert product), to tell a per-micro-batch host cost
(the model's ``moe_host_s_per_expert_gemm`` term) from a cost that grows with tokens or with pipeline chunks. Run:

    PYTHONPATH=src python benchmarks/q30_h100_gap.py
"""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.experts import expert_gemms_per_layer
from anchorgpu.planner.speed.runs import _model, load_runs, predict

S = 4096  # every case's sequence length
H100_Q235 = {"gpu": "h100-sxm", "gpus": 256, "tp": 2, "pp": 8, "virtual_stages": 4, "ep": 32, "micro_batch": 1,
             "precision": "fp8"}
# (base row, label, what changes, measured tokens/s/GPU)
CASES: tuple[tuple[str, str, dict[str, object], float], ...] = (
    ("MB-H100-Q30", "H100 Q30 25.09 token-drop, MBS 2 VP 24", {}, 10494),
    ("MB-H100-Q30", "H100 Q30 25.11 (the row), MBS 2 VP 24", {}, 5275),
    ("MB-H100-Q30", "H100 Q30 26.02, MBS 1 VP 12 GBS 1024",
     {"micro_batch": 1, "virtual_stages": 12, "global_batch_tokens": 1024 * S}, 5113),
    ("MB-H100-Q30", "H100 Q30 26.02.01, MBS 1 VP 12 GBS 1024",
     {"micro_batch": 1, "virtual_stages": 12, "global_batch_tokens": 1024 * S}, 9058),
    ("MB-B200-Q30", "B200 Q30 25.09 token-drop, MBS 1", {}, 18066),
    ("MB-B200-Q30", "B200 Q30 25.11 (the row), MBS 1", {}, 9299),
    ("MB-B200-Q30", "B200 Q30 26.02, MBS 1", {}, 9691),
    ("MB-B200-Q30", "B200 Q30 26.02.01, MBS 4", {"micro_batch": 4}, 26695),
    ("MB-GB200-Q235", "H100 Q235 25.11 FP8-CS (not a row)", {**H100_Q235, "global_batch_tokens": 2048 * S}, 1575),
    ("MB-GB200-Q235", "H100 Q235 26.02.01 GBS 8192", {**H100_Q235, "global_batch_tokens": 8192 * S}, 1611),
    ("MB-GB200-Q235", "GB300 Q235 25.11 BF16 (not a row)",
     {"gpu": "gb300", "gpus": 256, "tp": 1, "pp": 4, "virtual_stages": 12, "ep": 16, "micro_batch": 2,
      "global_batch_tokens": 8192 * S}, 6131),
)


class Gap(NamedTuple):
    label: str
    measured: float
    planned: float
    step_measured_s: float
    step_planned_s: float
    per_microbatch_s: float  # the gap over the micro-batches one rank runs a step
    per_chunk_s: float  # over its (micro-batch, virtual stage) pairs
    per_token_layer_s: float  # over its tokens x layers
    per_expert_product_s: float  # over its routed-expert products (0.0 for a dense model)


def gaps() -> list[Gap]:
    """Every case's measured-minus-planned step, divided four ways."""
    rows = {r.id: r for r in load_runs()}
    cal = calibration()
    out = []
    for rid, label, change, measured in CASES:
        base = rows[rid]
        r = {**base.row, **change, "value": measured}
        planned = predict(replace(base, value=measured, row=r), cal)
        model = _model(r)  # the row's model as calibrate builds it
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        mbs = r["micro_batch"]
        m = r["global_batch_tokens"] / (S * mbs * dp)  # micro-batches a step on each rank
        layers = model.num_layers / r["pp"]  # a GPU's layers
        step_meas = r["global_batch_tokens"] / (measured * r["gpus"])
        step_plan = r["global_batch_tokens"] / (planned * r["gpus"])
        gap = step_meas - step_plan
        moe = model.moe
        products = m * layers * (moe.num_experts / r["ep"]) * expert_gemms_per_layer() if moe else 0.0
        out.append(Gap(label, measured, planned, step_meas, step_plan, gap / m, gap / (m * r["virtual_stages"]),
                       gap / (m * mbs * S * layers), gap / products if products else 0.0))
    return out


def main() -> None:
    print(f"{'case':42} {'meas':>6} {'plan':>6} {'err':>7} {'step s':>13} | gap per: {'mb ms':>6} {'chunk ms':>8} "
          f"{'tok-layer us':>12} {'product us':>10}")
    for g in gaps():
        print(f"{g.label:42} {g.measured:6.0f} {g.planned:6.0f} {g.planned / g.measured - 1:+7.1%} "
              f"{g.step_measured_s:6.2f}/{g.step_planned_s:6.2f} | {'':9}{1e3 * g.per_microbatch_s:6.1f} "
              f"{1e3 * g.per_chunk_s:8.2f} {1e6 * g.per_token_layer_s:12.2f} {1e6 * g.per_expert_product_s:10.1f}")


if __name__ == "__main__":
    main()
