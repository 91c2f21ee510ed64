"""The serving engine's CPU work per running sequence, overlapped with the GPU's step (speed.serving's host term).

Sources of the figures (the stated constant's, ``calibration.json`` ``stated.host_s_per_sequence_step``): TensorRT-LLM
PR #10273 (GB200, gpt-oss-120b, 1,536 sequences a rank: 45.11 ms of host time an iteration) and
NVIDIA/TransformerEngine issue #2053 (the same Linear launched in 37.08 us of CPU on a GB200's Grace, 13.48 us on a
DGX H100's Xeon). The measured cells are TensorRT-LLM's perf-overview (commit 00f3768), rows PQ30-* and P70-* of
``measured_runs.json``.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from importlib import resources

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.batching import serving_estimate
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import serving_setup
from anchorgpu.planner.speed.links import host_kind
from anchorgpu.planner.speed.runs import load_runs, predict
from anchorgpu.planner.speed.serving import ServingSetup, decode_step
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from cli_runner import run_json
from sweep_rows import plan_of_row


def _stated() -> dict:
    text = resources.files("anchorgpu.planner.speed").joinpath("data", "calibration.json").read_text("utf-8")
    return json.loads(text)["stated"]["host_s_per_sequence_step"]


def test_the_stated_host_costs_are_the_sources_figures() -> None:
    """29.4 us a sequence on Grace (45.11 ms / 1,536), 2.75x less on x86 (37.08 / 13.48 us), and the source says so."""
    doc = _stated()
    cal = calibration()
    assert cal.host_s_per_sequence_step["superchip"] == pytest.approx(45.11e-3 / 1536, rel=0.005)
    assert cal.host_s_per_sequence_step["x86"] == pytest.approx(45.11e-3 / 1536 / (37.08 / 13.48), rel=0.005)
    assert "#10273" in doc["source"] and "#2053" in doc["source"] and "not fitted" in doc["source"]
    assert host_kind(get_gpu("gb200")) == "superchip" and host_kind(get_gpu("b200")) == "x86"


def test_a_large_batch_of_a_short_step_waits_for_the_cpu() -> None:
    """Thousands of sequences of a small mixture of experts: the step is the CPU's, bound 'host'; one sequence is
    the GPU's; the roofline ceiling has no host term."""
    model, gpu = load_model("qwen3-30b-a3b"), get_gpu("gb200")
    setup = ServingSetup(weights_bytes_per_gpu=16e9, kv_bytes_per_sequence_per_gpu=50e6, precision="fp4")
    per_seq = calibration().host_s_per_sequence_step["superchip"]
    many = decode_step(model, gpu, setup, batch=4096, cached_tokens=200)
    assert many.bound == "host"
    assert many.step_s == pytest.approx(4096 * per_seq, rel=1e-12)
    assert many.step_s > many.fixed_s + many.weights_s + many.attention_s + many.communication_s
    one = decode_step(model, gpu, setup, batch=1, cached_tokens=200)
    assert one.bound != "host" and one.step_s > per_seq
    ceiling = decode_step(model, gpu, setup, batch=4096, cached_tokens=200, ideal=True)
    assert ceiling.bound != "host" and ceiling.step_s < many.step_s


def test_the_same_gpu_with_a_grace_cpu_serves_a_small_moe_slower_as_measured() -> None:
    """Qwen3-30B-A3B (NVFP4) at 128 in / 2,048 out: a GB200 measured 0.83x a B200's output tokens/s (31,311 against
    37,844), where Llama-3.3-70B, whose steps are long, ran 1.14x faster on the GB200 (11,309 against 9,922). The
    model has the GB200 slower for the MoE than for the dense model, and the GB200 MoE cell within 25% (it was 2.06x
    the measured speed without the host term). Both GB200 figures also carry AIConfigurator's measured FP4 product
    rate of a GB200, 0.925x a B200's (calibration.json ``fp4_gemm_peak_share``), so the dense ratio is 0.92x too."""
    runs = {r.id: r for r in load_runs()}
    moe_gb, moe_b = predict(runs["PQ30-GB200-128/2048"]), predict(runs["PQ30-B200-128/2048"])
    dense_gb, dense_b = predict(runs["P70-GB200-128/2048"]), predict(runs["P70-B200-128/2048"])
    assert runs["PQ30-GB200-128/2048"].value == 31311 and runs["PQ30-B200-128/2048"].value == 37844
    assert moe_gb < 0.85 * moe_b  # measured 0.83x; predicted 0.75x (0.57x before stop 51's TensorRT-LLM MoE row cost)
    assert moe_gb / moe_b < dense_gb / dense_b - 0.05  # the host term slows the MoE's short steps only
    assert dense_gb == pytest.approx(11309, rel=0.25)
    # -30.9% at the steady state under stop 62's serial prompt step (engine_terms.prompt_step_host_serial), which puts
    # a prompt in 87.5% of this cell's steps; timed over trtllm-bench's makespan (speed.bench_makespan), whose
    # fixed-length requests are admitted in groups, a prompt rides in 7% of them: -2.9%
    # (benchmarks/hardening/stop62_bwserve.md, stop62_makespan62.md)
    assert moe_gb == pytest.approx(31311, rel=0.25)


def test_the_sweep_takes_the_host_term_as_the_planner_does() -> None:
    """The vectorised sweep's steps on a Grace superchip at thousands of sequences equal the scalar estimate's."""
    model = load_model("qwen3-30b-a3b")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.gpu.name == "gb200")
    assert shapes
    result = sweep(model, shapes, SweepSpec(workload=Workload(task="inference", context_tokens=1024,
                                                             concurrency=2048), weights=("nvfp4",)))
    checked = 0
    for i in range(result.evaluated):
        row = result.row(i)
        if not row["fits"]:
            continue
        p, shape = plan_of_row(model, Workload(task="inference", context_tokens=1024), result, row)
        prompt, output = result.prompt_tokens, result.output_tokens
        setup = replace(serving_setup(p, prompt_tokens=prompt, output_tokens=output),
                        gpus_per_server=shape.gpus_per_server)
        est = serving_estimate(model, shape.gpu, setup, prompt_tokens=prompt, output_tokens=output,
                               concurrency=row["concurrency"], saturation_concurrency=row["concurrency"])
        per_replica = math.ceil(row["concurrency"] / row["dp"])
        if est.tpot_s > per_replica * calibration().host_s_per_sequence_step["superchip"] * (1 + 1e-9):
            continue  # the GPU's step is the longer here
        assert row["decode_tokens_per_s_per_user"] == pytest.approx(1 / est.tpot_s, rel=1e-6)
        assert row["prefill_s"] == pytest.approx(est.ttft_s, rel=1e-6)
        checked += 1
    assert checked >= 4  # TP, PP and one replica over all four GPUs: every one waits for the CPU


def test_a_plan_says_when_the_cpu_bounds_its_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan` of Qwen3-30B-A3B (NVFP4) on one GB200 at 1,400 sequences: the JSON says the steps wait for the CPU
    (`decode_bound` 'host'), each running sequence then gets one token per (sequences running) x 29.4 us (the engine
    runs at most its 1,024-sequence cap and queues the rest), and the assumptions name the stated figure and its
    host; on an H100's x86 host the line gives 10.7 us."""
    d = run_json(capsys, "plan", "qwen3-30b-a3b", "--gpu", "gb200", "--gpus", "1", "--weights", "nvfp4",
                 "--kv-cache", "fp8", "--prompt", "128", "--output-tokens", "2048", "--concurrency", "1400")
    perf = d["performance"]
    assert d["fits"] and perf["decode_bound"] == "host"
    running = min(1400, perf["saturation_concurrency"])
    assert running == 1024
    assert perf["tpot_s"] == pytest.approx(running * 29.4e-6, rel=1e-6)
    assert perf["output_tokens_per_s"] < perf["output_tokens_per_s_ceiling"]
    assert any("29.4 us per running sequence a step (a Grace superchip, stated)" in a for a in perf["assumptions"])
    h100 = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--prompt", "1000", "--output-tokens", "200",
                    "--concurrency", "64")["performance"]
    assert h100["decode_bound"] != "host"
    assert any("10.7 us per running sequence a step (an x86 host, stated)" in a for a in h100["assumptions"])


def test_an_engine_scheduling_between_steps_adds_its_host_work_to_each_step() -> None:
    """vLLM 0.11 schedules between GPU steps unless --async-scheduling is given (opt-in since vllm-project/vllm PR
    #19970): its host work adds to the step instead of hiding under it, also over pipeline stages. GPUStack's vLLM
    0.11.0 rows (VG-*, VGA-*, VGM-*) are planned that way, and no other row is."""
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    p = plan(model, Workload(prompt_tokens=1000, output_tokens=200, concurrency=256), gpu=gpu, layout=Layout(gpus=1))
    host = calibration().host_s_per_sequence_step[host_kind(gpu)]
    for stages in (1, 2):
        setup = replace(serving_setup(p, prompt_tokens=1000, output_tokens=200), pp=stages)
        beside = decode_step(model, gpu, setup, batch=256, cached_tokens=1100)
        between = decode_step(model, gpu, replace(setup, host_overlap=False), batch=256, cached_tokens=1100)
        assert beside.bound != "host"  # the host work hides under this step
        assert between.step_s == pytest.approx(beside.step_s + 256 * host, rel=1e-12)
    marked = {run.id for run in load_runs() if run.row.get("host_overlap") is False}
    assert marked == {run.id for run in load_runs() if run.id.startswith(("VG-", "VGA-", "VGM-"))}
    assert all("vLLM v0.11.0" in run.note for run in load_runs() if run.id in marked)
