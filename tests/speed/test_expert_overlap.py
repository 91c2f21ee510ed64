"""``--ep-overlap``: a mixture of experts' dispatch and combine all-to-alls run beside another micro-batch's
computation (Megatron-Core's combined 1F1B schedule, ``--overlap-moe-expert-parallel-comm --delay-wgrad-compute``;
DeepSeek-V3's DualPipe, arXiv:2412.19437 section 3.2.1). Timed with the stated exposed share of overlapped traffic
that TP overlap already used (calibration.json ``stated.overlap_exposed_fraction``), checked against two held-out
runs: the Megatron-MoE model zoo's '+1f1b overlap' row (MZ-Q235-H100-EP32-OVL, 17.6 s a step against 19.7 s without,
yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md, commit c1ad0b5) and DeepSeek-V3's whole pre-training
(DSV3-H800-PRETRAIN: 14.8T tokens in 2.664M H800 GPU hours, the report's Table 1)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run, run_json

RUNS = {run.id: run for run in load_runs()}


def test_overlap_leaves_the_stated_share_of_the_all_to_alls_exposed() -> None:
    model, gpu = load_model("qwen3-235b-a22b"), get_gpu("h100")
    steps = {o: training_step(model, gpu, TrainLayout(gpus=256, tp=2, pp=8, dp=16, ep=32, zero=1, virtual_stages=4,
                                                      ep_overlap=o),
                              seq_tokens=4096, global_batch_tokens=2048 * 4096, recompute="selective")
             for o in (False, True)}
    share = calibration().overlap_exposed_fraction
    assert steps[True].breakdown_s["ep_alltoall"] == pytest.approx(steps[False].breakdown_s["ep_alltoall"] * share)
    assert steps[True].breakdown_s["compute"] == steps[False].breakdown_s["compute"]


@pytest.mark.parametrize("run_id", ["MZ-Q235-H100-EP32-OVL", "DSV3-H800-PRETRAIN"])
def test_the_overlapped_runs_are_held_out_and_come_within_25_percent(run_id: str) -> None:
    run_ = RUNS[run_id]
    assert run_.role == "holdout" and run_.row["ep_overlap"] is True
    assert abs(predict(run_) / run_.value - 1) <= 0.25
    # the overlap makes the step shorter than the same layout without it (the zoo measured 17.6 s against 19.7 s)
    without = predict(replace(run_, row=dict(run_.row, ep_overlap=False)))  # a copy: the shared row is unchanged
    assert (without > predict(run_)) if not run_.higher_is_better else (without < predict(run_))


def test_deepseek_v3s_published_layout_fits_and_prices_its_pretraining(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V3 on 2,048 H800 as the report ran it (PP 16, EP 64 over 8 servers, ZeRO-1 DP, FP8, 15,360 x 4,096
    tokens a step, its DualPipe as --ep-overlap): it fits, and the GPU hours for 14.8T tokens come within 40% of the
    2.664M the report gives, above them: the recompute the planner chooses, full (the only one that fits 80 GB in the
    planner's memory model; the report recomputes norms and MLA up-projections and keeps FP8 activations), runs every
    layer's forward again, its dispatch and combine all-to-alls included (six a MoE layer, not four), where the
    report's partial recompute runs none of them again. The same run timed as the report ran it, held-out row
    DSV3-H800-PRETRAIN, comes within 2%."""
    doc = run_json(capsys, "plan", "deepseek-v3", "--task", "train", "--gpu", "h800", "--gpus", "2048", "--tp", "1",
                   "--pp", "16", "--dp", "128", "--ep", "64", "--zero", "1", "--train-precision", "fp8",
                   "--seq", "4096", "--global-batch", str(15360 * 4096), "--tokens", "14.8T", "--ep-overlap")
    assert doc["fits"] and doc["layout"]["ep_overlap"] is True
    perf = doc["performance"]
    assert 1.0 <= perf["gpu_hours"] / 2.664e6 <= 1.4
    # planned with full recompute (the report's partial recompute and FP8 activations fit where the planner's
    # selective recompute does not) the run predicts slower than the report: the caveat says the band is wide and why
    assert any(a.startswith("Mixture-of-experts training:") for a in perf["assumptions"])
    line = next(a for a in perf["assumptions"] if a.startswith("expert parallelism EP 64"))
    assert "overlapped with another micro-batch's computation, 30%" in line


def test_ep_overlap_is_refused_where_there_is_no_all_to_all_to_overlap(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--ep-overlap")
    assert code == 2 and "--ep-overlap" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "plan", "qwen3-30b-a3b", "--gpu", "h100", "--ep-overlap")
    assert code == 2 and "--ep-overlap" in err


def test_a_layout_chosen_with_ep_overlap_keeps_it() -> None:
    model = load_model("gpt-oss-120b")
    chosen = plan(model, Workload(task="train", seq_tokens=4096), gpu=get_gpu("h100"),
                  layout=Layout(gpus=64, ep_overlap=True))
    assert chosen.fits and chosen.layout.ep_overlap and chosen.layout.ep > 1
