"""Training's fused attention runs at the GPU's own measured rate against Hopper's where AIConfigurator's
context-attention tables tell the GPUs apart (``stated.train_attention_hopper_ratio``,
``attention_rate.train_attention_rate_ratio``; stop 62, brief bwtrain, benchmarks/hardening/stop62_bwtrain.md).

The family curve (``attention_head_dim_rate``, keyed by compute-capability major) gives B200, GB200, B300 and GB300
one rate, yet at training's shapes (BF16 over a BF16 cache, no window, isl 4,096-16,384, batch x isl 8,192-65,536,
at least 8 query heads; benchmarks/bwattn_train_rate.py) TensorRT-LLM's torch_flow kernel reaches these shares of
the catalog's dense BF16 peak (AIConfigurator 0.12.0, ``systems/data/<gpu>/attention/trtllm/1.3.0rc20/
context_attention_perf.parquet``), and GB300 runs 1.2-1.3x GB200 at equal peaks (Blackwell Ultra's doubled softmax
exponential throughput, NVIDIA's "Making Softmax More Efficient with NVIDIA Blackwell Ultra").
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.attention_rate import attention_rate_ratio, train_attention_rate_ratio
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict

# TensorRT-LLM torch_flow share of the dense BF16 peak at training shapes, head size 64 and 128 (read in stop 62)
TRTLLM_SHARE = {"h100-sxm": (0.399, 0.490), "h200": (0.405, 0.498), "b200": (0.277, 0.436),
                "gb200": (0.270, 0.439), "gb300": (0.348, 0.528)}
ROWS = {run.id: run for run in load_runs()}


def test_the_stated_ratios_are_the_tables_ratios_to_hopper() -> None:
    """The stated ratio (median of three engines) is within 0.03 of TensorRT-LLM's own share over Hopper's mean."""
    stated = calibration().train_attention_hopper_ratio
    for gpu in ("b200", "gb200", "gb300"):
        for i, d in enumerate((64, 128)):
            hopper = (TRTLLM_SHARE["h100-sxm"][i] + TRTLLM_SHARE["h200"][i]) / 2.0
            assert stated[gpu][d] == pytest.approx(TRTLLM_SHARE[gpu][i] / hopper, abs=0.03), (gpu, d)


def test_gb300_outruns_gb200_where_the_family_curve_gave_them_one_rate() -> None:
    cal = calibration()
    for name in ("gpt-oss-120b", "llama-3.1-8b"):  # head size 64 and 128
        model = load_model(name)
        assert attention_rate_ratio(model, get_gpu("gb300"), cal) == attention_rate_ratio(model, get_gpu("gb200"), cal)
        ratio = train_attention_rate_ratio(model, get_gpu("gb300"), cal) / train_attention_rate_ratio(
            model, get_gpu("gb200"), cal)
        assert 1.15 < ratio < 1.35, name


def test_hopper_and_unstated_gpus_keep_their_family_curve() -> None:
    cal = calibration()
    for gpu in ("h100", "h200", "a100", "h100-pcie", "mi300x"):
        for name in ("gpt-oss-120b", "llama-3.1-8b", "deepseek-v3"):
            model = load_model(name)
            assert train_attention_rate_ratio(model, get_gpu(gpu), cal) == attention_rate_ratio(
                model, get_gpu(gpu), cal), (gpu, name)


def test_the_rows_move_with_the_gpu_ratio_and_without_it_fall_back() -> None:
    """Megatron-Bridge 25.11 (docs/performance-summary.md, 00b7660): Llama 3 8B FP8 on 8 GB300 ran 37,556 tokens/s a
    GPU against 31,508 on GB200 (1.19x), and the plan's GB300/GB200 ratio grows towards it with the GPU ratio; without
    the stated table both plan as before and the H100 row is untouched."""
    cal = calibration()
    plain = replace(cal, train_attention_hopper_ratio={})
    gb300, gb200 = ROWS["MB-GB300-L3-8B"], ROWS["MB-GB200-L3-8B"]
    with_ratio = predict(gb300, cal) / predict(gb200, cal)
    without = predict(gb300, plain) / predict(gb200, plain)
    assert without < 1.02 < with_ratio < gb300.value / gb200.value
    assert predict(ROWS["MB-H100-L3-8B"], plain) == predict(ROWS["MB-H100-L3-8B"], cal)
    # gpt-oss-120b (head size 64, 25.11: 15,876 measured) on GB200 plans slower than the family curve had it
    assert predict(ROWS["MB-GB200-OSS120"], cal) < 0.98 * predict(ROWS["MB-GB200-OSS120"], plain)


def test_serving_keeps_the_family_curve() -> None:
    """Serving's prefill and decode attention read attention_rate_ratio (the family curve): the stated table does
    not reach a serving row."""
    cal = calibration()
    plain = replace(cal, train_attention_hopper_ratio={})
    serving = [run for run in ROWS.values() if run.phase == "serve" and run.row["gpu"] in ("gb200", "b200")][:6]
    assert serving
    for run in serving:
        assert predict(run, cal) == predict(run, plain), run.id
