"""Stop 57's QA pass over the serving answers on AMD and Blackwell GPUs (benchmarks/hardening/stop57_qa19.md, "qa19").

1. An NVFP4 weight format on the MI355X was timed at its FP4 peak (10.1 PFLOPS dense), where its FP4 units take the MX
   formats only (the gpus.json row's ``fp4_formats``: MXFP4 and MXFP6, E8M0 scales per 32 values; NVFP4's scales are
   E4M3 per 16): on AMD GPUs vLLM and SGLang run an NVFP4 checkpoint through Petit's weight-only kernels, whose inputs
   are BF16 or FP16 (vllm-project/vllm ``vllm/model_executor/layers/quantization/petit.py``: ``PetitNvFp4Config``,
   ``get_supported_act_dtypes``). Llama-3.1-8B ``--weights nvfp4`` on one MI355X ran as fast as ``--weights mxfp4``
   (8,000-token prompts at 64 users: TTFT 0.054 s both) and with no warning; now at the BF16 rate (0.126 s, against
   0.127 s for the BF16 checkpoint) with ``fp4_weight_only_emulation``, in plan and in recommend's sweep alike.
2. An NVFP4 mixture of experts (DeepSeek-R1-0528-FP4, or ``--weights nvfp4`` on any MoE) was planned and timed on
   MI300X, MI325X and MI355X with vLLM and SGLang, and ``recommend deepseek-r1-0528-fp4`` could rank AMD offerings. Both
   engines turn a ModelOpt checkpoint into ``petit_nvfp4`` on ROCm (``override_quantization_method``; vLLM's
   ``vllm/platforms/rocm.py`` lists ``petit_nvfp4`` and not ``modelopt`` among ROCm's quantizations), and Petit's
   ``get_quant_method`` quantizes ``LinearBase`` layers only (sgl-project/sglang
   ``python/sglang/srt/layers/quantization/petit.py`` the same), so the fused expert layers' packed FP4 weights have no
   method to load them. Now plan refuses in one line (CLI exit 2, API 422) with the ways out, and recommend rejects the
   AMD offerings with the reason.
3. ``--engine trtllm`` planned a GGUF file or a bitsandbytes NF4 checkpoint (``--weights gguf-q4_k_m``, ``nf4``),
   which TensorRT-LLM does not load on any GPU; now refused with the ways out (``--weights int4-awq``, vLLM).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from anchorgpu.architectures import load_model
from anchorgpu.catalog import load_catalog
from anchorgpu.planner import Workload
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.sweep import sweep
from anchorgpu.planner.sweep_types import SweepSpec
from anchorgpu.recommend import shapes_from_catalog
from cli_runner import run, run_json
from hardening.conftest import cli_refusal, page_error
from sweep_rows import plan_of_row

_8B_MI355X = ("plan", "llama-3.1-8b", "--gpu", "mi355x", "--gpus", "1", "--prompt", "8000", "--output-tokens", "100",
              "--concurrency", "64")


def _performance(capsys: pytest.CaptureFixture[str], weights: str) -> dict:  # type: ignore[type-arg]
    answer = run_json(capsys, *_8B_MI355X, "--weights", weights)
    return {"codes": {w["code"] for w in answer["warnings"]}, **answer["performance"]}


def test_nvfp4_on_the_mi355x_runs_at_the_bf16_rate_its_fp4_units_taking_mx_formats_only(
        capsys: pytest.CaptureFixture[str]) -> None:
    nvfp4, mxfp4, bf16 = (_performance(capsys, w) for w in ("nvfp4", "mxfp4", "bf16"))
    assert mxfp4["compute_precision"] == "fp4" and "fp4_weight_only_emulation" not in mxfp4["codes"]
    assert nvfp4["compute_precision"] == "bf16" and "fp4_weight_only_emulation" in nvfp4["codes"]
    # the 8,000-token prompt is compute-bound: NVFP4 was 0.054 s as MXFP4 is; now within 5% of the BF16 checkpoint's
    assert nvfp4["ttft_s"] > 2 * mxfp4["ttft_s"], (nvfp4["ttft_s"], mxfp4["ttft_s"])
    assert nvfp4["ttft_s"] == pytest.approx(bf16["ttft_s"], rel=0.05)


def test_recommends_sweep_times_nvfp4_on_the_mi355x_as_plan_does() -> None:
    model = load_model("llama-3.1-8b")
    shapes = tuple(s for s in shapes_from_catalog(load_catalog().offerings, max_servers=1) if s.gpu.name == "mi355x")
    workload = Workload(task="inference", context_tokens=8192, concurrency=64)
    result = sweep(model, shapes, SweepSpec(workload=workload, weights=("mxfp4", "nvfp4"), prompt_tokens=8000,
                                            output_tokens=100))
    rates = {}
    for i in range(result.evaluated):
        row = result.row(i)
        if row["tp"] != 1 or row["dp"] != 1 or not row["fits"]:  # one replica of one GPU each format
            continue
        p, _ = plan_of_row(model, replace(workload, prompt_tokens=8000, output_tokens=100), result, row)
        perf = plan_performance(p)
        assert perf is not None
        assert row["prefill_s"] == pytest.approx(perf["ttft_s"], rel=1e-6)
        rates[row["weights"]] = row["prefill_s"]
    assert rates["nvfp4"] > 2 * rates["mxfp4"], rates  # was equal: both at the FP4 peak


@pytest.mark.parametrize(("model", "gpu", "extra"), [
    ("deepseek-r1-0528-fp4", "mi355x", ()),
    ("deepseek-r1-0528-fp4", "mi300x", ("--engine", "sglang")),
    ("qwen3-30b-a3b", "mi325x", ("--weights", "nvfp4")),
])
def test_an_nvfp4_mixture_of_experts_is_refused_on_amd_gpus(capsys: pytest.CaptureFixture[str], model: str, gpu: str,
                                                              extra: tuple[str, ...]) -> None:
    err = cli_refusal(capsys, "plan", model, "--gpu", gpu, "--concurrency", "8", *extra)
    assert "through Petit" in err and "--weights fp8 or mxfp4" in err, err


def test_the_same_checkpoint_still_plans_on_blackwell_and_in_mxfp4_on_amd(capsys: pytest.CaptureFixture[str]) -> None:
    b200 = run_json(capsys, "plan", "deepseek-r1-0528-fp4", "--gpu", "b200", "--concurrency", "8")
    assert b200["precision"]["weights"] == "nvfp4" and b200["fits"]
    mx = run_json(capsys, "plan", "deepseek-r1-0528-fp4", "--gpu", "mi355x", "--weights", "mxfp4", "--concurrency", "8")
    assert mx["precision"]["weights"] == "mxfp4" and mx["fits"]
    dense = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "mi300x", "--weights", "nvfp4", "--concurrency", "8")
    assert dense["fits"]  # Petit's linear kernels load a dense model: planned weight-only, not refused


def test_the_api_and_page_refuse_it_too(client: TestClient) -> None:
    r = client.post("/v1/plan", json={"model": "deepseek-r1-0528-fp4", "gpu": "mi355x", "concurrency": 8})
    assert r.status_code == 422, r.text
    assert "through Petit" in r.text
    page = client.get("/plan?model=deepseek-r1-0528-fp4&gpu=mi355x&concurrency=8&lang=en")
    assert "through Petit" in page_error(page.text)


def test_recommend_rejects_the_amd_offerings_with_the_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "recommend", "deepseek-r1-0528-fp4", "--concurrency", "8", "--json")
    assert code == 0, err
    answer = json.loads(out)
    ranked = {r["offering"] for r in answer["results"]}
    assert ranked and not any(o.startswith("mi3") for o in ranked), ranked
    amd = [r["reason"] for r in answer["rejected"] if r["offering"].startswith("mi3")]
    assert amd and all("through Petit" in reason for reason in amd), amd


@pytest.mark.parametrize("weights", ["gguf-q4_k_m", "nf4"])
def test_tensorrt_llm_is_not_planned_with_a_gguf_or_nf4_file(capsys: pytest.CaptureFixture[str], weights: str) -> None:
    """TensorRT-LLM's quantization recipes are FP8, FP4, INT4 AWQ/GPTQ and INT8 (its quantization page,
    nvidia.github.io/TensorRT-LLM/features/quantization.html): no GGUF file, no bitsandbytes NF4. Both were planned and
    timed on B200 and H100 (stop57 qa19, item 3); vLLM still plans them (it reads both)."""
    err = cli_refusal(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--weights", weights, "--engine", "trtllm")
    assert "TensorRT-LLM loads no" in err and "--weights int4-awq" in err, err
    assert run_json(capsys, "plan", "llama-3.1-70b", "--gpu", "h100", "--weights", weights)["fits"]
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--engine", "trtllm", "--weights", weights)
    assert code == 2 and "TensorRT-LLM loads no" in err, err


def test_gpus_compare_says_why_the_plan_is_refused_rather_than_that_no_layout_fits(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "gpus", "compare", "mi355x", "b200", "--model", "deepseek-r1-0528-fp4")
    assert code == 0, err
    text = " ".join(out.split())
    assert "on mi355x it is refused: the default engine (vLLM) with nvfp4 weights on mi355x" in text, text[-800:]
    assert "no tried layout fits" not in text
