"""A vLLM memory fraction the engine refuses at start-up is refused by every face (vLLM V1's worker raises "Free
memory on device (free/total GiB) on startup is less than desired GPU memory utilization" when ``u x total`` exceeds
what is free once its CUDA context exists; planner/engine_startup.py). Found by the adversarial pass of this stop:
``plan llama-3.1-8b --gpu h100 --gpu-memory-utilization 1.0`` said FITS with an engine budget the GPU cannot give."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.errors import InvalidWorkload
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, plan
from anchorgpu.planner.inputs import Workload
from cli_runner import run
from hardening.conftest import Served, cli_refusal, problem_of


def test_plan_refuses_a_fraction_vllm_would_not_start_with(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpu-memory-utilization", "1.0")
    # 79.18 GiB: the H100's runtime total (gpus.toml); 512 MiB: the planner's stated CUDA context
    assert "vLLM asks for 79.18 GiB free at start-up on h100-sxm" in err and "at most 0.993" in err, err
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpu-memory-utilization", "0.993")
    assert code == 0 and "FITS" in out, err


def test_the_limit_follows_the_runtime_context() -> None:
    w = Workload(task="inference", gpu_memory_utilization=0.99)
    plan(load_model("llama-3.1-8b"), w, gpu=get_gpu("h100"))  # 0.99 x 79.18 GiB < 79.18 GiB - 512 MiB
    with pytest.raises(InvalidWorkload, match="ROCm context"):
        plan(load_model("llama-3.1-8b"), Workload(task="inference", gpu_memory_utilization=1.0), gpu=get_gpu("mi300x"))
    # SGLang's fraction is of the memory free after the context and the weights: no start-up check of this kind
    plan(load_model("llama-3.1-8b"), Workload(task="inference", engine="sglang", gpu_memory_utilization=0.99),
         gpu=get_gpu("h100"))


def test_the_api_and_recommend_refuse_it_too(local_db: None, sqlite_served: Served,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100",
                                                           "gpu_memory_utilization": 1.0})
    assert response.status_code == 422 and "refuses to start" in problem_of(response)["detail"]
    err = cli_refusal(capsys, "recommend", "llama-3.1-8b", "--task", "inference", "--gpu-memory-utilization", "1")
    assert "no offering considered can run it" in err and "refuses to start" in err, err
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "inference", "--gpu-memory-utilization",
                         "0.99", "--json")
    assert code == 0, err
    import json

    rejected = json.loads(out)["rejected"]
    # a 24 GB L4's context takes a larger share: 0.99 leaves it less than vLLM asks for, while the H100 runs it
    assert any("l4" in r["offering"] and "refuses to start" in r["reason"] for r in rejected), rejected[:3]


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "sglang"])
def test_no_engine_budget_is_larger_than_the_gpu(engine: str) -> None:
    """A 70B in BF16 on one H100 does not fit under any engine; TensorRT-LLM's budget (the profiled peak plus a share
    of what it leaves free) was clamped at the peak and said "needs 213.38 GiB of 133.38 GiB", more than the GPU."""
    gpu = get_gpu("h100")
    p = plan(load_model("llama-3.1-70b"), Workload(task="inference", engine=engine, context_tokens=8192,
                                                   concurrency=32), gpu=gpu, layout=Layout(gpus=1))
    assert p.fits is False and p.budget_bytes is not None
    assert p.budget_bytes <= gpu.memory_bytes, (engine, p.budget_bytes / 2**30)


def test_recommend_for_a_gpu_the_catalog_does_not_offer_is_refused_in_one_line(sqlite_served: Served) -> None:
    """POST /v1/recommend with a known GPU no offering has (a100-40gb-sxm) answered 500 after the start-up check came
    in (an empty list of rejections); before it, a TensorRT-LLM refusal nobody asked for. It says what the CLI says."""
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "gpu": "a100-40gb-sxm",
                                                                "top": 1, "max_servers": 1})
    assert response.status_code == 422
    assert problem_of(response)["detail"] == "gpu a100-40gb-sxm: the catalog has no offering of a100-40gb-sxm"
