"""Many users and no request length: each sequence is sized at the request the speed figures time (1,024 prompt +
256 output tokens), not at the model's whole window each, so the memory, the layout chosen and the speed describe
the same requests; one sequence (or no concurrency) still checks the whole window; a recipe still lets the engine
accept long requests, as its own default would."""

from __future__ import annotations

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, PrecisionPlan, Workload, plan
from anchorgpu.planner.inference import DEFAULT_REQUEST_NOTE
from anchorgpu.planner.inputs import DEFAULT_OUTPUT_TOKENS, DEFAULT_PROMPT_TOKENS
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.recipes import build_recipe
from cli_runner import run, run_json

H100 = get_gpu("h100")
LLAMA_8B = load_model("llama-3.1-8b")
REQUEST = DEFAULT_PROMPT_TOKENS + DEFAULT_OUTPUT_TOKENS


def _notes(p) -> list[str]:  # type: ignore[no-untyped-def]
    return [a for a in p.assumptions if a.startswith(DEFAULT_REQUEST_NOTE)]


def test_sixty_four_users_of_an_8b_model_are_planned_on_one_h100() -> None:
    """Before: 64 sequences of 131,072 tokens each needed 16 H100s (TP 8, PP 2) for an 8B model."""
    p = plan(LLAMA_8B, Workload(task="inference", concurrency=64), gpu=H100)
    assert p.fits and p.layout.gpus == 1
    assert p.workload.context_tokens == REQUEST == 1280
    assert len(_notes(p)) == 1 and "64 sequences" in _notes(p)[0] and "131,072" in _notes(p)[0]
    assert p.max_context_tokens is not None and p.max_context_tokens > REQUEST  # each may run longer


def test_memory_and_speed_describe_the_same_request() -> None:
    p = plan(LLAMA_8B, Workload(task="inference", concurrency=64), gpu=H100)
    perf = plan_performance(p)
    assert perf["prompt_tokens"] + perf["output_tokens"] == p.workload.context_tokens


def test_one_sequence_still_checks_the_whole_window() -> None:
    for w in (Workload(task="inference"), Workload(task="inference", concurrency=1)):
        p = plan(LLAMA_8B, w, gpu=H100)
        assert p.workload.context_tokens == LLAMA_8B.max_context_tokens == 131_072
        assert not _notes(p)


def test_a_given_length_is_kept() -> None:
    given = plan(LLAMA_8B, Workload(task="inference", context_tokens=8192, concurrency=64), gpu=H100)
    assert given.workload.context_tokens == 8192 and not _notes(given)
    by_request = plan(LLAMA_8B, Workload(task="inference", prompt_tokens=3000, output_tokens=500, concurrency=64),
                      gpu=H100)
    assert by_request.workload.context_tokens == 3500 and not _notes(by_request)


def test_a_short_window_caps_the_request() -> None:
    model = load_model("llama-2-7b")  # 4,096-token window, longer than the request
    p = plan(model, Workload(task="inference", concurrency=8), gpu=H100)
    assert p.workload.context_tokens == min(REQUEST, model.max_context_tokens)


def test_the_recipe_lets_the_engine_accept_long_requests_when_no_length_was_given() -> None:
    p = plan(LLAMA_8B, Workload(task="inference", concurrency=64), gpu=H100, layout=Layout(gpus=1))
    r = build_recipe(p, "vllm")
    assert "--max-model-len 131072" in r.command
    assert any(a.startswith("Context limit 131,072 tokens: no length was given") for a in r.assumptions)
    given = plan(LLAMA_8B, Workload(task="inference", context_tokens=8192, concurrency=16), gpu=H100,
                 layout=Layout(gpus=1))
    assert "--max-model-len 8192" in build_recipe(given, "vllm").command


def test_cli_and_recommend_say_the_request_they_sized(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "64")
    assert doc["gpus"] == 1 and doc["workload"]["context_tokens"] == REQUEST
    w = run_json(capsys, "recommend", "llama-3.1-70b", "--concurrency", "32", "--top", "1")["workload"]
    assert (w["context_tokens"], w["prompt_tokens"], w["output_tokens"]) == (REQUEST, DEFAULT_PROMPT_TOKENS,
                                                                             DEFAULT_OUTPUT_TOKENS)
    code, out, _ = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--concurrency", "64")
    assert code == 0 and "1 × NVIDIA H100" in out


def test_a_chosen_layout_says_what_would_hold_the_requests_on_one_step_fewer_gpus() -> None:
    """gpt-oss-120b for 64 users on H100: two GPUs at vLLM's default 0.9; one holds them sized for TensorRT-LLM, or
    with vLLM capped at 256 sequences (its sampler's start-up profile shrinks fourfold; vllm-project/vllm issue #23278
    logs "Available KV cache memory: -2.14 GiB" for it on one H100 at the defaults). Not at 0.95, the budget its
    single-H100 deployments are given (GitLab's vLLM example for it on one H100 80 GB uses 0.95): 0.95 of the
    79.18 GiB CUDA reports (gpus.toml) holds 60 of the 64; 0.96, the least two-decimal fraction that holds them
    (below the 0.993 vLLM starts with), is offered. Llama 3.1 405B for 64 users: sixteen
    H100s in BF16; eight with FP8 weights (Meta publishes an FP8 checkpoint of it)."""
    model = load_model("gpt-oss-120b")
    chosen = plan(model, Workload(task="inference", concurrency=64), gpu=H100)
    assert chosen.layout.gpus == 2
    reason = next(a for a in chosen.assumptions if a.startswith("Layout chosen"))
    assert reason.endswith("; 1 (TP 1, PP 1) would hold them with --engine trtllm or --max-num-seqs 256 or "
                           "--gpu-memory-utilization 0.96")
    capped = plan(model, Workload(task="inference", concurrency=64, max_num_seqs=256), gpu=H100)
    assert capped.layout.gpus == 1 and capped.fits and (capped.max_concurrency or 0) >= 64
    trt = plan(model, Workload(task="inference", concurrency=64, engine="trtllm"), gpu=H100)
    assert trt.layout.gpus == 1 and trt.fits  # TensorRT-LLM's KV sizing leaves more room on one H100
    one = plan(model, Workload(task="inference", concurrency=64, gpu_memory_utilization=0.95), gpu=H100,
               layout=Layout(gpus=1))
    assert not one.fits and 0 < (one.max_concurrency or 0) < 64
    big = plan(load_model("llama-3.1-405b"), Workload(task="inference", concurrency=64), gpu=H100)
    assert big.layout.gpus == 16
    reason = next(a for a in big.assumptions if a.startswith("Layout chosen"))
    assert "8 (TP 8, PP 1) would hold them with" in reason and "--weights fp8" in reason
    fp8 = plan(load_model("llama-3.1-405b"), Workload(task="inference", concurrency=64), gpu=H100,
               precision=PrecisionPlan(weights="fp8"))
    assert fp8.layout.gpus == 8 and fp8.fits


def test_a_smaller_vllm_sequence_cap_is_offered_only_where_it_holds_the_users() -> None:
    """``--max-num-seqs 256`` is offered when vLLM's cap is larger (1,024 on an 80 GB GPU) and the users asked fit
    under it; not for 512 users, nor for TensorRT-LLM (no sampler warm-up over a full batch), nor where the cap is
    already 256 (a GPU under 70 GiB)."""
    model = load_model("gpt-oss-120b")

    def changes(w: Workload, gpu: object = H100) -> list[str]:
        return [s.change for s in plan(model, w, gpu=gpu, layout=Layout(gpus=1)).suggestions]

    assert "--max-num-seqs 256" in changes(Workload(task="inference", concurrency=64))
    assert "--max-num-seqs 256" not in changes(Workload(task="inference", concurrency=512))
    assert "--max-num-seqs 256" not in changes(Workload(task="inference", concurrency=64, engine="trtllm"))
    small = plan(load_model("llama-3.1-8b"), Workload(task="inference", concurrency=64, context_tokens=131072),
                 gpu=get_gpu("l4"), layout=Layout(gpus=1))
    assert small.workload.max_num_seqs == 256 and "--max-num-seqs 256" not in [s.change for s in small.suggestions]
