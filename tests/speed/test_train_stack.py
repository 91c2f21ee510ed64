"""``--train-stack pytorch``: the speed of a PyTorch-native training stack (torchtitan, FSDP training scripts,
OLMo-core, llm-foundry), which runs the operators around the products unfused or partly fused and attention through
PyTorch's SDPA. Planned as Megatron-Core, their 15 non-CP runs in the calibration set came out up to a third fast
(torchtitan's 8B at +18-22%, OLMo-core's at +12-33%); one fitted constant, the bytes those operators move a token,
layer and hidden unit, fitted on the four of them in the fit (T26, T29, T30, T39), brings the held-out ones in."""

from __future__ import annotations

import statistics

import pytest

from anchorgpu.architectures import load_model
from anchorgpu.hardware import get_gpu
from anchorgpu.planner import Layout, Workload, plan
from anchorgpu.planner.speed.calibration import calibration
from anchorgpu.planner.speed.estimate import plan_performance
from anchorgpu.planner.speed.runs import load_runs, predict
from cli_runner import run, run_json

PYTORCH = [r for r in load_runs() if r.row.get("train_stack") == "pytorch"]


def test_the_pytorch_native_rows_are_marked_and_mostly_held_out() -> None:
    # 29 since stop 51: L3-405B, Llama 3's own FSDP stack (ZeRO-2 memory under pipeline stages, which Megatron cannot
    # run); 33 since stop 57: torchtitan's docs/performance.md rows (405B FP8 with and without Async TP on 128 H100, Llama 2
    # 13B on 64 A100 with and without checkpointing), all held out; 41 since stop 58: answer.ai's FSDP-QLoRA and LoRA
    # runs (AnswerDotAI/fsdp_qlora benchmarks_03_2024.md, set answerai-fsdp-qlora), held out
    assert len(PYTORCH) == 41 and {r.id for r in PYTORCH if r.role == "fit"} == {"T26", "T29", "T30", "T39"}
    # torchtitan's and OLMo-core's runs state FlashAttention-2; Llama 3's paper names no kernel (the stack's default)
    assert all(r.row.get("attention_kernel") == "fa2" for r in PYTORCH if r.id != "L3-405B")


def test_held_out_pytorch_native_runs_are_predicted_as_such() -> None:
    """Without context parallelism (whose torchtitan runs at CP 2-8 have their own band and caveat) every held-out
    PyTorch-native run comes within 25% but OLMo-core's 32B (T37, over 1,024 GPUs, +28%; FP8 +49%), the largest model
    of its README table, with a median error under 10% (the 13B in FP8 came in at +24.8%, from +27%, when a flash
    kernel's backward was timed at 2.5 forwards, went back out to +27.1% with the refit after it, and came in at
    about +21% in stop 61, when the products beside FSDP's gathers and scatter inside its server were timed on the SMs
    the collectives leave them: data_parallel.collective_sm_share)."""
    held = {r.id: predict(r) / r.value - 1 for r in PYTORCH if r.role == "holdout" and r.row["cp"] == 1}
    # L3-405B among them since stop 51 (-24.5%, Meta's stack timed with the PyTorch stack's rates); torchtitan's docs
    # rows (TT-405B-128-F8*, TT-L2-13B-64-A100-*) since stop 57, each within 7%; answer.ai's eight rows since stop 58,
    # the A100 and RTX 4090 ones within 23%, the H100 one +57% (the source's 23% MFU, offload stated off: no setting
    # the planner can state explains it; benchmarks/hardening/stop58_qloradeq.md)
    assert len(held) == 31
    assert {k for k, e in held.items() if abs(e) > 0.25} == {"T37", "T37-FP8", "AA-70B-H100-4"}, held
    assert statistics.median(abs(e) for e in held.values()) < 0.10, held


def test_the_constant_moves_only_the_pytorch_native_rows() -> None:
    from dataclasses import replace

    cal = calibration()
    k = cal.stacks["cuda"]
    other = replace(cal, stacks={**cal.stacks, "cuda": replace(k, pytorch_elementwise_bytes_per_hidden=1.0)})
    train = [r for r in load_runs() if r.phase == "train" and r.row["gpu"] != "mi300x"]
    moved = {r.id for r in train if predict(r, other) != pytest.approx(predict(r, cal), rel=1e-9)}
    assert moved == {r.id for r in PYTORCH}
    assert k.pytorch_elementwise_bytes_per_hidden > k.elementwise_bytes_per_hidden  # more traffic, not less


def test_a_plan_for_a_pytorch_stack_is_slower_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    model, gpu = load_model("llama-3.1-8b"), get_gpu("h100")
    speeds = {}
    for stack in ("megatron", "pytorch"):
        p = plan(model, Workload(task="train", train_stack=stack), gpu=gpu, layout=Layout(gpus=8, tp=1, dp=8, zero=1))
        perf = plan_performance(p)
        speeds[stack] = perf["train_tokens_per_s"]
        said = any(a.startswith("Speed of a PyTorch-native stack") for a in perf["assumptions"])
        assert said == (stack == "pytorch")
    assert 0.7 < speeds["pytorch"] / speeds["megatron"] < 0.95
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8",
                   "--train-stack", "pytorch")
    assert doc["workload"]["train_stack"] == "pytorch"
    argv = ("recommend", "llama-3.1-8b", "--task", "train", "--tokens", "1e10", "--gpu", "h100", "--top", "20")
    by = {stack: {(r["offering"], r["servers"]): r["train_tokens_per_s"]
                  for r in run_json(capsys, *argv, "--train-stack", stack)["results"]} for stack in ("megatron", "pytorch")}
    same = set(by["megatron"]) & set(by["pytorch"])
    assert same and all(by["pytorch"][k] < by["megatron"][k] for k in same)


def test_a_bad_stack_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--train-stack", "jax")
    assert code == 2 and "--train-stack 'jax': choose megatron or pytorch" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-stack", "jax")
    assert code == 2 and "--train-stack 'jax'" in err


@pytest.mark.parametrize(("recipe", "stack"), [("torchrun-fsdp", "pytorch"), ("deepspeed", "pytorch"),
                                               ("accelerate", "pytorch"), ("skypilot", "megatron")])
def test_a_pytorch_native_launch_is_timed_as_one_unless_told(capsys: pytest.CaptureFixture[str], recipe: str,
                                                              stack: str) -> None:
    """As --recipe trtllm sizes for TensorRT-LLM: a launch written for FSDP, DeepSpeed or accelerate is timed as the
    stack it launches; --train-stack given keeps its word."""
    argv = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8", "--tp", "1", "--zero", "3",
            "--recipe", recipe)
    assert run_json(capsys, *argv)["workload"]["train_stack"] == stack
    assert run_json(capsys, *argv, "--train-stack", "megatron")["workload"]["train_stack"] == "megatron"


def test_the_device_measured_transformers_runs_are_nearer_the_pytorch_prediction() -> None:
    """An independent check: the transformers runs measured on one H200 (benchmarks/device/h200_2026-12-04.json,
    never fitted) came out 0.67-0.90x of the Megatron-Core prediction eagerly (0.58-0.88x before stop 40 planned
    them, as they ran, with one micro-batch a step); as a PyTorch-native stack they are nearer 1 (eager_stack.json,
    written by benchmarks/device/compare.py --write from that run)."""
    from anchorgpu.planner.eager_stack import eager_stack

    e = eager_stack()
    for megatron, pytorch in ((e.eager_speed, e.eager_speed_pytorch), (e.compiled_speed, e.compiled_speed_pytorch)):
        assert pytorch[0] > megatron[0] and pytorch[1] > megatron[1]
        assert abs(sum(pytorch) / 2 - 1) < abs(sum(megatron) / 2 - 1)
    assert e.eager_speed_pytorch[1] < 1.1  # and not past it: the prediction is not a floor


def test_qlora_is_timed_as_the_pytorch_stack_it_runs_on(capsys: pytest.CaptureFixture[str]) -> None:
    """QLoRA's bitsandbytes 4-bit layers run in PyTorch (PEFT): no Megatron-Core run serves it, so its speed is the
    PyTorch-native stack's unless told; LoRA keeps Megatron-Core's (NeMo's LoRA rows, N24-L2-*-LORA, are timed so)."""
    argv = ("plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1")
    assert run_json(capsys, *argv, "--task", "qlora")["workload"]["train_stack"] == "pytorch"
    assert run_json(capsys, *argv, "--task", "lora")["workload"]["train_stack"] == "megatron"
    assert run_json(capsys, *argv, "--task", "qlora", "--train-stack", "megatron")["workload"]["train_stack"] == "megatron"
