"""Planning for TensorRT-LLM (``--engine trtllm``) instead of vLLM: its KV sizing, limits and admission.

``trtllm-serve`` (TensorRT-LLM 1.x, PyTorch backend) gives its KV cache ``free_gpu_memory_fraction`` (0.9) of the
memory free after a profiling pass of context requests filling ``max_num_tokens`` (``_torch/pyexecutor/_util.py``
``cal_max_tokens``), runs at most ``max_batch_size`` 2,048 sequences and 8,192 tokens a step by default
(``tensorrt_llm/commands/serve.py`` ``get_llm_args``) and admits a request only when its prompt plus output fit
(GUARANTEED_NO_EVICT). The held-out rows ``TGA-*`` of ``measured_runs.json`` (GPUStack's trtllm-serve runs on one
A100 80 GB, gpustack/gpustack docs/performance-lab/qwen3-32b/a100.md, commit 10e9444) are planned through the same
path a user's ``--engine trtllm`` takes.
"""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import load_runs, predict
from cli_runner import run, run_json

RUNS = {run.id: run for run in load_runs()}


def _plans(model: str, gpu: str, **workload: object) -> tuple[object, object]:
    m, g = load_model(model), get_gpu(gpu)
    return tuple(plan(m, Workload(engine=engine, **workload), gpu=g, layout=Layout(gpus=1))  # type: ignore[arg-type]
                 for engine in ("vllm", "trtllm"))


def test_the_kv_cache_is_a_share_of_the_memory_the_profiling_pass_leaves_free() -> None:
    _, trt = _plans("qwen3-32b", "a100-80gb-sxm", prompt_tokens=2000, output_tokens=100)
    b = trt.breakdown
    peak = (trt.per_gpu.weights_bytes + b["prefill_activation_bytes"] + b["non_torch_bytes"]
            + b["rope_table_bytes"] + b["cuda_context_outside_budget_bytes"])  # the float32 RoPE table: 40,960 x 128
    assert b["sampler_logits_bytes"] == 0  # its profiling pass runs context requests only
    assert b["kv_cache_capacity_bytes"] == int(0.9 * (trt.gpu.memory_bytes - peak))
    assert trt.budget_bytes == peak - b["cuda_context_outside_budget_bytes"] + b["kv_cache_capacity_bytes"]
    assert trt.max_concurrency == b["kv_cache_capacity_bytes"] // b["kv_per_sequence_bytes"]


def test_a_request_vllm_cannot_hold_fits_tensorrt_llm() -> None:
    """Qwen3-32B's BF16 weights (61 GiB) on one 80 GB A100: 32,000-token prompts. TensorRT-LLM ran 100 of them
    (TGA-Q32-32K, 3.88 output tok/s); vLLM's budget with its defaults holds one, with trtllm-serve's 2,048-sequence
    sampler warm-up none."""
    vllm, trt = _plans("qwen3-32b", "a100-80gb-sxm", prompt_tokens=32000, output_tokens=79, concurrency=1)
    assert vllm.fits and trt.fits
    assert trt.breakdown["kv_cache_capacity_bytes"] > vllm.breakdown["kv_cache_capacity_bytes"]
    as_vllm_with_its_limits = plan(trt.model, Workload(prompt_tokens=32000, output_tokens=79, max_num_seqs=2048,
                                                       max_num_batched_tokens=8192), gpu=trt.gpu, layout=Layout(gpus=1))
    assert as_vllm_with_its_limits.fits is False


def test_trtllm_serves_its_own_defaults_and_admits_whole_requests() -> None:
    _, trt = _plans("llama-3.1-8b", "h100-sxm", prompt_tokens=1000, output_tokens=200, concurrency=64)
    line = next(a for a in trt.assumptions if a.startswith("Serving engine sized like"))
    assert "TensorRT-LLM" in line and "max_num_tokens 8192, max_batch_size 2048" in line
    perf = plan_performance(trt)
    assert perf["kv_reservation"] == "full"
    capacity, per_sequence = trt.breakdown["kv_cache_capacity_bytes"], trt.breakdown["kv_per_sequence_bytes"]
    assert perf["saturation_concurrency"] == min(2048, capacity // per_sequence)  # prompt + output held each
    assert plan_performance(trt, kv_reservation="average")["saturation_concurrency"] > perf["saturation_concurrency"]
    caveat = next(a for a in perf["assumptions"] if a.startswith("Serving engine:"))
    assert "trtllm-serve" in caveat


@pytest.mark.parametrize("row", ["TGA-Q32-2K", "TGA-Q32-4K", "TGA-Q32-128"])
def test_a_user_planning_for_tensorrt_llm_plans_what_the_held_out_rows_are_planned_with(
        capsys: pytest.CaptureFixture[str], row: str) -> None:
    """The CLI's ``--engine trtllm`` plan of the benchmark is the plan the calibration times the held-out row with
    (its KV cache, admission and speeds), and the row's prediction (the burst of equal requests it was, as waves of
    that plan's saturation) is within 25% of what GPUStack measured (``measured_runs.json``, TGA-*)."""
    from anchorgpu.planner.speed.runs import _serve_plan

    r = RUNS[row].row
    out = run_json(capsys, "plan", "qwen3-32b", "--gpu", "a100-80gb-sxm", "--gpus", "1", "--engine", "trtllm",
                   "--prompt", str(r["prompt_tokens"]), "--output-tokens", str(r["output_tokens"]))
    harness = _serve_plan(row)
    assert out["breakdown"]["kv_cache_capacity_bytes"] == harness.breakdown["kv_cache_capacity_bytes"]
    expected = plan_performance(harness)
    assert out["performance"]["kv_reservation"] == expected["kv_reservation"] == "full"
    for key in ("saturation_concurrency", "max_output_tokens_per_s"):
        assert out["performance"][key] == pytest.approx(expected[key], rel=1e-9), key
    assert abs(predict(RUNS[row]) / r["value"] - 1) <= 0.25


def test_the_cli_refuses_an_unknown_engine_or_one_for_training(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--engine", "lmdeploy")
    assert code == 2 and not out and err.strip() == "error: --engine 'lmdeploy': choose vllm, trtllm or sglang"
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--engine", "trtllm")
    assert code == 2 and "--engine trtllm applies to serving a language model (task inference); task train serves no " \
        "requests" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "recommend", "sdxl-base-1.0", "--engine", "trtllm")  # planned as task diffusion
    assert code == 2 and "--engine trtllm applies to serving a language model (task inference); task diffusion " \
        "generates images" in err and len(err.splitlines()) == 1


def test_recipes_follow_the_planned_engine(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--engine", "trtllm", "--recipe", "trtllm")
    assert code == 0 and "--free_gpu_memory_fraction 0.9" in out and "as planned (--engine trtllm)" in out
    assert "· KV cache bf16 · engine TensorRT-LLM" in out  # the layout line says which engine was planned
    # asking for TensorRT-LLM's launch without an engine sizes for it; naming vLLM is refused, as naming TensorRT-LLM
    # for a vLLM or SGLang launch is (the launch would carry vLLM's memory share as free_gpu_memory_fraction)
    implied = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--recipe", "trtllm")
    assert implied["workload"]["engine"] == "trtllm" and "as planned (TensorRT-LLM, this launch's engine)" in str(implied["recipe"])
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--recipe", "trtllm", "--engine", "vllm")
    assert code == 2 and "sized for vLLM (--engine vllm)" in err and len(err.splitlines()) == 1
    assert run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--recipe", "vllm")["workload"]["engine"] == "vllm"
    for kind in ("vllm", "sglang"):
        code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--engine", "trtllm", "--recipe", kind)
        assert code == 2 and "sized for TensorRT-LLM" in err and len(err.splitlines()) == 1
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--engine", "trtllm", "--recipe", "vllm")
    assert code == 2 and "sized for TensorRT-LLM" in err


def test_recommend_prices_tensorrt_llms_capacity(capsys: pytest.CaptureFixture[str]) -> None:
    """Three Qwen3-32B requests of 16,000 + 100 tokens: vLLM's budget on one 80 GB A100 holds two of them, so the
    cheapest answer is two GPUs; TensorRT-LLM's KV cache holds three on one, at half the price (the sweep sizes the
    engine as plan() does, row by row in tests/recommend/test_sweep_agrees_with_plan.py)."""
    args = ("recommend", "qwen3-32b", "--gpu", "a100-80gb-sxm", "--prompt", "16000", "--output-tokens", "100",
            "--concurrency", "3")
    answers = {engine: run_json(capsys, *args, "--engine", engine) for engine in ("vllm", "trtllm")}
    assert all(answers[engine]["workload"]["engine"] == engine for engine in answers)
    vllm, trt = answers["vllm"]["results"][0], answers["trtllm"]["results"][0]
    assert (vllm["gpus"], trt["gpus"]) == (2, 1)
    caveats = {engine: next(a for a in run_json(capsys, *args, "--engine", engine)["assumptions"]
                            if a.startswith("Serving engine:")) for engine in ("vllm", "trtllm")}
    assert "trtllm-serve" in caveats["trtllm"] and "with vLLM's defaults expect the low end" in caveats["vllm"]
    assert float(trt["total_usd"]) == pytest.approx(float(vllm["total_usd"]) / 2)
    assert trt["budget_bytes"] > vllm["budget_bytes"]


def test_tensorrt_llm_is_refused_on_amd_gpus_and_offered_where_it_would_fit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "mi300x", "--engine", "trtllm")
    assert code == 2 and not out and err.strip() == ("error: --engine trtllm: TensorRT-LLM runs on NVIDIA GPUs only, "
                                                     "not mi300x")
    rec = run_json(capsys, "recommend", "llama-3.1-8b", "--engine", "trtllm", "--concurrency", "16")
    assert rec["results"] and all(get_gpu(r["gpu"]).vendor == "NVIDIA" for r in rec["results"])
    from anchorgpu.catalog import load_catalog
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner.sweep import sweep
    from anchorgpu.planner.sweep_types import SweepSpec
    from anchorgpu.recommend import shapes_from_catalog

    with pytest.raises(InvalidWorkload, match="NVIDIA GPUs only, not mi300x"):  # the sweep refuses it as plan() does
        sweep(load_model("llama-3.1-8b"), shapes_from_catalog(load_catalog().offerings, max_servers=1),
              SweepSpec(workload=Workload(task="inference", concurrency=4, engine="trtllm")))
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--engine", "trtllm", "--gpu", "mi300x")
    assert code == 2 and "no offering considered has an NVIDIA GPU" in err
    # three 16,000 + 100-token Qwen3-32B requests on one A100 80 GB: vLLM's budget holds two, TensorRT-LLM's three
    short = run_json(capsys, "plan", "qwen3-32b", "--gpu", "a100-80gb-sxm", "--gpus", "1", "--prompt", "16000",
                     "--output-tokens", "100", "--concurrency", "3")
    assert short["fits"] is False
    assert any(s["change"] == "--engine trtllm" and s["gpus"] == 1 for s in short["suggestions"])
    amd = run_json(capsys, "plan", "llama-3.1-405b", "--gpu", "mi300x", "--gpus", "1")
    assert amd["fits"] is False and not any(s["change"] == "--engine trtllm" for s in amd["suggestions"])


def test_the_readme_journey_is_what_the_cli_answers(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's TensorRT-LLM journey: one A100 for TensorRT-LLM, two for vLLM's budget (TP 2 over NVLink,
    predicted about 8% faster than the 2 replicas first tried, beyond the margin between layouts on NVLink)."""
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text("utf-8")
    argv = ("plan", "qwen3-32b", "--gpu", "a100-80gb-sxm", "--prompt", "16000", "--output-tokens", "100",
            "--concurrency", "3")
    assert " ".join(("anchorgpu", *argv, "--engine", "trtllm")) in readme
    code, out, _ = run(capsys, *argv, "--engine", "trtllm")
    shown = " ".join(out.split())
    # of the A100's 79.26 GiB as CUDA reports it (deviceQuery in thamada/nvidia-smi, gpus.toml memory_runtime_sources)
    assert code == 0 and "FITS - needs 74.48 GiB of 77.15 GiB per GPU" in shown and "· DP 1 ·" in shown
    assert "FITS on one A100 (TP 1, 74.48 GiB of 77.15 GiB)" in readme
    vllm = run_json(capsys, *argv)["layout"]
    assert (vllm["gpus"], vllm["tp"]) == (2, 2) and "vLLM's budget needs two (TP 2)" in readme
