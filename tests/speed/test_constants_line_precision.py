"""The serving constants line names the peak the estimate runs at. A plan of FP8 weights on an A100 (no FP8 tensor
cores) is timed at the BF16 peak (``compute_precision`` bf16, warning fp8_without_hardware) but its assumption said
"batched products at 88% of the dense FP8 peak"."""

from __future__ import annotations

import pytest

from cli_runner import run_json


@pytest.mark.parametrize(("gpu", "peak"), [("a100-80gb-sxm", "BF16"), ("h100", "FP8")])
def test_the_line_names_the_peak_the_speed_uses(capsys: pytest.CaptureFixture[str], gpu: str, peak: str) -> None:
    data = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", gpu, "--weights", "fp8", "--concurrency", "8")
    perf = data["performance"]
    assert perf["compute_precision"] == peak.lower()
    line = next(a for a in perf["assumptions"] if a.startswith("calibrated CUDA constants"))
    assert f"of the dense {peak} peak" in line


@pytest.mark.parametrize(("gpu", "weights", "precision"), [("b200", "bf16", "bf16"), ("h100", "fp8", "fp8"),
                                                           ("b200", "nvfp4", "fp4"), ("h100", "bf16", "bf16")])
def test_the_line_states_the_share_the_products_are_timed_at(capsys: pytest.CaptureFixture[str], gpu: str, weights: str,
                                                             precision: str) -> None:
    """The line used to state serve_matmul_efficiency whatever the precision and GPU, while the step times FP8 at that
    share times the FP8/BF16 ratio, FP4 at its own fit and Blackwell at its measured GEMM share over Hopper's
    (calibration.json serve_gemm_peak_share: AIConfigurator 0.12.0's GEMM tables, stop 55 branch bwgemm)."""
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner.speed.calibration import calibration

    data = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", gpu, "--weights", weights, "--concurrency", "8")
    line = next(a for a in data["performance"]["assumptions"] if a.startswith("calibrated CUDA constants"))
    share = calibration().serve_precision_efficiency(get_gpu(gpu), precision)
    assert f"batched products at {share:.0%} of the dense {precision.upper()} peak" in line
