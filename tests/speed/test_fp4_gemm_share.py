"""FP4 serving products run at the GPU's measured NVFP4 GEMM share of its peak, relative to B200's.

The shares are read from AIConfigurator 0.12.0's silicon-measured GEMM tables (``systems/data/<gpu>/gemm/trtllm/
1.3.0rc20/gemm_perf.parquet``, gemm_dtype nvfp4; benchmarks/rtx_pro_6000_findings.md, section 7): median over
Llama-like products of m = 1,024-8,192 rows, B200 0.399 of its 9 PFLOP/s (the fitted ``fp4_matmul_efficiency``,
0.398, is B200's own), RTX PRO 6000 0.632 of its 2 PFLOP/s. ``Calibration.fp4_gemm_ratio``.
"""

from __future__ import annotations

import json
from importlib import resources

import pytest

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.calibration import calibration


def test_the_shares_are_stated_data_with_their_source() -> None:
    doc = json.loads(resources.files("anchorgpu.planner.speed").joinpath("data/calibration.json").read_text())
    stated = doc["stated"]["fp4_gemm_peak_share"]
    assert "gemm_perf.parquet" in stated["source"] and "AIConfigurator 0.12.0" in stated["source"]
    assert calibration().fp4_gemm_peak_share == stated["value"]
    assert stated["value"]["b200"] == 0.399 and stated["value"]["rtx-pro-6000"] == 0.632  # the tables' medians
    assert all("fp4_gemm_peak_share" not in body for body in doc["stacks"].values())  # not fitted


def test_an_fp4_product_takes_the_gpus_share_over_b200s() -> None:
    cal = calibration()
    fitted = cal.stack(get_gpu("b200")).fp4_matmul_efficiency
    assert cal.serve_precision_efficiency(get_gpu("b200"), "fp4") == fitted  # the reference GPU: as fitted
    rtx = cal.serve_precision_efficiency(get_gpu("rtx-pro-6000"), "fp4")
    assert rtx == pytest.approx(fitted * 0.632 / 0.399)  # GB202's block-scaled MMA reaches 1.58x B200's share
    assert cal.serve_precision_efficiency(get_gpu("gb200"), "fp4") == pytest.approx(fitted * 0.369 / 0.399)


def test_other_precisions_and_gpus_without_a_table_are_unchanged() -> None:
    cal = calibration()
    assert cal.fp4_gemm_ratio(get_gpu("h100-sxm")) == 1.0  # no FP4 table (and no FP4 tensor cores)
    k = cal.stack(get_gpu("rtx-pro-6000"))
    assert cal.serve_precision_efficiency(get_gpu("rtx-pro-6000"), "bf16") == pytest.approx(
        k.serve_matmul_efficiency)  # only FP4 moves
