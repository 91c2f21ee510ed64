"""``--offload``: the optimizer step on the CPU and the parameters from host memory are timed (``offload.
host_optimizer_s``; stated host memory bandwidth ``host_memory_gb_per_s_per_gpu``), not left out of the speed."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.offload import host_optimizer_s
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step


def test_an_offloaded_optimizer_step_costs_its_host_memory_traffic() -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    steps = {off: training_step(model, gpu, TrainLayout(gpus=1, offload=off), seq_tokens=4096,
                                global_batch_tokens=16 * 4096) for off in ("none", "optimizer", "params")}
    local = model.params_total
    assert steps["optimizer"].breakdown_s["optimizer"] == pytest.approx(host_optimizer_s(gpu, calibration(), local))
    assert steps["none"].step_s < steps["optimizer"].step_s < steps["params"].step_s
    # 32 B a parameter at 50 GB/s: the CPU's step is seconds where the GPU's is milliseconds
    assert steps["optimizer"].breakdown_s["optimizer"] > 50 * steps["none"].breakdown_s["optimizer"]


def test_a_superchips_host_is_faster_and_the_plan_says_what_it_assumed() -> None:
    model = load_model("llama-3.1-8b")
    assert host_optimizer_s(get_gpu("gb200"), calibration(), 8e9) < host_optimizer_s(get_gpu("h100"), calibration(), 8e9)
    p = plan(model, Workload(task="train", seq_tokens=4096, global_batch_tokens=65536), gpu=get_gpu("h100"),
             layout=Layout(gpus=1, offload="optimizer"))
    perf = plan_performance(p)
    line = next(a for a in perf["assumptions"] if a.startswith("--offload optimizer"))
    assert "50 GB/s" in line and "no measured offload run" in line
    # 8B on one H100 fits only with the optimizer in CPU RAM; its step is then mostly the CPU's share
    assert perf["step_time_breakdown_s"]["optimizer"] > 0.3 * perf["step_time_s"]
