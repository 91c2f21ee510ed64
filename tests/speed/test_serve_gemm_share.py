"""BF16 and per-tensor FP8 serving products on Blackwell run at the GPU's measured GEMM share of its peak, relative to
the Hopper GPUs the fitted ``serve_matmul_efficiency`` rests on.

The shares are read from AIConfigurator 0.12.0's silicon-measured GEMM tables (PyPI aiconfigurator-core 0.12.0,
``systems/data/<gpu>/gemm/<engine>/<version>/gemm_perf.parquet``: trtllm/1.3.0rc20, vllm/0.24.0, sglang/0.5.14;
gemm_dtype bfloat16 and fp8): per table the median share of the catalog's dense peak over the cells of m = 1,024-8,192
and 11 Llama-like (n, k), then the median over the three engines (benchmarks/speed_accuracy_notes.md, 'Stop 55
(branch bwgemm)'; benchmarks/bwgemm_product_share.py). ``Calibration.serve_gemm_ratio``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.serving import ServingSetup, decode_step

# the three engines' medians (trtllm / vllm / sglang) and their median, per precision and GPU (the stated source)
ENGINE_MEDIANS = {
    "bf16": {
        "h100-sxm": (0.771, 0.803, 0.744),
        "h200": (0.772, 0.793, 0.716),
        "b200": (0.665, 0.697, 0.659),
        "gb200": (0.623, 0.675, 0.641),
        "b300": (0.692, 0.764, 0.713),
        "gb300": (0.732, 0.761, 0.720),
    },
    "fp8": {
        "h100-sxm": (0.615, 0.572, 0.586),
        "h200": (0.633, 0.634, 0.616),
        "b200": (0.540, 0.512, 0.516),
        "gb200": (0.471, 0.501, 0.507),
        "b300": (0.551, 0.534, 0.553),
        "gb300": (0.547, 0.529, 0.563),
    },
}


def test_the_shares_are_the_tables_medians_stated_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["serve_gemm_peak_share"]
    assert "gemm_perf.parquet" in stated["source"] and "AIConfigurator 0.12.0" in stated["source"]
    assert stated["reference"] == ["h100-sxm", "h200"]
    for precision, by_gpu in ENGINE_MEDIANS.items():
        assert stated["value"][precision] == {gpu: sorted(three)[1] for gpu, three in by_gpu.items()}
    cal = calibration()
    assert cal.serve_gemm_peak_share == stated["value"] and cal.serve_gemm_reference == ("h100-sxm", "h200")
    assert all("serve_gemm_peak_share" not in body for body in doc["stacks"].values())  # not fitted


def test_a_blackwell_product_takes_its_share_over_hoppers() -> None:
    cal = calibration()
    k = cal.stack(get_gpu("b200"))
    fp8_ratio = k.fp8_matmul_efficiency / k.train_matmul_efficiency
    assert cal.serve_precision_efficiency(get_gpu("b200"), "bf16") == pytest.approx(
        k.serve_matmul_efficiency * 0.665 / ((0.771 + 0.772) / 2)
    )
    assert cal.serve_precision_efficiency(get_gpu("gb200"), "fp8") == pytest.approx(
        k.serve_matmul_efficiency * fp8_ratio * 0.501 / ((0.586 + 0.633) / 2)
    )


def test_hopper_other_gpus_block_fp8_and_fp4_keep_the_fit() -> None:
    cal = calibration()
    k = cal.stack(get_gpu("h200"))
    for gpu in ("h100-sxm", "h200", "h100-pcie", "a100-80gb-sxm", "l40s", "rtx-pro-6000"):  # reference, or no entry
        assert cal.serve_gemm_ratio(get_gpu(gpu), "fp8") == 1.0 == cal.serve_gemm_ratio(get_gpu(gpu), "bf16")
    assert cal.serve_precision_efficiency(get_gpu("h200"), "bf16") == k.serve_matmul_efficiency
    # FP8 in blocks: DeepGEMM on Blackwell reaches Hopper's share (B200 0.585, GB200 0.564 against 0.561, 0.566)
    b200 = cal.serve_precision_efficiency(get_gpu("b200"), "fp8", block_fp8=True)
    assert b200 == pytest.approx(k.serve_matmul_efficiency * k.fp8_matmul_efficiency / k.train_matmul_efficiency)
    assert cal.serve_precision_efficiency(get_gpu("b200"), "fp4") == k.fp4_matmul_efficiency  # fp4_gemm_peak_share's


def test_a_blackwell_product_step_is_timed_at_its_measured_share() -> None:
    """A compute-bound step (8,192 tokens of Llama 3.1 8B in BF16 on one B200) takes its products' time at the
    measured share: 0.7715 / 0.665 of the time at the fitted efficiency alone, to within the weights' read that the
    soft roofline blends in (0.26% at stop 63's roofline_exponent, 1.149; under 0.2% at stop 62's 1.244); the same step
    on H200 is unchanged."""
    model, cal = load_model("llama-3.1-8b"), calibration()
    setup = ServingSetup(weights_bytes_per_gpu=16e9, kv_bytes_per_sequence_per_gpu=1e6, precision="bf16")
    plain = replace(cal, serve_gemm_peak_share={})
    for gpu, ratio in (("b200", 0.665 / 0.7715), ("h200", 1.0)):
        measured = decode_step(model, get_gpu(gpu), setup, batch=8192, cal=cal).weights_s
        fitted = decode_step(model, get_gpu(gpu), setup, batch=8192, cal=plain).weights_s
        assert fitted / measured == pytest.approx(ratio, rel=3e-3)
