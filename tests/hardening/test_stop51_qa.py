"""Stop 51, the third QA pass (benchmarks/hardening/stop51_qa.md): training plans with partial layouts, and the JSON
keys README documents. Each test pins a fix and fails on the main it branched from (1b580c7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anchorgpu.planner.speed.training import BREAKDOWN_KEYS
from cli_runner import run, run_json
from hardening.conftest import Served, cli_refusal, problem_of

README = Path(__file__).resolve().parents[2] / "README.md"
TRAIN_8B = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8")


@pytest.mark.parametrize(("flag", "named"), [(("--zero", "3"), "--zero 3 with --pp 2"), (("--fsdp",), "--fsdp with --pp 2")])
def test_fsdp_with_pipeline_stages_is_refused_on_the_megatron_stack(capsys: pytest.CaptureFixture[str],
                                                                    flag: tuple[str, ...], named: str) -> None:
    """``--zero 3 --pp 2`` planned silently on the default (Megatron) stack: 26.37 GiB and 94,073 tok/s for a layout
    Megatron-FSDP does not run (the chooser never tries it: speed/layouts.py ``sharded_with_stages``), where the
    PyTorch stack's FSDP2 under pipelining holds 76.01 GiB. Now one line, as ``--zero 2 --pp 2`` on the PyTorch stack."""
    err = cli_refusal(capsys, *TRAIN_8B, *flag, "--pp", "2")
    assert named in err and "Megatron-FSDP runs no pipeline stages" in err and "--train-stack pytorch" in err, err
    # without a GPU too: the layout is refused, not only its timing
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--task", "train", "--gpus", "8", *flag, "--pp", "2")
    assert named in err, err


def test_fsdp_with_pipeline_stages_still_plans_on_the_pytorch_stack(capsys: pytest.CaptureFixture[str]) -> None:
    """The control: FSDP2 under torch.distributed.pipelining (torchtitan, row T28) is a layout the PyTorch stack runs.
    QLoRA resolves to that stack, but its 4-bit base splits over GPUs only by accelerate's device_map, one process
    (stop57_qloranaive.md): with FSDP over DP 4 it is refused since stop 57."""
    doc = run_json(capsys, *TRAIN_8B, "--zero", "3", "--pp", "2", "--train-stack", "pytorch")
    assert doc["layout"]["pp"] == 2 and doc["layout"]["zero"] == 3 and doc["fits"] is True
    code, _, err = run(capsys, "plan", "llama-3.1-8b", "--task", "qlora", "--gpu", "h100", "--gpus", "8", "--zero", "3",
                       "--pp", "2")
    assert code == 2 and "--pp 2 with DP 4 for --task qlora on the PyTorch stack: accelerate refuses" in err, err


def test_the_api_refuses_fsdp_with_pipeline_stages_in_one_line(sqlite_served: Served) -> None:
    body = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "zero": 3, "pp": 2}
    problem = problem_of(sqlite_served.client.post("/v1/plan", json=body))
    assert problem["status"] == 422 and "Megatron-FSDP runs no pipeline stages" in problem["detail"], problem
    ok = sqlite_served.client.post("/v1/plan", json={**body, "train_stack": "pytorch"})
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(("argv", "named", "split"), [
    (("plan", "llama-3.1-70b", "--task", "train", "--gpus", "64", "--zero", "1"),
     "Layout not given beyond --zero 1:", "(TP 1, PP 1, DP 64)"),
    (("plan", "deepseek-v3", "--task", "train", "--gpus", "256", "--cp", "2", "--seq", "32768"),
     "Layout not given beyond --cp 2:", "(TP 1, PP 1, CP 2, DP 128)"),
    (("plan", "mixtral-8x7b", "--gpu", "h100", "--gpus", "8", "--ep", "8"),
     "Layout not given beyond --ep 8:", "(TP 8, PP 1, DP 1)"),
])
def test_a_plan_with_layout_flags_does_not_say_the_layout_was_not_given(capsys: pytest.CaptureFixture[str],
                                                                        argv: tuple[str, ...], named: str,
                                                                        split: str) -> None:
    """``--zero 1`` for a 70B on 64 GPUs said "Layout not given: training and diffusion replicate by data parallelism
    (TP 1, PP 1, DP 64)" though ``--zero 1`` was given; ``--cp 2`` lost its CP from the split it named. The line now
    names the flags. (On a named GPU such training flags no longer reach this line: TP and PP are searched around
    them, tests/speed/test_chooser_partial_layout.py; without a GPU nothing is chosen, so the default split is kept.)"""
    doc = run_json(capsys, *argv)
    lines = [a for a in doc["assumptions"] if a.startswith("Layout not given")]
    assert len(lines) == 1 and lines[0].startswith(named) and split in lines[0], lines


def test_a_plan_without_layout_flags_keeps_its_line(capsys: pytest.CaptureFixture[str]) -> None:
    doc = run_json(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8")
    assert "Layout not given: inference shards by TP across the GPUs of one server (TP 8, PP 1, DP 1)." \
        in doc["assumptions"]


def test_the_whole_window_context_line_separates_thousands(capsys: pytest.CaptureFixture[str]) -> None:
    """"Context not given: the model's context length, 131072 tokens per sequence." -- every other count in the
    plan's lines is written 131,072."""
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100")
    assert code == 0, err
    said = " ".join(out.split())
    assert "the model's context length, 131,072 tokens per sequence" in said, out


def test_readme_lists_every_step_time_breakdown_key(capsys: pytest.CaptureFixture[str]) -> None:
    """README's ``step_time_breakdown_s{...}`` left out ``activation_offload``, which every training plan emits."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    listed = re.search(r"`step_time_breakdown_s\{([^}]*)\}`", text)
    assert listed is not None
    assert tuple(k.strip() for k in listed.group(1).split(",")) == BREAKDOWN_KEYS
    doc = run_json(capsys, *TRAIN_8B, "--pp", "2")
    assert tuple(doc["performance"]["step_time_breakdown_s"]) == BREAKDOWN_KEYS


def test_gpus_list_and_show_are_the_verbs_a_new_user_types(capsys: pytest.CaptureFixture[str]) -> None:
    """``anchorgpu gpus list`` answered "unknown GPU 'list'; did you mean 'l40s'?" (exit 3) and ``gpus show h100``
    "'gpus' takes at most one GPU name, got 2": both now do what they say, as ``gpus`` and ``gpus h100``."""
    assert run_json(capsys, "gpus", "list") == run_json(capsys, "gpus")
    assert run_json(capsys, "gpus", "show", "h100") == run_json(capsys, "gpus", "h100")
    err = cli_refusal(capsys, "gpus", "show", "h100", "h200")
    assert "gpus compare A B" in err, err
