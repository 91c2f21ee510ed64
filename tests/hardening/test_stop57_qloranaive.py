"""QLoRA's pipeline stages on the PyTorch stack run one after another (benchmarks/hardening/stop57_qloranaive.md).

On the PyTorch stack the one public split of a bitsandbytes 4-bit base by layers is accelerate's ``device_map`` (naive
model parallelism: "all but one GPU are idle at any given moment", huggingface/transformers
docs/source/en/perf_train_gpu_many.md); NeMo's QLoRA over Megatron-Core keeps 1F1B. Sources in
anchorgpu.planner.speed.pipeline.pipeline_schedule. Before this, a QLoRA plan with PP 4 on 8 H100 was timed as 1F1B
(bubble 3 stage times, 15.8% of the step, 12,209 tok/s) and chosen over data parallelism.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.inputs import RECOMPUTES
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.pipeline import pipeline_schedule
from anchorgpu.planner.speed.train_layout import TrainLayout
from anchorgpu.planner.speed.training import training_step
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from cli_runner import run, run_json

_70B_QLORA = ("llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "8")


def test_sequential_stages_idle_m_times_p_minus_1_stage_times() -> None:
    """The same layout under both schedules: the compute is the same, the bubble is m(p-1) stage times (not p-1),
    and every hop's transfer is on the path (2(p-1) a micro-batch, not 2)."""
    model, gpu = load_model("llama-3.1-70b"), get_gpu("h100")
    lay = TrainLayout(gpus=8, pp=4, dp=2, zero=1)
    kw = {"seq_tokens": 2048, "global_batch_tokens": 32 * 2048, "kind": "lora", "recompute": "full",
          "train_stack": "pytorch"}
    f1b = training_step(model, gpu, lay, **kw)  # type: ignore[arg-type]
    seq = training_step(model, gpu, lay, schedule="sequential", **kw)  # type: ignore[arg-type]
    m, p = 16, 4
    assert seq.microbatches == f1b.microbatches == m
    assert seq.breakdown_s["compute"] == f1b.breakdown_s["compute"]
    assert seq.breakdown_s["pp_bubble"] == pytest.approx(f1b.breakdown_s["pp_bubble"] * m, rel=1e-12)
    assert seq.breakdown_s["pp_p2p"] == pytest.approx(f1b.breakdown_s["pp_p2p"] * (p - 1), rel=1e-12)
    assert seq.bubble_fraction == pytest.approx((p - 1) / p, abs=0.01)
    assert seq.tokens_per_s < f1b.tokens_per_s / 3  # a quarter of the GPUs work at a time


def test_schedule_is_device_map_only_for_qlora_on_the_pytorch_stack() -> None:
    assert pipeline_schedule("qlora", "pytorch") == "sequential"
    assert {pipeline_schedule(t, s) for t in ("train", "lora", "qlora") for s in ("megatron", "pytorch")
            if (t, s) != ("qlora", "pytorch")} == {"1f1b"}


def test_plan_times_qlora_stages_one_after_another_and_chooses_data_parallelism(
        capsys: pytest.CaptureFixture[str]) -> None:
    stated = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "4", "--pp", "4",
                      "--global-batch", "65536", "--micro-batch", "1")["performance"]
    assert stated["microbatches"] == 32
    assert stated["pipeline_bubble_fraction"] > 0.74  # (p-1)/p less the transfers' share; 1F1B's 3 of 35 is 0.086
    line = next(a for a in stated["assumptions"] if a.startswith("pipeline bubble"))
    assert line.startswith("pipeline bubble m(p-1) = 32 x 3 = 96 micro-batch times per step: the layers run one "
                           "after another (device_map)"), line
    assert not any("would run at" in a for a in stated["assumptions"])  # a larger batch would not shrink this bubble
    # each GPU holds one micro-batch's activations (1F1B's first stage holds p = 4): 41.56 GiB at micro-batch 2, where
    # 1F1B's count (main), four micro-batches of 20 layers, needed 119.96 GiB of the 79.18 GiB of an H100
    memory = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "4", "--pp", "4",
                      "--micro-batch", "2", "--recompute", "none")
    assert memory["fits"] and any(a.startswith("Pipeline stages by device_map") for a in memory["assumptions"])
    assert memory["per_gpu"]["activations_bytes"] < 42 * 2**30, memory["per_gpu"]  # main: 102.47 GiB, no fit
    chosen = run_json(capsys, "plan", *_70B_QLORA)
    assert chosen["layout"]["pp"] == 1 and chosen["layout"]["dp"] == 8, chosen["layout"]  # was PP 4 x DP 2 (1F1B)
    readme = (Path(__file__).parents[2] / "README.md").read_text()  # its --task qlora bullet quotes this plan
    assert f"(70B on 8 H100:\n  DP 8, ~{chosen['performance']['train_tokens_per_s'] / 1000:.1f}k tok/s)" in readme
    # NeMo's QLoRA over Megatron-Core keeps 1F1B and the chooser's PP 4 x DP 2 (a control)
    nemo = run_json(capsys, "plan", *_70B_QLORA, "--train-stack", "megatron")
    assert (nemo["layout"]["pp"], nemo["layout"]["dp"]) == (4, 2)
    line = next(a for a in nemo["performance"]["assumptions"] if a.startswith("pipeline bubble"))
    assert line.startswith("pipeline bubble (p-1)/v = 3/1 micro-batch times per step"), line


def test_qlora_stages_with_data_parallelism_are_refused_on_the_pytorch_stack(capsys: pytest.CaptureFixture[str],
                                                                            client: TestClient) -> None:
    """accelerate refuses to train a 4-bit model split over several GPUs "in any distributed mode" (its answer is
    naive pipeline parallelism, one process): huggingface/accelerate src/accelerate/accelerator.py, prepare_model."""
    code, _, err = run(capsys, "plan", *_70B_QLORA, "--pp", "4")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: --pp 4 with DP 2 for --task qlora on the PyTorch stack: accelerate refuses to train "
                          "a 4-bit model split over several GPUs in any distributed mode"), err
    code, _, err = run(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "16", "--pp", "16")
    assert code == 2 and "device_map places the layers on one process's GPUs, and a server holds 8" in err, err
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "qlora", "gpu": "h100", "gpus": 8, "pp": 4})
    assert r.status_code == 422 and "accelerate refuses to train a 4-bit model" in r.json()["detail"], r.json()
    assert run_json(capsys, "plan", *_70B_QLORA, "--pp", "4", "--train-stack", "megatron")["layout"]["dp"] == 2


def test_recommends_qlora_rows_stage_only_one_process_on_one_server(capsys: pytest.CaptureFixture[str]) -> None:
    """Every QLoRA row of the sweep (PyTorch stack) with stages is DP 1 on one server, and its speed is plan's; on
    main the L40S rows of 16, 24 and 32 GPUs were PP 2 x DP 8 / 12 / 16 at 5,440 / 7,659 / 9,094 tok/s (1F1B)."""
    model = load_model("llama-3.1-70b")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=3)
                   if s.gpu.name in ("l40s", "h100-sxm", "rtx-4090"))
    w = Workload(task="qlora", train_stack="pytorch")
    result = sweep(model, shapes, SweepSpec(workload=w, train_tokens=10**8))
    rows = [result.row(i) for i in range(result.evaluated)]
    staged = [r for r in rows if r["pp"] > 1]
    assert staged and rows  # PP = the GPUs of one server, DP 1
    per_server = {s.id: s.gpus_per_server for s in result.shapes}
    assert all(r["dp"] == 1 and r["pp"] == r["gpus"] <= per_server[r["shape"]] for r in staged)
    for row in [r for r in staged if r["fits"]][:3]:
        shape = next(s for s in result.shapes if s.id == row["shape"])
        p = plan(model, replace(w, micro_batch=row["concurrency"], recompute=RECOMPUTES[row["recompute"]]),
                 precision=PrecisionPlan(weights=row["weights"]), gpu=shape.gpu, suggest=False, choose_layout=False,
                 layout=Layout(gpus=row["gpus"], tp=1, pp=row["pp"], dp=1, zero=row["zero"]))
        perf = plan_performance(p)
        assert row["train_tokens_per_s"] == pytest.approx(perf["train_tokens_per_s"], rel=1e-9), row
        assert perf["pipeline_bubble_fraction"] > 0.45  # (p-1)/p, at least 0.5 at PP 2, less the other parts' share
