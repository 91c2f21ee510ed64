"""Training plans say which kernels their memory and speed assume, with what one GPU measured for transformers run
eagerly and compiled, and warn when the headroom would not hold an eager stack's extra activations.

Measurements: benchmarks/device/h200_2026-12-04.json (one NVIDIA H200, torch 2.11, transformers 5.17, CUDA 13.0,
made by benchmarks/device/h200_measure.py); benchmarks/device/compare.py --write turns them into
src/anchorgpu/planner/data/eager_stack.json.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.eager_stack import eager_stack, memory_line, speed_line
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.units import GIB

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "benchmarks" / "device" / "h200_2026-12-04.json"
SHIPPED = ROOT / "src" / "anchorgpu" / "planner" / "data" / "eager_stack.json"


def _compare_module():  # benchmarks/ is no package: load the script that writes the shipped file
    spec = importlib.util.spec_from_file_location("device_compare", ROOT / "benchmarks" / "device" / "compare.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _train(model: str, gpu: str, *, micro_batch: int, seq: int = 4096, recompute: str = "none"):
    return plan(load_model(model), Workload(task="train", seq_tokens=seq, micro_batch=micro_batch, recompute=recompute),
                layout=Layout(gpus=1, zero=0), gpu=get_gpu(gpu))


def test_the_shipped_ratios_are_what_the_script_computes_from_the_committed_run() -> None:
    computed = _compare_module().stack_ratios(json.loads(RUN.read_text()))
    shipped = json.loads(SHIPPED.read_text())
    assert shipped["eager"] == computed["eager"]
    assert shipped["compiled"] == computed["compiled"]
    assert shipped["rows"] == computed["rows"]
    # the run's seven training rows that fit, eager and compiled
    assert len(computed["rows"]) == 8
    assert {r["stack"] for r in computed["rows"]} == {"eager", "compiled"}


def test_the_measured_spans_say_what_the_run_showed() -> None:
    s = eager_stack()
    # eager transformers keeps about 1.3x the planned activations without recompute (the plan's Megatron-Core loss
    # holds 6 bytes a logit); with full recompute that loss outweighs the layers' checkpoints, and the run kept a
    # little less than planned
    assert 1.2 < s.eager_activations_no_recompute[0] <= s.eager_activations_no_recompute[1] < 1.5
    assert 0.85 < s.eager_activations_full_recompute[1] < s.eager_activations_no_recompute[0]
    # a compiled model peaks within 5% of the plan's total; eager speed is below the Megatron-class prediction
    assert 0.93 <= s.compiled_peak[0] <= s.compiled_peak[1] <= 1.05
    assert s.eager_speed[1] < 1.0 and s.compiled_speed[1] < 1.0


def test_every_full_training_plan_states_the_stack_its_memory_and_speed_assume() -> None:
    p = _train("llama-3.2-1b", "h200", micro_batch=4)
    assert memory_line() in p.assumptions
    assert "1.27-1.36x the planned activations" in memory_line()
    assert "benchmarks/device/h200_2026-12-04.json" in memory_line()
    assert speed_line() in plan_performance(p)["assumptions"]
    lora = plan(load_model("llama-3.2-1b"), Workload(task="lora", seq_tokens=4096), layout=Layout(gpus=1),
                gpu=get_gpu("h200"))
    assert memory_line() not in lora.assumptions  # measured on full training only
    serve = plan(load_model("llama-3.2-1b"), Workload(task="inference", prompt_tokens=1000, output_tokens=200),
                 layout=Layout(gpus=1), gpu=get_gpu("h200"))
    assert memory_line() not in serve.assumptions


def test_a_plan_that_fits_a_fused_stack_but_not_the_measured_eager_one_is_warned() -> None:
    run = {(r["model"], r["micro_batch"], r["recompute"]): r for r in json.loads(RUN.read_text())["train"]}
    measured = run[("llama-3.2-3b", 2, "none")]
    in_use = measured["peak_allocated_bytes"] + measured["device_used_bytes"] - measured["reserved_now_bytes"]
    h100 = get_gpu("h100")
    # eager transformers needed 84.6 GiB for Llama-3.2-3B, micro-batch 2 x 4,096, on the H200: more than an H100 has
    assert in_use > h100.memory_bytes
    tight = _train("llama-3.2-3b", "h100", micro_batch=2)
    assert tight.fits  # for fused kernels
    codes = [w.code for w in tight.warnings]
    assert "eager_activations_exceed_headroom" in codes
    text = next(w.message for w in tight.warnings if w.code == "eager_activations_exceed_headroom")
    assert "1.36x the planned activations" in text and "headroom" in text
    assert any("torch.compile" in c for c in tight.checks)
    roomy = _train("llama-3.2-3b", "h100", micro_batch=1)
    assert roomy.fits and "eager_activations_exceed_headroom" not in [w.code for w in roomy.warnings]


@pytest.mark.parametrize(("model", "gpu", "micro_batch", "seq", "recompute"), [
    ("llama-3.2-3b", "h100", 1, 8192, "none"),
    ("llama-3.2-3b", "h100", 3, 2048, "none"),
    ("llama-3.1-8b", "h200", 1, 4096, "full"),
    ("llama-3.1-8b", "h200", 4, 4096, "full"),
    ("llama-3.2-1b", "l4", 1, 4096, "none"),
])
def test_the_warning_fires_exactly_when_the_headroom_is_below_the_eager_extra(
        model: str, gpu: str, micro_batch: int, seq: int, recompute: str) -> None:
    p = _train(model, gpu, micro_batch=micro_batch, seq=seq, recompute=recompute)
    warned = "eager_activations_exceed_headroom" in [w.code for w in p.warnings]
    if not p.fits:
        assert not warned  # a plan that does not fit says so instead
        return
    extra = p.per_gpu.activations_bytes * (eager_stack().activation_ratio(recompute) - 1)
    assert warned == (extra > p.headroom_bytes), (p.headroom_bytes / GIB, extra / GIB)
