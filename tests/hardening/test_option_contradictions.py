"""The adversarial pass over the options of the last two stops (the NVFP4 KV cache and the engine, the training
stack's loss, optimizer state and sequence parallelism): contradicting options are refused in one line naming the
value, on every face, instead of being planned as something else or silently dropped.

* a KV-cache dtype asked for a task that keeps no KV cache (train, lora, qlora, diffusion) was planned with the
  NVFP4/FP8 cache's kernel and quality warnings on a training plan, and dropped by ``recommend``;
* ``--kv-cache ''`` was taken as the default;
* ``--zero 0|1|2 --fsdp`` was planned as ZeRO-3 while the plan said "kept as given: --zero", and the planner page
  sent ``zero=0`` with every form, which pinned the layout the other faces choose;
* ``recommend --engine trtllm --task train`` was refused for the catalog's AMD GPUs, not for the task.
"""

from __future__ import annotations

import html
import re

import pytest

from cli_runner import run
from hardening.conftest import Served, cli_refusal, problem_of


@pytest.mark.parametrize(("kv", "task"), [("nvfp4", "train"), ("fp8", "train"), ("bf16", "lora"), ("fp8", "qlora"),
                                          ("NVFP4", "train")])
def test_a_kv_cache_for_a_task_without_one_is_refused_on_the_cli(local_db: None, capsys: pytest.CaptureFixture[str],
                                                                  kv: str, task: str) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", task, "--kv-cache", kv, "--json")
    assert f"--kv-cache {kv.lower()}" in err and f"task {task} keeps none" in err


def test_a_quantized_kv_cache_for_a_diffusion_pipeline_is_refused(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "flux.1-dev", "--gpu", "h100", "--kv-cache", "fp8")
    assert "--kv-cache fp8" in err and "task diffusion keeps none" in err
    err = cli_refusal(capsys, "recommend", "flux.1-dev", "--top", "1", "--max-servers", "1", "--kv-cache", "fp8")
    assert "task diffusion keeps none" in err


def test_the_planner_itself_refuses_a_quantized_kv_cache_for_training() -> None:
    """Library callers of plan() too: the NVFP4 cache's warnings on a training plan were the silent wrong answer."""
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.hardware import get_gpu
    from anchorgpu.planner import PrecisionPlan, Workload, plan
    from anchorgpu.planner._examples import llama_3_1_8b

    with pytest.raises(InvalidWorkload, match="--kv-cache nvfp4 .* task train keeps none"):
        plan(llama_3_1_8b(), Workload(task="train"), precision=PrecisionPlan(kv_cache="nvfp4"), gpu=get_gpu("h100"))


def test_the_default_kv_cache_still_plans_training(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("--kv-cache", "auto"), ()):
        code, _, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", *argv, "--json")
        assert code == 0, err


def test_an_empty_kv_cache_is_an_unknown_dtype_not_the_default(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--kv-cache", "")
    assert "unknown kv-cache dtype ''" in err


def test_recommend_refuses_a_kv_cache_for_training_instead_of_dropping_it(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "recommend", "llama-3.2-1b", "--top", "1", "--max-servers", "1", "--task", "train",
                   "--kv-cache", "fp8")
    assert "--kv-cache fp8" in err and "task train keeps none" in err


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "kv_cache": "nvfp4"}),
    ("/v1/plan", {"model": "llama-3.1-8b", "task": "lora", "kv_cache": "bf16"}),
    ("/v1/recommend", {"model": "llama-3.2-1b", "task": "train", "kv_cache": "fp8", "top": 1, "max_servers": 1}),
    ("/v1/recommend", {"model": "flux.1-dev", "kv_cache": "fp8", "top": 1, "max_servers": 1}),
])
def test_the_api_refuses_a_kv_cache_for_a_task_without_one(sqlite_served: Served, path: str, body: dict[str, object]) -> None:
    response = sqlite_served.client.post(path, json=body)
    assert response.status_code == 422, response.text[:300]
    problem = problem_of(response)
    assert problem["code"] == "invalid_workload" and f"kv_cache {body['kv_cache']}" in problem["detail"]


@pytest.mark.parametrize("zero", ["0", "1", "2"])
def test_a_zero_stage_other_than_3_with_fsdp_is_refused(local_db: None, capsys: pytest.CaptureFixture[str], zero: str) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--zero", zero, "--fsdp", "--json")
    assert f"--zero {zero} with --fsdp" in err
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--task", "train", "--zero", zero, "--fsdp", "--gpus", "2")  # no GPU
    assert f"--zero {zero} with --fsdp" in err


def test_zero_3_with_fsdp_is_the_same_thing_and_plans(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "train", "--zero", "3", "--fsdp", "--json")
    assert code == 0, err
    assert '"zero": 3' in out and '"fsdp": true' in out


def test_the_api_and_the_page_refuse_zero_1_with_fsdp(sqlite_served: Served) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "zero": 1, "fsdp": True}
    response = sqlite_served.client.post("/v1/plan", json=body)
    assert response.status_code == 422, response.text[:300]
    assert "zero 1 with fsdp" in problem_of(response)["detail"]  # the API names its fields
    page = sqlite_served.client.get("/plan", params={**body, "zero": "1", "fsdp": "on"})
    assert page.status_code == 422 and "“ZeRO stage” 1 with “FSDP full shard”" in html.unescape(page.text)  # its labels


def test_the_planner_form_leaves_zero_to_the_layout_choice(sqlite_served: Served) -> None:
    """The form's ZeRO select defaulted to 0, so every submitted training form pinned ZeRO 0 (and with it TP, PP and
    CP 1): the page planned one GPU that does not fit where the CLI and the API choose two that do."""
    client = sqlite_served.client
    form = client.get("/plan").text
    select = re.search(r'<select name="zero"[^>]*>(.*?)</select>', form, re.S)
    assert select is not None
    selected = re.findall(r'<option value="([^"]*)" selected', select.group(1))
    assert selected == [""], selected
    # what a browser sends with the select left as it is: an empty zero, dropped like every blank field
    page = client.get("/plan", params={"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "zero": "",
                                        "optimizer": "adamw", "train_precision": "mixed", "engine": ""})
    api = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train"}).json()
    assert page.status_code == 200
    chosen = next(a for a in api["assumptions"] if a.startswith("Layout chosen"))
    assert chosen.split(" - ")[0] in page.text


def test_recommend_refuses_trtllm_for_training_for_the_task_not_for_amd_gpus(local_db: None, capsys: pytest.CaptureFixture[str],
                                                                             sqlite_served: Served) -> None:
    err = cli_refusal(capsys, "recommend", "llama-3.2-1b", "--top", "1", "--max-servers", "1", "--engine", "trtllm",
                   "--task", "train")
    assert "--engine trtllm applies to serving" in err and "task train serves no requests" in err and "mi300x" not in err
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.2-1b", "engine": "trtllm", "task": "train",
                                                                "top": 1, "max_servers": 1})
    assert response.status_code == 422
    detail = problem_of(response)["detail"]
    assert "task train serves no requests" in detail and "mi300x" not in detail


@pytest.mark.parametrize("task", ["inference", "diffusion"])
def test_zero_0_for_a_task_without_training_state_is_refused_as_the_other_stages_are(task: str) -> None:
    # `--zero 0` was dropped in silence where `--zero 1` is refused (a truth test on the stage)
    from anchorgpu.architectures import load_model
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner import Layout, Workload, plan

    model = load_model("llama-3.1-8b" if task == "inference" else "sdxl-base-1.0", offline=True)
    with pytest.raises(InvalidWorkload, match="--zero and --fsdp shard training state"):
        plan(model, Workload(task=task), layout=Layout(zero=0))


def test_images_per_request_0_for_training_is_refused_as_any_other_count() -> None:
    # `--images-per-request 0` was dropped in silence on a training plan (a truth test on the count)
    from anchorgpu.architectures import load_model
    from anchorgpu.errors import InvalidWorkload
    from anchorgpu.planner import Workload, plan

    with pytest.raises(InvalidWorkload, match="--images-per-request/--image-resolution size serving requests"):
        plan(load_model("qwen2.5-vl-7b", offline=True), Workload(task="train", images_per_request=0))
