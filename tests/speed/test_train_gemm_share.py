"""BF16 training products on Blackwell run at the GPU's measured GEMM share of its peak relative to the Hopper GPUs
the fitted ``train_matmul_efficiency`` rests on (``Calibration.train_gemm_ratio``; stop 61, brief mboss,
benchmarks/hardening/stop61_mboss.md).

The shares are serving's stated ``serve_gemm_peak_share`` (AIConfigurator 0.12.0's silicon-measured GEMM tables,
m = 1,024-8,192). The same tables at training's rows (trtllm/1.3.0rc20 ``gemm_perf.parquet``, gemm_dtype bfloat16,
the same 11 Llama-like (n, k), m = 8,192-65,536 in multiples of 256, 29 cells a GPU; median share of the catalog's
dense BF16 peak) keep the Blackwell parts below Hopper by the same ratios, which is what lets training take them.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.overrides import Overrides, calibrated
from anchorgpu.planner.speed.runs import load_runs, predict

# median BF16 share of the dense peak at m = 8,192-65,536 (trtllm/1.3.0rc20 tables, read in stop 61)
TRAINING_ROWS_SHARE = {"h100-sxm": 0.776, "b200": 0.674, "gb200": 0.640, "gb300": 0.743}
ROWS = {run.id: run for run in load_runs()}


def test_the_ratio_holds_at_training_rows() -> None:
    cal = calibration()
    for gpu in ("b200", "gb200", "gb300"):
        at_training_rows = TRAINING_ROWS_SHARE[gpu] / TRAINING_ROWS_SHARE["h100-sxm"]
        assert cal.train_gemm_ratio(get_gpu(gpu), "bf16") == pytest.approx(at_training_rows, abs=0.015), gpu
        assert cal.train_gemm_ratio(get_gpu(gpu), "bf16") < 0.96, gpu


def test_hopper_ampere_fp8_and_user_efficiencies_keep_the_fit() -> None:
    cal = calibration()
    for gpu in ("h100-sxm", "h200", "a100-80gb-sxm"):
        assert cal.train_gemm_ratio(get_gpu(gpu), "bf16") == 1.0, gpu
    for precision in ("fp8", "fp4"):
        assert cal.train_gemm_ratio(get_gpu("gb200"), precision) == 1.0, precision
    user = calibrated(Overrides(mfu=0.4))
    assert user.train_gemm_ratio(get_gpu("gb200"), "bf16") == 1.0


def test_a_blackwell_bf16_training_row_is_planned_at_its_measured_share() -> None:
    """Without the share a BF16 MoE row on GB200 (gpt-oss-120b, Megatron-Bridge 25.11: products about three fifths
    of its micro-batch) plans faster; an H100 BF16 row and a GB200 FP8 row (only its BF16 LM head moves) do not."""
    cal = calibration()
    plain = replace(cal, serve_gemm_peak_share={})
    gb200_bf16 = predict(ROWS["MB-GB200-OSS120"], plain) / predict(ROWS["MB-GB200-OSS120"], cal)
    assert gb200_bf16 > 1.05
    assert predict(ROWS["MB-H100-OSS120"], plain) == predict(ROWS["MB-H100-OSS120"], cal)
    gb200_fp8 = predict(ROWS["MB-GB200-Q30"], plain) / predict(ROWS["MB-GB200-Q30"], cal)
    assert 1.0 < gb200_fp8 < 1.02


def test_the_step_line_states_the_share_the_products_run_at() -> None:
    """The plan's step assumption said "BF16 products at a calibrated 66% of the dense peak" on a B200 whose products
    the model runs at 66% x 0.862 (stop 61, found after mboss's merge): it now states the share they run at and where
    it comes from; Hopper's line is unchanged."""
    from anchorgpu.architectures import load_model
    from anchorgpu.planner import Layout, Workload, plan
    from anchorgpu.planner.speed.estimate import plan_performance

    def products_clause(gpu: str) -> str:
        p = plan(load_model("llama-3.1-8b"), Workload(task="train"), gpu=get_gpu(gpu), layout=Layout(gpus=8))
        line = next(a for a in plan_performance(p)["assumptions"] if "products at a calibrated" in a)
        return line.split("; ")[1]

    cal = calibration()
    fitted, ratio = cal.stack(get_gpu("b200")).train_matmul_efficiency, cal.train_gemm_ratio(get_gpu("b200"), "bf16")
    assert products_clause("b200").startswith(f"BF16 products at a calibrated {fitted * ratio:.0%} of the dense peak "
                                              f"for large shapes ({fitted:.0%} fitted on Hopper x {ratio:.3f}")
    assert products_clause("h100").startswith(f"BF16 products at a calibrated {fitted:.0%} of the dense peak for "
                                              "large shapes (less for")
