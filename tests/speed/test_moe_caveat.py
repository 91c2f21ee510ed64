"""How sure a mixture of experts' serving speeds are: its band and its caveat come from the held-out MoE rows.

The rows are TensorRT-LLM's perf-overview cells of MoE models (commit 00f3768; sets ``trtllm-pcie-moe`` and
``trtllm-moe`` of ``src/anchorgpu/planner/speed/data/measured_runs.json``), GPUStack's vLLM runs (``vllm-gpustack`` at
1-8 requests in flight, ``vllm-gpustack-moe`` with every request sent at once on A100 and H100) and InferenceMAX's runs
at 4-64 requests in flight (``inferencemax``); only every third ``trtllm-moe`` and ``inferencemax`` row fits the model,
the rest are held out.
"""

from __future__ import annotations

import re
import statistics

import pytest

from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import MOE_CAVEAT_LABEL
from anchorgpu.planner.speed.runs import Run, load_runs, predict
from cli_runner import run, run_json

ALL_MOE = [run for run in load_runs() if calibrate.serving_kind(run) == "moe"]
MOE_ROWS = [run for run in ALL_MOE if run.role == "holdout"]


def test_most_moe_rows_are_held_out_and_the_new_models_are_there() -> None:
    fitted = [run for run in ALL_MOE if run.role == "fit"]
    assert {calibrate.set_of(run) for run in fitted} == {"trtllm-moe", "inferencemax"}
    assert len(fitted) * 2 < len(MOE_ROWS)
    models = {run.row["model"]["registry"] for run in MOE_ROWS}
    assert {"qwen3-30b-a3b", "qwen3-235b-a22b", "llama-4-scout-17b-16e", "llama-4-maverick-17b-128e-fp8"} <= models


def test_the_caveat_states_what_the_held_out_rows_show() -> None:
    """The counts and the range in the caveat are the calibration's, so the caveat cannot drift from the rows."""
    caveat = calibration().caveats["moe"]
    ratios = [_as_rate(run.value / predict(run), run) for run in MOE_ROWS]  # measured / predicted, as a speed
    within = sum(abs(1.0 / r - 1.0) <= 0.25 for r in ratios)
    assert f"of {len(MOE_ROWS)} held-out MoE rows" in caveat
    assert f"{within} came within 25%" in caveat
    assert f"from {min(ratios):.2f}x to {max(ratios):.1f}x" in caveat


def _as_rate(ratio: float, run: Run) -> float:
    """A measured/predicted ratio read as a speed: a time's ratio (TPOT) inverted, as the bands read it."""
    return ratio if run.higher_is_better else 1.0 / ratio


def test_few_users_of_a_moe_are_checked_against_measured_small_batch_rows() -> None:
    """GPUStack's vLLM runs and InferenceMAX's (4-128 requests in flight) are the MoE rows with few tokens a step: the
    caveat gives how many of those held out on NVIDIA GPUs came within 25%, and the engines that ran far slower than
    predicted where others on the same GPUs did not (DeepSeek-R1 on 8 H200: vLLM 0.11 against SGLang and
    TensorRT-LLM; on 8 B200: TensorRT-LLM 1.1)."""
    small = [run for run in MOE_ROWS if run.metric == "tpot_s" and calibrate.stack_of_row(run) == "cuda"]
    assert {calibrate.set_of(run) for run in small} == {"vllm-gpustack", "vllm-gpustack-moe", "inferencemax",
                                                        "inferencemax-trt-moe", "inferencemax-sglang-moe"}
    assert all(4 <= run.row["concurrency"] <= 128 for run in small)
    speed = {run.id: run.value / predict(run) for run in small}  # measured / predicted time
    within = sum(abs(1.0 / ratio - 1.0) <= 0.25 for ratio in speed.values())
    caveat = calibration().caveats["moe"]
    assert f"{within} of {len(small)} held-out rows on NVIDIA GPUs came within 25%" in caveat
    assert f"DeepSeek-R1 on 8 H200 ran {1 / speed['VG-DSR1']:.2f}x of the predicted speed on vLLM 0.11" in caveat
    same_gpus = [ratio for key, ratio in speed.items() if key.startswith(("IM-DSR1-H200-1k", "IM-DSR1-H200-TRT"))]
    assert len(same_gpus) >= 4 and all(abs(1.0 / ratio - 1.0) <= 0.20 for ratio in same_gpus)
    assert f"{1 / speed['IM-DSR1-B200-TRT-1k-1k-C4']:.2f}x on TensorRT-LLM 1.1 on 8 B200" in caveat
    # InferenceMAX's gpt-oss-120b on TensorRT-LLM 1.2 (run 20764588467): its attention-DP rows the fastest of it
    trt_dep = [1 / ratio for key, ratio in speed.items() if key.startswith("IMT-OSS-") and "-DEP" in key]
    assert trt_dep and f"attention data parallelism ran up to {max(trt_dep):.2f}x of the predicted speed" in caveat


def test_the_caveat_states_how_gpustacks_burst_runs_fell() -> None:
    """GPUStack's vLLM baselines with every request sent at once (``vllm-gpustack-moe``, A100 80 GB and H100): how many
    came within 25%, their median and range, as the caveat says them."""
    burst = [run for run in MOE_ROWS if calibrate.set_of(run) == "vllm-gpustack-moe"]
    assert burst and {run.row["gpu"] for run in burst} == {"a100-80gb-sxm", "h100-sxm"}
    ratios = sorted(_as_rate(run.value / predict(run), run) for run in burst)
    within = sum(abs(1.0 / r - 1.0) <= 0.25 for r in ratios)
    caveat = calibration().caveats["moe"]
    assert f"{within} of {len(burst)} within 25% at a median {statistics.median(ratios):.2f}x" in caveat
    assert f"({ratios[0]:.2f}x to {ratios[-1]:.2f}x)" in caveat


def test_the_moe_band_is_wider_than_the_dense_one_and_holds_most_held_out_rows() -> None:
    cal = calibration()
    h100 = get_gpu("h100")
    moe, dense = cal.band(h100, "serve", "moe"), cal.band(h100, "serve")
    assert moe.low < dense.low and moe.high > dense.high
    inside = sum(moe.low <= _as_rate(run.value / predict(run), run) <= moe.high for run in MOE_ROWS)
    assert inside >= 0.75 * len(MOE_ROWS)  # a 10th-90th percentile band, widened to include 1


@pytest.mark.parametrize(("model", "caveat"), [("qwen3-30b-a3b", True), ("llama-3.1-8b", False)])
def test_a_plan_says_it_where_the_model_is_a_mixture_of_experts(capsys: pytest.CaptureFixture[str], model: str,
                                                                 caveat: bool) -> None:
    argv = ("plan", model, "--gpu", "b200", "--prompt", "1000", "--output-tokens", "1000", "--concurrency", "64")
    lines = run_json(capsys, *argv)["performance"]["assumptions"]
    assert any(line.startswith(MOE_CAVEAT_LABEL + ":") for line in lines) is caveat
    code, out, _ = run(capsys, *argv)
    assert code == 0
    still = out.split("Still to check", 1)[1].split("Assumed", 1)[0]
    assert bool(re.search(r"- Mixture of experts: .*held-out MoE rows", " ".join(still.split()))) is caveat
