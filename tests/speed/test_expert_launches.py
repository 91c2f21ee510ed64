"""The host time a MoE training step waits for: one product launched per expert a GPU holds, after each MoE layer's
tokens-per-expert sync (``experts.expert_launch_s``; calibration ``moe_host_s_per_expert_gemm``, fitted on every
third MoE row of Megatron-Bridge's pre-training table, NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md,
commit 00b7660, the rest held out).

Before it, the held-out MoE training runs came 9 of 23 within 25% (0.23x-1.04x of the predicted speed), and the
spread followed the experts a GPU holds: Qwen3-30B-A3B (16 experts a GPU under EP 8) ran 0.23-0.65x while DeepSeek-V3
and Qwen3-235B-A22B with 4-8 experts a GPU came within 25%. Megatron-LM's DeepSeek-V3 guide for GB200
(docs/discussions/deepseek-v3-gb200-optimization, Yao et al.) names the cause: host-bound MoE layers, whose grouped
product launches one cuBLAS product per local expert, with their FP8 casts and allocations.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed import calibrate, fitting
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.experts import expert_gemms_per_layer, expert_launch_s
from anchorgpu.planner.speed.runs import Run, load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import BREAKDOWN_KEYS, training_step

RUNS = load_runs()
MOE_TRAIN = [run for run in RUNS if run.phase == "train" and calibrate.band_kind(run) == "moe"]


def _speed_ratio(run: Run) -> float:
    ratio = run.value / predict(run)
    return ratio if run.higher_is_better else 1.0 / ratio


def test_the_launch_time_grows_with_the_experts_a_gpu_holds() -> None:
    model = load_model("qwen3-30b-a3b")  # 128 experts in each of its 48 layers
    per_ep = {ep: expert_launch_s(model, ep, 48, 50e-6) for ep in (1, 2, 8)}
    assert per_ep[1] == pytest.approx(2 * per_ep[2]) == pytest.approx(8 * per_ep[8])
    assert per_ep[8] == pytest.approx(48 * 16 * 6 * 50e-6)
    # under LoRA the frozen experts compute no weight gradients; full recompute runs their forward pair again
    assert expert_gemms_per_layer("lora") < expert_gemms_per_layer() < expert_gemms_per_layer(recompute="full")
    assert expert_launch_s(load_model("llama-3.1-8b"), 1, 32, 50e-6) == 0.0


def test_the_step_reports_the_launch_time_as_its_own_part() -> None:
    model, gpu = load_model("qwen3-30b-a3b"), get_gpu("b200")
    cal = calibration()
    assert "moe_launch" in BREAKDOWN_KEYS
    step = training_step(model, gpu, TrainLayout(gpus=8, dp=8, ep=8, zero=1), seq_tokens=4096, micro_batch=1,
                         global_batch_tokens=512 * 4096, cal=cal)
    expected = step.microbatches * expert_launch_s(model, 8, 48,
                                                   cal.stack(gpu).moe_host_s_per_expert_gemm)
    assert step.breakdown_s["moe_launch"] == pytest.approx(expected)
    off = replace(cal, stacks={k: replace(v, moe_host_s_per_expert_gemm=0.0) for k, v in cal.stacks.items()})
    without = training_step(model, gpu, TrainLayout(gpus=8, dp=8, ep=8, zero=1), seq_tokens=4096, micro_batch=1,
                            global_batch_tokens=512 * 4096, cal=off)
    assert without.breakdown_s["moe_launch"] == 0.0
    assert step.step_s == pytest.approx(without.step_s + expected)
    dense = training_step(load_model("llama-3.1-8b"), gpu, TrainLayout(gpus=8, dp=8), seq_tokens=4096,
                          global_batch_tokens=512 * 4096, cal=cal)
    assert dense.breakdown_s["moe_launch"] == 0.0


def test_the_constant_is_fitted_on_every_third_megatron_bridge_moe_row_only() -> None:
    k = calibration().stacks["cuda"]
    lo, hi = fitting.BOUNDS["moe_host_s_per_expert_gemm"]
    assert lo < k.moe_host_s_per_expert_gemm < hi
    assert fitting.FITTED["train-moe"] == ("moe_host_s_per_expert_gemm",)
    fitted = [run.id for run in fitting._group_rows(RUNS, "train-moe", "cuda")]
    bridge_moe = [run.id for run in MOE_TRAIN if run.row.get("set") == "megatron-bridge"]
    assert fitted == bridge_moe[::3]


def test_held_out_moe_training_runs_come_within_25_percent_far_more_often() -> None:
    """Megatron-Bridge's held-out MoE rows, the Megatron-MoE model zoo's Qwen3-235B-A22B runs on 256 H100
    (yanring/Megatron-MoE-ModelZoo, commit c1ad0b5) and DeepSeek-V3's pre-training (arXiv:2412.19437 Table 1): 9 of 23
    within 25% before the launch time, 15 of 18 with it (five of the 23 are now fitted); and Megatron-LM's optimised
    DeepSeek-V3 run on 256 GB200 (docs/discussions/deepseek-v3-gb200-optimization), added after, within 7%. Since stop
    40's training fit (started from three points: a lower loss on the fitted rows) 15 of the 19: Megatron-Bridge's
    DeepSeek-V3 on GB200 went from 22% to 27% fast. With Megatron-Bridge's gpt-oss-120b on 64 H100 added held out
    (MB-H100-OSS120, 0.92x) and the refit after a flash kernel's backward was timed at 2.5 forwards, 17 of the 20: that
    DeepSeek-V3 run is back within 25% (24% fast, 0.80x). Stop 55 (branch mbgrad) restated the model zoo's ZeRO-1 runs as
    reducing their gradients in FP32, as Megatron-LM's --bf16 does without --grad-reduce-in-bf16: MZ-Q235-H100-LC16K
    went from 24.5% to 25.2% slow, 16 of the 20. Stop 57 (branch trainpairs) added the model zoo's all-to-all PP 32
    row (MZ-Q235-H100-A2A-PP32, 4% slow): 17 of the 21."""
    held = [run for run in MOE_TRAIN if run.role == "holdout"]
    within = [run.id for run in held if abs(1.0 / _speed_ratio(run) - 1.0) <= 0.25]
    assert len(held) == 21 and len(within) >= 17, within
    # Qwen3-30B-A3B with 16 experts a GPU: 0.54x and 0.23x of the predicted speed on GB200 and B200 before
    for run_id in ("MB-GB200-Q30", "MB-B200-Q30"):
        assert 0.8 <= _speed_ratio(next(r for r in held if r.id == run_id)) <= 1.25


def test_the_chooser_gives_a_small_expert_model_expert_parallelism() -> None:
    """Qwen3-30B-A3B on 8 B200: without the launch time the chooser kept all 128 experts on every GPU (PP 2, DP 4, no
    EP); Megatron-Bridge's own recipe for it on GB200 and GB300 is TP 1, PP 1, EP 8, micro-batch 4, which it now
    picks, and the plan states the launch time it assumed."""
    p = plan(load_model("qwen3-30b-a3b"), Workload(task="train", seq_tokens=4096), gpu=get_gpu("b200"),
             layout=Layout(gpus=8))
    assert p.fits and p.layout.ep == 8 and p.layout.pp == 1
    perf = plan_performance(p)
    assert perf["step_time_breakdown_s"]["moe_launch"] > 0
    line = next(a for a in perf["assumptions"] if a.startswith("MoE launches:"))
    assert "16 routed experts a GPU" in line and "6 products" in line
