"""QLoRA's pipeline stages on the PyTorch stack run one after another (benchmarks/hardening/stop57_qloranaive.md).

On the PyTorch stack the one public split of a bitsandbytes 4-bit base by layers is accelerate's ``device_map`` (naive
model parallelism: "all but one GPU are idle at any given moment", huggingface/transformers
docs/source/en/perf_train_gpu_many.md); NeMo's QLoRA over Megatron-Core keeps 1F1B. Sources in
anchorgpu.planner.speed.pipeline.pipeline_schedule. Before this, a QLoRA plan with PP 4 on 8 H100 was timed as 1F1B
(bubble 3 stage times, 15.8% of the step, 12,209 tok/s) and chosen over data parallelism.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner.speed.pipeline import pipeline_schedule
from anchorgpu.planner.speed.training import TrainLayout, training_step
from anchorgpu.recommend.shapes import network_gbit_per_s_per_gpu
from cli_runner import run_json

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
    stated = run_json(capsys, "plan", *_70B_QLORA, "--pp", "4")["performance"]
    assert stated["pipeline_bubble_fraction"] > 0.74  # (p-1)/p less the transfers' share; 1F1B gave 0.158
    line = next(a for a in stated["assumptions"] if a.startswith("pipeline bubble"))
    assert line.startswith("pipeline bubble m(p-1) = 16 x 3 = 48 micro-batch times per step: the layers run one "
                           "after another (device_map)"), line
    assert not any("would run at" in a for a in stated["assumptions"])  # a larger batch would not shrink this bubble
    chosen = run_json(capsys, "plan", *_70B_QLORA)
    assert chosen["layout"]["pp"] == 1 and chosen["layout"]["dp"] == 8, chosen["layout"]
    assert chosen["performance"]["train_tokens_per_s"] > stated["train_tokens_per_s"]
    # NeMo's QLoRA over Megatron-Core keeps 1F1B and the chooser's PP 4 (a control)
    nemo = run_json(capsys, "plan", *_70B_QLORA, "--train-stack", "megatron")
    assert nemo["layout"]["pp"] == 4
    line = next(a for a in nemo["performance"]["assumptions"] if a.startswith("pipeline bubble"))
    assert line.startswith("pipeline bubble (p-1)/v = 3/1 micro-batch times per step"), line


def test_recommends_pipelined_qlora_rows_are_plans_figures(capsys: pytest.CaptureFixture[str]) -> None:
    """recommend's L40S server rows of 16, 24 and 32 GPUs split the 70B base over two stages: each row is plan's
    speed for its layout at the offering's network, the stages timed one after another (they ran 5,440 / 7,659 /
    9,094 tok/s as 1F1B)."""
    answer = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "qlora", "--tokens", "100M", "--gpu", "l40s",
                      "--top", "20")
    rows = [r for r in answer["results"] if r["offering"] == "l40s-8x-bm" and r["layout"]["pp"] > 1]
    assert len(rows) >= 2
    gbit = network_gbit_per_s_per_gpu(load_catalog().offering("l40s-8x-bm"))
    for row in rows:
        lay = row["layout"]
        planned = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--tokens", "100M", "--gpu", "l40s",
                           "--gpus", str(row["gpus"]), "--tp", "1", "--pp", str(lay["pp"]), "--dp", str(lay["dp"]),
                           "--zero", str(lay["zero"]), "--recompute", row["recompute"], "--micro-batch",
                           str(row["concurrency"]), "--network-gbit-per-gpu", f"{gbit:g}")
        perf = planned["performance"]
        assert row["train_tokens_per_s"] == pytest.approx(perf["train_tokens_per_s"], abs=0.05), row  # JSON: 0.1
        assert perf["pipeline_bubble_fraction"] > 0.45  # (p-1)/p = 0.5 at PP 2, less the other parts' share
