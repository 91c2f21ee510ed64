"""What backs a serving plan with expert parallelism wider than TP (attention data parallelism): three held-out runs
of TensorRT-LLM's DeepSeek-R1 guide serve that way, and the plan says how they and TensorRT-LLM's throughput tables,
which ran their MoE models with its MoE command (docs/source/performance/perf-overview.md, commit 00f3768: ``--ep``
of an unstated size and ``enable_attention_dp``), fall around the timing, beside the TP reading the calibration keeps.
``benchmarks/trtllm_moe_as_attention_dp.py`` plans both readings; the caveat's figures are recomputed here, so it
cannot drift from the model."""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path
from typing import Any

import pytest

from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.caveats import ATTENTION_DP_CAVEAT_LABEL
from cli_runner import run, run_json

ROOT = Path(__file__).resolve().parents[2]
MAVERICK = ("plan", "llama-4-maverick-17b-128e-fp8", "--gpu", "h200", "--gpus", "8", "--prompt", "1000",
            "--output-tokens", "1000", "--concurrency", "64")


def _readings() -> Any:  # benchmarks/ is no package: load the script
    spec = importlib.util.spec_from_file_location("moe_as_dp", ROOT / "benchmarks" / "trtllm_moe_as_attention_dp.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_caveat_gives_both_readings_of_the_tables() -> None:
    readings = _readings()
    as_tp, as_dp = readings.both()
    cells = readings.multi_gpu_cells(as_tp, as_dp)
    caveat = calibration().caveats["attention_dp"]
    assert f"their {len(cells)} multi-GPU MoE cells" in caveat
    median, low, high, within = readings.speeds(as_dp, cells)
    assert f"a median {median:.2f}x of this timing ({low:.2f}x to {high:.2f}x for the middle eight in ten; " \
           f"{within} within 25%)" in caveat
    median, low, high, within = readings.speeds(as_tp, cells)
    assert f"against {median:.2f}x ({low:.2f}x to {high:.2f}x; {within} within 25%) read as TP" in caveat
    assert readings.speeds(as_tp, cells)[3] > readings.speeds(as_dp, cells)[3]  # why the calibration reads TP


def test_the_caveat_gives_the_measured_attention_dp_runs() -> None:
    """TensorRT-LLM's DeepSeek-R1 guide ran attention data parallelism with every setting stated (rows TRT-DSR1-ADP-*
    of measured_runs.json, held out): measured over predicted output, as the caveat gives it."""
    from anchorgpu.planner.speed.rows_report import speed_ratio
    from anchorgpu.planner.speed.runs import load_runs, predict

    runs = {run.id: run for run in load_runs() if run.id.startswith("TRT-DSR1-ADP-")}
    assert len(runs) == 3 and all(run.role == "holdout" and run.row["ep"] == 8 and run.row["tp"] == 1
                                  for run in runs.values())
    speed = {key: run.value / predict(run) for key, run in runs.items()}
    caveat = calibration().caveats["attention_dp"]
    # InferenceMAX's gpt-oss-120b on TensorRT-LLM 1.2 under attention DP (run 20764588467, set inferencemax-trt-moe)
    dep = {run.id: run for run in load_runs() if run.id.startswith("IMT-OSS-") and "-DEP" in run.id}
    assert len(dep) == 7 and all(run.role == "holdout" and run.row["ep"] > run.row["tp"] == 1 for run in dep.values())
    assert "ten measured runs" in caveat and len(runs) + len(dep) == 10
    s = sorted(speed_ratio(run, predict(run)) for run in dep.values())
    within = sum(abs(1 / x - 1) <= 0.25 for x in s)
    assert (f"at a median {statistics.median(s):.2f}x of this timing's speed ({s[0]:.2f}x to {s[-1]:.2f}x; {within} of "
            f"{len(s)} within 25%)") in caveat
    assert (f"measured {speed['TRT-DSR1-ADP-H200']:.2f}x of this timing's output on 8 H200 (FP8) but "
            f"{speed['TRT-DSR1-ADP-B200-FP8KV']:.2f}x and {speed['TRT-DSR1-ADP-B200-BF16KV']:.2f}x on 8 B200") in caveat


def test_an_attention_dp_plan_says_so_and_a_tp_plan_does_not(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, *MAVERICK, "--tp", "1", "--dp", "8", "--ep", "8")
    assert code == 0
    still = " ".join(out.split("Still to check", 1)[1].split("Assumed", 1)[0].split())
    assert f"- {ATTENTION_DP_CAVEAT_LABEL}: ten measured runs serve a mixture of experts this way" in still
    tp = run_json(capsys, *MAVERICK, "--tp", "8", "--json")["performance"]["assumptions"]
    assert not any(line.startswith(ATTENTION_DP_CAVEAT_LABEL) for line in tp)
