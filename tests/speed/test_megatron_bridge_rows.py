"""Megatron-Bridge's pre-training table (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md, commit 00b7660, NeMo
25.11 container; set ``megatron-bridge`` of ``src/anchorgpu/planner/speed/data/measured_runs.json``): dense and
mixture-of-experts training on H100, B200, GB200 and GB300.

The dense rows check the training model on a newer software stack than the fitted ones, all held out; every third MoE
row in file order fits the one MoE training term (the host time of the experts' launches,
``moe_host_s_per_expert_gemm``), the others are held out, and MoE training gets a band, evidence and a caveat of its own.
"""

from __future__ import annotations

import re

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed import calibrate
from anchorgpu.planner.speed.calibration import calibration, read_calibration_doc
from anchorgpu.planner.speed.estimate import MOE_TRAIN_CAVEAT_LABEL, plan_performance
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from cli_runner import run_json

ROWS = [run for run in load_runs() if run.row.get("set") == "megatron-bridge"]
MOE = [run for run in ROWS if calibrate.band_kind(run) == "moe"]
DENSE = [run for run in ROWS if calibrate.band_kind(run) in (None, "cp")]  # the 405B rows use CP 2


def test_the_set_is_registered_held_out_and_sourced() -> None:
    assert "megatron-bridge" in calibrate.SETS
    assert len(ROWS) == 26 and len(MOE) == 15 and len(DENSE) == 11
    fitted = {run.id for run in MOE[::3]}  # every third MoE row in file order, chosen by position, not by error
    assert len(fitted) == 5
    for run in ROWS:
        assert run.role == ("fit" if run.id in fitted else "holdout"), run.id
        assert run.phase == "train" and run.metric == "tokens_per_s_per_gpu", run.id
        assert run.source.startswith("NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md"), run.id
        assert re.search(r"\(commit [0-9a-f]{40}\)", run.source), run.id
    assert {run.row["gpu"] for run in ROWS} == {"h100-sxm", "b200", "gb200", "gb300"}
    report = {row["id"]: row for row in read_calibration_doc()["fit_report"]}
    assert all(report[run.id]["role"] == run.role for run in ROWS)


def test_each_row_restates_a_whole_layout() -> None:
    """The global batch is whole micro-batches on every data-parallel rank, and the MoE rows carry their EP, which
    divides the experts and the GPUs of a stage (the source's two rows whose batch, micro-batch and accumulation do
    not multiply out are left out)."""
    for run in ROWS:
        r = run.row
        dp = r["gpus"] // (r["tp"] * r["pp"] * r["cp"])
        assert r["global_batch_tokens"] % (dp * r["micro_batch"] * r["seq_tokens"]) == 0, run.id
    for run in MOE:
        model, ep = load_model(run.row["model"]["registry"]), run.row["ep"]
        dp = run.row["gpus"] // (run.row["tp"] * run.row["pp"] * run.row["cp"])
        assert ep > 1 and model.moe is not None and model.moe.num_experts % ep == 0, run.id
        assert (run.row["tp"] * dp) % ep == 0, run.id


def test_dense_training_on_the_newer_stack_is_predicted_within_25_percent() -> None:
    errors = {run.id: predict(run) / run.value - 1 for run in DENSE}
    assert max(abs(e) for e in errors.values()) <= 0.25, errors


def test_the_moe_training_caveat_states_what_the_rows_show() -> None:
    """Over every held-out MoE training row: this table's, the Megatron-MoE model zoo's Qwen3-235B-A22B layouts
    on 256 H100 (set ``megatron-moe-modelzoo``, yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md,
    commit c1ad0b5), whose step times are times (their ratio inverted to a speed), and DeepSeek-V3's pre-training
    (set ``deepseek-v3-report``, arXiv:2412.19437 Table 1) and Megatron-LM's optimised DeepSeek-V3 run on 256 GB200
    (set ``megatron-dsv3-gb200``, docs/discussions/deepseek-v3-gb200-optimization)."""
    caveat = calibration().caveats["moe_train"]
    rows = [run for run in load_runs() if run.phase == "train" and calibrate.band_kind(run) == "moe"
            and run.role == "holdout"]
    assert {run.row.get("set") for run in rows} == {"megatron-bridge", "megatron-moe-modelzoo", "deepseek-v3-report",
                                                    "megatron-dsv3-gb200"}
    ratios = [(run.value / predict(run)) ** (1 if run.higher_is_better else -1) for run in rows]
    within = sum(abs(1.0 / r - 1.0) <= 0.25 for r in ratios)
    assert f"of {len(rows)} held-out MoE training runs, {within} came within 25%" in caveat
    assert f"from {min(ratios):.2f}x to {max(ratios):.2f}x" in caveat
    host_us = calibration().stacks["cuda"].moe_host_s_per_expert_gemm * 1e6
    assert f"at {host_us:.0f} microseconds a product" in caveat


def test_the_caveat_says_how_far_unfused_attention_would_go_for_gpt_oss() -> None:
    """gpt-oss-120b's rows (Megatron-Bridge performance-summary.md, commit 00b7660: 15,876 to 18,347 tokens/s a GPU on
    GB200 and GB300, 8,213 on B200) ran slower than predicted. The caveat says that timing their attention as unfused
    (every score computed, as Transformer Engine falls back to without cuDNN's sink attention) leaves them still too
    fast, by the range it gives; that range must be what the model answers. The same table's H100 row (5,630 tokens/s
    a GPU on 64 H100 in BF16, planned with --recompute moe) comes within 25%, and the caveat says so."""
    from dataclasses import replace

    rows = [run for run in ROWS if run.row["model"]["registry"] == "gpt-oss-120b"]
    assert len(rows) == 4
    blackwell = [run for run in rows if run.row["gpu"] != "h100-sxm"]
    assert len(blackwell) == 3
    caveat = calibration().caveats["moe_train"]
    speeds = [run.value / predict(run) for run in blackwell]
    assert f"still ran slower than predicted ({min(speeds):.2f}-{max(speeds):.2f}x," in caveat
    ratios = [predict(replace(run, row={**run.row, "attention_kernel": "unfused"})) / run.value for run in blackwell]
    assert f"still come out {min(ratios):.2f}-{max(ratios):.2f}x too fast" in caveat
    assert min(ratios) > 1.25  # not the explanation: each row stays beyond the 25% target
    (h100,) = [run for run in rows if run.row["gpu"] == "h100-sxm"]
    speed = h100.value / predict(h100)
    assert abs(1 / speed - 1) <= 0.25 and f"came within 25% at {speed:.2f}x" in caveat


def test_an_ep_group_is_ep_consecutive_gpus_not_ep_times_tp() -> None:
    """The experts are not split by TP under EP (the memory's shard_share holds experts / EP): the model zoo's
    TP 2 x EP 8 layout keeps its all-to-all inside one 8-GPU server (it crossed servers as a 16-GPU group before,
    and came out 1.85x too slow against the measured 17.6 s step; now within 15%)."""
    run = next(r for r in load_runs() if r.id == "MZ-Q235-H100-EP8-FSDP")
    assert abs(predict(run) / run.value - 1) <= 0.15


def test_a_moe_training_plan_carries_its_own_band_evidence_and_caveat() -> None:
    cal = calibration()
    gpu = get_gpu("b200")
    moe_band, dense_band = cal.band(gpu, "train", "moe"), cal.band(gpu, "train")
    # the held-out MoE rows spread wider than the dense ones, and further below the prediction
    assert moe_band.low < dense_band.low and moe_band.high - moe_band.low > dense_band.high - dense_band.low
    w = Workload(task="train", seq_tokens=4096)
    p = plan(load_model("qwen3-30b-a3b"), w, gpu=gpu, layout=Layout(gpus=8, tp=1, pp=1, dp=8, ep=8))
    perf = plan_performance(p)
    assert perf["train_tokens_per_s_low"] == pytest.approx(perf["train_tokens_per_s"] * moe_band.low)
    assert perf["evidence"]["kind"] == "train-moe" and perf["evidence"]["rows"] >= 4
    assert any(a.startswith(MOE_TRAIN_CAVEAT_LABEL + ":") for a in perf["assumptions"])
    dense = plan_performance(plan(load_model("llama-3-8b"), w, gpu=gpu, layout=Layout(gpus=8, tp=1, pp=1, dp=8)))
    assert dense["evidence"]["kind"] == "train"
    assert not any(a.startswith(MOE_TRAIN_CAVEAT_LABEL) for a in dense["assumptions"])


def test_expert_parallel_gradients_are_reduced_over_the_gpus_holding_the_same_experts() -> None:
    """gpt-oss-120b with EP 8: a GPU holds an eighth of the experts, and their gradients go to the GPUs holding the
    same ones, not to every replica - the sync was once timed as if each held them all. On one server (DP 8, EP 8)
    no other GPU holds a GPU's experts, so only the dense part is reduced. On 64 B200 (the MB-B200-OSS120 layout) the
    eight GPUs holding the same experts sit one a server and reduce over their own NICs, while without EP the whole
    model is reduced over all 64 through each server's eight NICs: about as many bytes leave each server either way,
    but EP's expert gradients go in fewer buckets, over rings of 8 rather than 64 (fewer steps' latency)."""
    model, gpu = load_model("gpt-oss-120b"), get_gpu("b200")
    for gpus in (8, 64):
        step = {ep: training_step(model, gpu, TrainLayout(gpus=gpus, dp=gpus, ep=ep, zero=1), seq_tokens=4096,
                                  micro_batch=4, global_batch_tokens=8 * gpus * 4096) for ep in (1, 8)}
        if gpus == 8:
            assert step[8].breakdown_s["dp_sync"] < step[1].breakdown_s["dp_sync"] / 3
        else:
            assert 0.0 < step[8].breakdown_s["dp_sync"] < step[1].breakdown_s["dp_sync"]
        # the distributed optimizer shards the same parameters over the same GPUs either way
        assert step[8].breakdown_s["optimizer"] == pytest.approx(step[1].breakdown_s["optimizer"])


def test_the_layout_chosen_for_a_moe_run_weighs_expert_parallelism() -> None:
    """gpt-oss-120b on 64 H100: the chooser now tries EP sizes too, and takes TP 1 with EP of at least 8, as the
    source's H100 recipe (TP 1, PP 4, EP 8; with the experts' launch time each expert a GPU sheds is worth more, and it
    takes EP 16); an explicit --ep is kept."""
    model, gpu = load_model("gpt-oss-120b"), get_gpu("h100")
    chosen = plan(model, Workload(task="train", seq_tokens=4096), gpu=gpu, layout=Layout(gpus=64))
    assert chosen.layout.tp == 1 and chosen.layout.ep >= 8 and chosen.fits
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen"))
    assert f"EP {chosen.layout.ep}" in reason
    kept = plan(model, Workload(task="train", seq_tokens=4096), gpu=gpu, layout=Layout(gpus=64, ep=4))
    assert kept.layout.ep == 4


def test_expert_parallelism_gives_each_expert_more_rows_and_the_chooser_takes_it() -> None:
    """Under EP the tokens of an EP group meet at its experts: DeepSeek-V3 (256 experts, 8 a token) with 4,096-token
    micro-batches gives each expert 128 rows a micro-batch without EP and 1,024 with EP 8, so its grouped products run
    nearer full efficiency (the falloff fitted on MoE serving rows, calibration moe_expert_half_tokens). A dense model
    has no such term. Before, EP bought no compute and the chooser put Qwen3-235B on 256 H100 in 32 pipeline stages
    without EP; Megatron's own Qwen3-235B recipes on 256 H100 use EP 8-32 (yanring/Megatron-MoE-ModelZoo)."""
    gpu = get_gpu("h100")
    ds = load_model("deepseek-v3")
    compute = {ep: training_step(ds, gpu, TrainLayout(gpus=256, pp=16, dp=16, ep=ep, zero=1), seq_tokens=4096,
                                 global_batch_tokens=4096 * 4096).breakdown_s["compute"] for ep in (1, 8)}
    assert calibration().stack(gpu).moe_expert_half_tokens > 0
    assert compute[8] < compute[1] * 0.85
    model = load_model("qwen3-235b-a22b")
    chosen = plan(model, Workload(task="train", seq_tokens=4096), gpu=gpu, layout=Layout(gpus=256))
    assert chosen.fits and chosen.layout.ep > 1


def test_recommend_prices_moe_training_with_the_moe_band_evidence_and_caveat(capsys: pytest.CaptureFixture[str]
                                                                              ) -> None:
    doc = run_json(capsys, "recommend", "gpt-oss-120b", "--task", "train", "--tokens", "1e11", "--top", "1")
    best = doc["results"][0]
    band = calibration().band(get_gpu(best["gpu"]), "train", "moe")
    assert best["train_tokens_per_s_low"] == pytest.approx(best["train_tokens_per_s"] * band.low, rel=1e-3)
    assert best["evidence"]["kind"] == "train-moe"
    assert any(a.startswith(MOE_TRAIN_CAVEAT_LABEL + ":") for a in doc["assumptions"])


def test_expert_parallelism_across_servers_is_a_two_hop_dispatch() -> None:
    """EP 32 over four H100 servers (the model zoo's MZ-Q235-H100-EP32, DeepEP, 19.7 s a step): a token crosses the
    network once to each other server holding one of its experts, then NVLink (DeepSeek-V3 report, section 3.2.2).
    Timed as a plain all-to-all over the network it came out 1.67x too slow; two-hop, within 15% (+3.7%), and within
    20% (+16%) since the experts' launch time (``expert_launch_s``, fitted on Megatron-Bridge rows) joined the step."""
    from anchorgpu.planner.speed.links import all_to_all_s, expert_dispatch_s, group_link

    run = next(r for r in load_runs() if r.id == "MZ-Q235-H100-EP32")
    assert abs(predict(run) / run.value - 1) <= 0.20
    gpu = get_gpu("h100")
    token, tokens = 4096 * 2.0, 2048
    two_hop = expert_dispatch_s(token, tokens, 8, 32, gpu, gpus_per_server=8, network_bytes_per_s=50e9)
    plain = all_to_all_s(token * tokens * 8, 32, group_link(gpu, 32, gpus_per_server=8, network_bytes_per_s=50e9))
    assert two_hop < 0.6 * plain
    inside = expert_dispatch_s(token, tokens, 8, 8, gpu, gpus_per_server=8, network_bytes_per_s=50e9)
    assert inside == all_to_all_s(token * tokens * 8, 8, group_link(gpu, 8, gpus_per_server=8))


def test_a_plan_with_expert_parallelism_says_how_it_is_timed() -> None:
    model, gpu = load_model("qwen3-235b-a22b"), get_gpu("h100")
    w = Workload(task="train", seq_tokens=4096)
    across = plan_performance(plan(model, w, gpu=gpu, layout=Layout(gpus=256, tp=2, pp=2, ep=32)))
    line = next(a for a in across["assumptions"] if a.startswith("expert parallelism EP 32"))
    assert "not split by TP" in line and "two hops across their 4 servers" in line and "over the 4 GPUs" in line
    inside = plan_performance(plan(model, w, gpu=gpu, layout=Layout(gpus=256, tp=2, pp=2, ep=8)))
    line = next(a for a in inside["assumptions"] if a.startswith("expert parallelism EP 8"))
    assert "two hops" not in line
