"""A training plan's step time carries its band and its roofline bound (a floor: the shortest step), as the rate it
follows from does: the step's tokens over the rate's high end, its low end and its ceiling (the way ``train_time_s``
is derived), in the plan's JSON, the CLI's speed lines and both languages of the plan page."""

from __future__ import annotations

import re

import pytest

from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner._examples import llama_3_1_8b
from anchorgpu.planner.speed.estimate import plan_performance
from cli_runner import run, run_json


def _training_performance(**options: object) -> dict:
    p = plan(llama_3_1_8b(), Workload(task="train", seq_tokens=4096), gpu=get_gpu("h100"),
             layout=Layout(gpus=8, tp=1, pp=1, dp=8, zero=1), suggest=False, choose_layout=False)
    return plan_performance(p, train_tokens=10**10, **options)  # type: ignore[arg-type]


def test_the_step_time_band_follows_from_the_throughput_band() -> None:
    perf = _training_performance()
    tokens = perf["global_batch_tokens"]
    assert perf["step_time_s_low"] < perf["step_time_s"] < perf["step_time_s_high"]
    assert perf["step_time_s_low"] == pytest.approx(tokens / perf["train_tokens_per_s_high"], rel=1e-12)
    assert perf["step_time_s_high"] == pytest.approx(tokens / perf["train_tokens_per_s_low"], rel=1e-12)
    assert perf["step_time_s_ceiling"] == pytest.approx(tokens / perf["train_tokens_per_s_ceiling"], rel=1e-12)
    assert perf["step_time_s_ceiling"] <= perf["step_time_s_low"]
    # the same relation as the run's time and its GPU-hours
    steps = perf["train_time_s"] / perf["step_time_s"]
    assert perf["train_time_s_low"] == pytest.approx(steps * perf["step_time_s_low"], rel=1e-9)
    assert perf["train_time_s_ceiling"] == pytest.approx(steps * perf["step_time_s_ceiling"], rel=1e-9)


def test_with_the_users_efficiencies_the_step_keeps_its_ceiling() -> None:
    perf = _training_performance(mfu=0.4)
    assert perf["efficiencies"] == "user"
    assert perf["step_time_s_ceiling"] < perf["step_time_s"]


def test_the_cli_writes_the_step_the_run_and_its_gpu_hours_with_band_and_ceiling(
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tokens", "1e10")
    perf = run_json(capsys, *argv)["performance"]
    code, out, _ = run(capsys, *argv)
    assert code == 0
    text = re.sub(r"\s+", " ", out)
    step = re.search(r"step ([\d.,]+) s \(([\d.,]+) s-([\d.,]+) s; floor ([\d.,]+) s\) = ", text)
    assert step, text
    shown = [float(v.replace(",", "")) for v in step.groups()]
    for value, key in zip(shown, ("step_time_s", "step_time_s_low", "step_time_s_high", "step_time_s_ceiling"),
                          strict=True):
        assert value == pytest.approx(perf[key], rel=5e-3)
    hours = re.search(r"([\d,]+) GPU-hours \(([\d,]+)-([\d,]+); floor ([\d,]+)\)", text)
    assert hours, text
    assert int(hours.group(4).replace(",", "")) == round(perf["gpu_hours_ceiling"])
    assert re.search(r"training time [\d.,]+ \w+ \([\d.,]+ \w+-[\d.,]+ \w+; floor [\d.,]+ \w+\)", text), text
