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
