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
    # SGLang's fraction is of the memory free after the context: no start-up check of vLLM's kind (its own check, of
    # the reserve left for the prefill, is below); at 0.98 one H100 keeps 1.57 GiB for a 0.91 GiB prefill peak
    plan(load_model("llama-3.1-8b"), Workload(task="inference", engine="sglang", gpu_memory_utilization=0.98),
         gpu=get_gpu("h100"), layout=Layout(gpus=1))


def test_sglang_refuses_a_share_that_leaves_less_than_a_prefill_chunk(local_db: None, sqlite_served: Served,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """``plan llama-3.1-8b --gpu h100 --engine sglang --gpu-memory-utilization 1.0`` said FITS with a warning and
    "needs 32.01 GiB of 79.59 GiB" on a 79.18 GiB GPU: SGLang allocates its whole KV pool at start-up
    (mem_fraction_static of the memory free at start less the weights, model_runner_kv_cache_mixin.py
    profile_max_num_token), so nothing is left for the first full prefill chunk. Now one line, exit 2 / 422."""
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--engine", "sglang",
                      "--gpu-memory-utilization", "1.0")
    # 928 MiB: Llama 3.1 8B's prefill activation peak for SGLang's 8,192-token chunk on an H100 (the plan's
    # prefill_activation_bytes); 0.988: 1 - 928 MiB over the ~78.5 GiB free at start, rounded down
    assert ("--gpu-memory-utilization 1: SGLang's KV pool would leave 0 B outside mem_fraction_static for the 928.00 MiB "
            "prefill peak of a chunk of 8,192 tokens") in err and "at most 0.988 here" in err, err
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--engine", "sglang",
                         "--gpu-memory-utilization", "0.988")
    assert code == 0 and "FITS" in out, err
    with pytest.raises(InvalidWorkload, match="at most 0.988 here"):  # 0.989 leaves 0.87 GiB, under the 0.91 GiB peak
        plan(load_model("llama-3.1-8b"), Workload(task="inference", engine="sglang", gpu_memory_utilization=0.989),
             gpu=get_gpu("h100"), layout=Layout(gpus=1))
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1,
                                                           "engine": "sglang", "gpu_memory_utilization": 1.0})
    assert response.status_code == 422 and "prefill peak" in problem_of(response)["detail"]
    # recommend offers no layout SGLang would run out of memory on, and says why
    code, out, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "inference", "--engine", "sglang",
                         "--gpu-memory-utilization", "1", "--context", "8192", "--json")
    import json

    answer = json.loads(out)
    assert code == 0 and answer["results"] == [] and answer["rejected"], err
    assert all("SGLang's KV pool would leave 0 B outside mem_fraction_static" in r["reason"]
               for r in answer["rejected"]), answer["rejected"][:2]


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


@pytest.mark.parametrize("gpu_name", ["h100", "l4", "mi300x"])
@pytest.mark.parametrize("utilization", [None, 0.9, 0.95, 0.98, 0.99, 0.995, 1.0])
def test_no_sglang_budget_is_larger_than_the_gpu_at_any_fraction(gpu_name: str, utilization: float | None) -> None:
    """SGLang's budget is the activations and non-torch memory plus mem_fraction_static of the memory free at start;
    at 1.0 it was the whole of that plus the activations ("needs 32.01 GiB of 79.59 GiB" on a 79.18 GiB H100). A
    fraction whose reserve is below the prefill peak is now refused, so every plan left has a budget within the GPU."""
    gpu = get_gpu(gpu_name)
    for tp in (1, 2):
        try:
            p = plan(load_model("llama-3.1-8b"), Workload(task="inference", engine="sglang", context_tokens=8192,
                                                          gpu_memory_utilization=utilization),
                     gpu=gpu, layout=Layout(gpus=tp, tp=tp))
        except InvalidWorkload as refused:
            assert utilization is not None and "prefill peak" in str(refused)
            continue
        assert p.budget_bytes is not None and p.budget_bytes <= gpu.memory_bytes, (tp, p.budget_bytes / 2**30)
        assert p.breakdown["sglang_reserve_bytes"] >= p.breakdown["prefill_activation_bytes"]


def test_recommend_for_a_gpu_the_catalog_does_not_offer_is_refused_in_one_line(sqlite_served: Served) -> None:
    """POST /v1/recommend with a known GPU no offering has (a100-40gb-sxm) answered 500 after the start-up check came
    in (an empty list of rejections); before it, a TensorRT-LLM refusal nobody asked for. It says what the CLI says."""
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.1-8b", "gpu": "a100-40gb-sxm",
                                                                "top": 1, "max_servers": 1})
    assert response.status_code == 422
    assert problem_of(response)["detail"] == "gpu a100-40gb-sxm: the catalog has no offering of a100-40gb-sxm"
