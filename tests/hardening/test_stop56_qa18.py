"""Stop 56, qa18: QLoRA layouts no public stack runs (benchmarks/hardening/stop56_qa18.md).

QLoRA with interleaved virtual stages was planned and chosen (70B on 8 H100: TP 1 x PP 4 (v 10) x DP 2, 14,230
tok/s). The public launches of a 4-bit base over several GPUs are data parallel (DDP, FSDP-QLoRA, DeepSpeed ZeRO) or
the base split layer-wise with ``device_map="auto"``; none interleaves chunks, and NeMo's PEFT refuses a virtual
pipeline ("Virtual pipeline model parallel is not supported when using PEFT"). Sources in anchorgpu.planner.qlora_tp.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json
from hardening.conftest import page_error as _page_error

_70B_QLORA = ("llama-3.1-70b", "--task", "qlora", "--gpu", "h100", "--gpus", "8")
_REASON = "with --task qlora: no public stack interleaves pipeline stages over a 4-bit base"


def test_qlora_with_virtual_stages_is_refused_on_every_face(capsys: pytest.CaptureFixture[str],
                                                            client: TestClient) -> None:
    for extra in (("--virtual-stages", "2"), ("--pp", "4", "--virtual-stages", "5")):  # count open and stated
        code, _, err = run(capsys, "plan", *_70B_QLORA, *extra)
        assert code == 2 and err.count("\n") == 1, (extra, err)
        assert err.startswith(f"error: --virtual-stages {extra[-1]} {_REASON}"), err
    # the chunks of a stated layout (80 layers, PP 2, 8 chunks: 4 a stage) are interleaving too
    code, _, err = run(capsys, "plan", *_70B_QLORA, "--pp", "2", "--pipeline-layout",
                       "Et*10|t*10|t*10|t*10|t*10|t*10|t*10|t*10L")
    assert code == 2 and err.startswith(f"error: --pipeline-layout (4 chunks a stage) {_REASON}"), err
    r = client.post("/v1/plan", json={"model": "llama-3.1-70b", "task": "qlora", "gpu": "h100", "gpus": 8,
                                      "virtual_stages": 2})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["detail"].startswith("virtual_stages 2 with task qlora: no public stack interleaves"), r.json()
    page = client.get("/plan?model=llama-3.1-70b&task=qlora&gpu=h100&gpus=8&virtual_stages=2&lang=en")
    assert page.status_code == 422
    assert _page_error(page.text).startswith("“Virtual pipeline stages” 2 with “Task” qlora: no public stack"), \
        _page_error(page.text)
    # LoRA keeps interleaving (a control: its 16-bit base runs Megatron-Core's schedules as the full model's does)
    assert run_json(capsys, "plan", "llama-3.1-70b", "--task", "lora", "--gpu", "h100", "--gpus", "8", "--pp", "2",
                    "--virtual-stages", "2")["layout"]["virtual_stages"] == 2


def test_the_chooser_and_recommend_never_interleave_qlora(capsys: pytest.CaptureFixture[str]) -> None:
    for gpu in ("h100", "l40s", "rtx-4090"):  # each chose v 10 before (PP 4, PP 2, PP 4)
        chosen = run_json(capsys, "plan", "llama-3.1-70b", "--task", "qlora", "--gpu", gpu, "--gpus", "8")
        assert chosen["fits"] and (chosen["layout"]["virtual_stages"] or 1) == 1, (gpu, chosen["layout"])
    for stack in ("pytorch", "megatron"):
        chosen = run_json(capsys, "plan", *_70B_QLORA, "--train-stack", stack)
        assert (chosen["layout"]["virtual_stages"] or 1) == 1 and chosen["layout"]["tp"] == 1, (stack, chosen["layout"])
    rows = run_json(capsys, "recommend", "llama-3.1-70b", "--task", "qlora", "--tokens", "100M", "--top", "20")["results"]
    assert rows and all(r["layout"]["virtual_stages"] == 1 and r["layout"]["tp"] == 1 for r in rows)


# 2. Past the engine's step budget (promptbound's regime, anchorgpu.planner.speed.batching.prompt_bound_output_tokens)
#    the plan timed the queue (TTFT 4.03 s) but said nothing of it. 64 users x (1 + 4,000 / 10) = 25,664 tokens a
#    step over vLLM's 8,192 (vllm-project/vllm@00024d31 vllm/v1/core/sched/scheduler.py, token_budget); under the
#    budget 8,192 / 401 = 20.4 users.
_8B_PROMPTS = ("llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--prompt", "4000", "--output-tokens", "10")
_QUEUE = ("Prompts queue: 64 users of 4,000 prompt + 10 output tokens need 25,664 tokens a step (their decodes and "
          "their prompts spread over the outputs), over vLLM's step budget of 8,192 tokens (max_num_batched_tokens)")


def test_a_prompt_bound_plan_says_the_prompts_queue(capsys: pytest.CaptureFixture[str], client: TestClient) -> None:
    code, out, _ = run(capsys, "plan", *_8B_PROMPTS, "--concurrency", "64")
    assert code == 0 and "Prompts queue: 64 users" in out and "--max-num-batched-tokens 25664" in out
    found = [a for a in run_json(capsys, "plan", *_8B_PROMPTS, "--concurrency", "64")["performance"]["assumptions"]
             if a.startswith("Prompts queue")]
    assert len(found) == 1 and found[0].startswith(_QUEUE) and "fewer users (at most 20)" in found[0], found
    r = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1, "prompt": 4000,
                                      "output_tokens": 10, "concurrency": 64})
    assert r.status_code == 200 and any(a.startswith(_QUEUE) for a in r.json()["performance"]["assumptions"])
    # under the budget no line: 20 users (8,040 tokens a step), or the budget the line names
    for extra in (("--concurrency", "20"), ("--concurrency", "64", "--max-num-batched-tokens", "25664")):
        perf = run_json(capsys, "plan", *_8B_PROMPTS, *extra)["performance"]
        assert not any(a.startswith("Prompts queue") for a in perf["assumptions"]), extra
