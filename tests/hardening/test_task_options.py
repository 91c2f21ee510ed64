"""Options a task has no use for are refused in one line naming them, not dropped in silence; a serving launch is
the engine's own both ways; a recipe for the other kind of task is refused up front by ``recommend`` too; the CLI
takes any case of an enumerated value (the API, a schema, takes the lower-case spelling only).

Before: ``plan --train-precision fp8`` (an inference plan) and ``plan --task train --context 8k`` answered as if the
option had not been given; ``--engine vllm --recipe trtllm`` wrote trtllm-serve's launch with vLLM's memory share as
its ``free_gpu_memory_fraction`` while ``--engine trtllm --recipe vllm`` was refused; ``recommend --recipe deepspeed``
for serving returned every row with ``recipe_refused``; ``--engine VLLM`` was refused where ``--kv-cache FP8`` was not.
"""

from __future__ import annotations

import json

import pytest

from api_fields import as_api
from cli_runner import run
from hardening.conftest import Served, cli_refusal, problem_of

PLAN = ("plan", "llama-3.1-8b", "--gpu", "h100", "--json")
RECOMMEND = ("recommend", "llama-3.2-1b", "--top", "1", "--max-servers", "1", "--json")


TRAINING_ONLY = [("--train-precision", "fp8"), ("--train-stack", "pytorch"), ("--recompute", "full"),
                 ("--micro-batch", "2"), ("--seq", "4096"), ("--global-batch", "4M"), ("--optimizer", "sgd"),
                 ("--optimizer", "adamw"), ("--tokens", "1e9"), ("--optimizer-state", "fp32"), ("--tp-overlap", None)]
SERVING_ONLY = [("--context", "8k"), ("--concurrency", "4"), ("--prompt", "1000"), ("--output-tokens", "100"),
                ("--engine", "vllm"), ("--engine", "trtllm"), ("--max-num-seqs", "8"),
                ("--max-num-batched-tokens", "4096"), ("--gpu-memory-utilization", "0.8")]
# an option the CLI parses as a whole number is named as a refusal names every number given (units.fmt_given, as the
# API's are): with thousands separators; the others as typed
AS_WRITTEN = {("--max-num-batched-tokens", "4096"): "4,096"}


@pytest.mark.parametrize(("flag", "value"), TRAINING_ONLY)
def test_a_training_option_on_an_inference_plan_is_refused(local_db: None, capsys: pytest.CaptureFixture[str],
                                                           flag: str, value: str | None) -> None:
    given = (flag,) if value is None else (flag, value)
    err = cli_refusal(capsys, *PLAN, *given)
    assert f"{' '.join(given)} applies to training (task train, lora or qlora); task inference has no training step" in err


@pytest.mark.parametrize(("flag", "value"), SERVING_ONLY)
@pytest.mark.parametrize("task", ["train", "qlora"])
def test_a_serving_option_on_a_training_plan_is_refused(local_db: None, capsys: pytest.CaptureFixture[str],
                                                        flag: str, value: str, task: str) -> None:
    err = cli_refusal(capsys, *PLAN, "--task", task, flag, value)
    shown = AS_WRITTEN.get((flag, value), value)
    assert f"{flag} {shown} applies to serving a language model (task inference); task {task} serves no requests" in err


@pytest.mark.parametrize("task", ["inference", "train"])
def test_lora_options_outside_lora_are_refused(local_db: None, capsys: pytest.CaptureFixture[str], task: str) -> None:
    assert "--lora-rank 8 sets LoRA's adapters (task lora or qlora); task" in cli_refusal(
        capsys, *PLAN, "--task", task, "--lora-rank", "8")
    assert "--lora-targets q,v sets LoRA's adapters" in cli_refusal(capsys, *PLAN, "--task", task, "--lora-targets", "q,v")


def test_the_options_a_task_uses_still_plan_and_defaults_are_unchanged(local_db: None,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (("--task", "train", "--seq", "4096", "--micro-batch", "1", "--optimizer", "adamw",
                  "--train-precision", "mixed", "--recompute", "none", "--global-batch", "4M", "--tokens", "1e9"),
                 ("--task", "lora", "--lora-rank", "8", "--lora-targets", "q,v"),
                 ("--context", "8k", "--concurrency", "4", "--engine", "vllm", "--gpu-memory-utilization", "0.85",
                  "--max-num-seqs", "64", "--prompt", "1000", "--output-tokens", "100")):
        code, _, err = run(capsys, *PLAN, *argv)
        assert code == 0, f"{argv}: {err}"
    code, out, _ = run(capsys, *PLAN, "--task", "train")
    workload = json.loads(out)["workload"]
    assert (workload["optimizer"], workload["train_precision"], workload["optimizer_state"]) == ("adamw", "mixed", "fp32")
    code, out, _ = run(capsys, *PLAN)
    assert json.loads(out)["workload"]["gpu_memory_utilization"] == 0.9


def test_recommend_refuses_the_other_tasks_options(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert "--micro-batch 2 applies to training" in cli_refusal(capsys, *RECOMMEND, "--micro-batch", "2")
    assert "--tokens 1e9 applies to training" in cli_refusal(capsys, *RECOMMEND, "--tokens", "1e9")
    assert "--lower-precision applies to serving" in cli_refusal(capsys, *RECOMMEND, "--task", "train", "--lower-precision")
    assert "--min-tokens-per-s-per-user 5 applies to serving" in cli_refusal(capsys, *RECOMMEND, "--task", "train",
                                                                            "--min-tokens-per-s", "5")
    assert "--max-ttft-s 2 applies to serving" in cli_refusal(capsys, *RECOMMEND, "--task", "train", "--max-ttft-s", "2")
    assert "--output-tokens 64 applies to serving" in cli_refusal(capsys, *RECOMMEND, "--task", "lora", "--output-tokens", "64")


@pytest.mark.parametrize(("path", "body", "named"), [
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "train_precision": "fp8"}, "--train-precision fp8"),
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "optimizer": "adamw"}, "--optimizer adamw"),
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "lora_targets": ["q", "v"]}, "--lora-targets q,v"),
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "context": 8192}, "--context 8,192"),
    ("/v1/plan", {"model": "llama-3.1-8b", "gpu": "h100", "task": "train", "gpu_memory_utilization": 0.9},
     "--gpu-memory-utilization 0.9"),
    ("/v1/recommend", {"model": "llama-3.2-1b", "micro_batch": 1, "top": 1, "max_servers": 1}, "--micro-batch 1"),
    ("/v1/recommend", {"model": "llama-3.2-1b", "task": "train", "output_tokens": 256, "top": 1, "max_servers": 1},
     "--output-tokens 256"),
    ("/v1/recommend", {"model": "llama-3.2-1b", "task": "train", "engine": "vllm", "top": 1, "max_servers": 1},
     "--engine vllm"),
])
def test_the_api_refuses_the_other_tasks_options(sqlite_served: Served, path: str, body: dict[str, object],
                                                 named: str) -> None:
    response = sqlite_served.client.post(path, json=body)
    assert response.status_code == 422, response.text[:300]
    problem = problem_of(response)
    assert problem["code"] == "invalid_workload" and problem["detail"].startswith(as_api(named, path) + " ")


def test_a_null_is_not_given(sqlite_served: Served) -> None:
    body = {"model": "llama-3.1-8b", "gpu": "h100", "train_precision": None, "optimizer": None, "context": 4096}
    assert sqlite_served.client.post("/v1/plan", json=body).status_code == 200


def test_the_openapi_schema_says_the_defaults_of_the_fields_given_as_null() -> None:
    from anchorgpu.api.schemas import PlanRequest, RecommendRequest

    plan, recommend = PlanRequest.model_json_schema()["properties"], RecommendRequest.model_json_schema()["properties"]
    for props, name, default in ((plan, "optimizer", "default adamw"), (plan, "train_precision", "(the default)"),
                                 (plan, "gpu_memory_utilization", "default 0.9"), (plan, "lora_rank", "default 16"),
                                 (recommend, "micro_batch", "chosen per layout when not given"), (recommend, "output_tokens", "default 256")):
        assert props[name].get("default") is None and default in props[name]["description"], name


@pytest.mark.parametrize(("argv", "said"), [
    (("--engine", "vllm", "--recipe", "trtllm"), "--recipe trtllm: the plan is sized for vLLM (--engine vllm)"),
    (("--engine", "trtllm", "--recipe", "vllm"), "--recipe vllm: the plan is sized for TensorRT-LLM (--engine trtllm)"),
    (("--engine", "trtllm", "--recipe", "sglang"), "--recipe sglang: the plan is sized for TensorRT-LLM"),
])
def test_a_serving_launch_is_the_engines_own_both_ways(local_db: None, capsys: pytest.CaptureFixture[str],
                                                       sqlite_served: Served, argv: tuple[str, ...], said: str) -> None:
    assert said in cli_refusal(capsys, *PLAN, *argv)
    assert said in cli_refusal(capsys, *RECOMMEND, *argv)
    body = {"model": "llama-3.1-8b", "gpu": "h100", "engine": argv[1], "recipe": argv[3]}
    for path in ("/v1/plan", "/v1/recommend"):
        response = sqlite_served.client.post(path, json=body)
        assert response.status_code == 422 and as_api(said, path) in problem_of(response)["detail"], response.text[:300]


def test_without_an_engine_the_launch_sizes_the_plan(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *PLAN, "--recipe", "trtllm")
    assert code == 0, err
    assert json.loads(out)["workload"]["engine"] == "trtllm"


@pytest.mark.parametrize(("task", "recipe", "said"), [
    ("inference", "deepspeed", "--recipe deepspeed: a training recipe for an inference plan"),
    ("inference", "torchrun-fsdp", "--recipe torchrun-fsdp: a training recipe for an inference plan"),
    ("train", "vllm", "--recipe vllm: a serving engine for a train plan"),
    ("lora", "sglang", "--recipe sglang: a serving engine for a lora plan"),
])
def test_recommend_refuses_a_recipe_for_the_other_kind_of_task_up_front(
        local_db: None, capsys: pytest.CaptureFixture[str], sqlite_served: Served, task: str, recipe: str,
        said: str) -> None:
    assert said in cli_refusal(capsys, *RECOMMEND, "--task", task, "--recipe", recipe)
    assert said in cli_refusal(capsys, *PLAN, "--task", task, "--recipe", recipe)
    response = sqlite_served.client.post("/v1/recommend", json={"model": "llama-3.2-1b", "task": task, "recipe": recipe,
                                                                "top": 1, "max_servers": 1})
    assert response.status_code == 422 and as_api(said, "/v1/recommend") in problem_of(response)["detail"], response.text[:300]


@pytest.mark.parametrize("argv", [("--engine", "VLLM"), ("--engine", "TrtLlm"), ("--kv-cache", "FP8"),
                                  ("--recipe", "VLLM"), ("--task", "Inference")])
def test_the_cli_takes_any_case_of_a_serving_choice(local_db: None, capsys: pytest.CaptureFixture[str],
                                                   argv: tuple[str, ...]) -> None:
    code, out, err = run(capsys, *PLAN, *argv)
    assert code == 0, err
    if argv[0] == "--engine":
        assert json.loads(out)["workload"]["engine"] == argv[1].lower()


@pytest.mark.parametrize("argv", [("--task", "TRAIN", "--optimizer", "AdamW-8bit"), ("--task", "Train", "--train-precision", "FP8"),
                                  ("--task", "train", "--train-stack", "PyTorch", "--recompute", "Selective",
                                   "--cross-entropy", "TE", "--offload", "None"),
                                  ("--task", "train", "--optimizer-state", "BF16-Moments"),
                                  ("--task", "LoRA", "--lora-targets", "Q,V")])
def test_the_cli_takes_any_case_of_a_training_choice(local_db: None, capsys: pytest.CaptureFixture[str],
                                                    argv: tuple[str, ...]) -> None:
    code, _, err = run(capsys, *PLAN, *argv)
    assert code == 0, err
    code, _, err = run(capsys, *RECOMMEND, *(a for a in argv if a not in ("--lora-targets", "Q,V", "--offload", "None")))
    assert code == 0, err


def test_an_unknown_value_is_still_refused_as_typed_and_the_api_stays_strict(
        local_db: None, capsys: pytest.CaptureFixture[str], sqlite_served: Served) -> None:
    assert "--engine 'sgl'" in cli_refusal(capsys, *PLAN, "--engine", "SGL")  # SGLang is an engine now (sglang merge)
    assert run(capsys, *PLAN, "--engine", "SGLang")[0] == 0  # and any case of it plans
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "engine": "VLLM"})
    assert response.status_code == 422


def test_the_planner_pages_default_forms_still_plan_every_task(sqlite_served: Served) -> None:
    """The forms send every select (optimizer=adamw, train_precision=mixed, optimizer_state=fp32, and the engine's
    blank default): the page drops the other task's at their defaults, and refuses one the user changed, as the API
    does."""
    client = sqlite_served.client
    form = {"gpu": "h100", "optimizer": "adamw", "train_precision": "mixed", "optimizer_state": "fp32",
            "engine": "", "offload": "none", "zero": "", "context": "", "micro_batch": ""}
    for task in ("inference", "train", "lora", "qlora"):
        page = client.get("/plan", params={**form, "model": "llama-3.2-1b", "task": task})
        assert page.status_code == 200, (task, page.text[-600:])
        rec = client.get("/recommend", params={**form, "model": "llama-3.2-1b", "task": task, "top": "1",
                                               "max_servers": "1", "gpu": ""})
        assert rec.status_code == 200, (task, rec.text[-600:])
    page = client.get("/plan", params={**form, "model": "flux.1-dev", "task": "diffusion"})
    assert page.status_code == 200
    refused = client.get("/plan", params={**form, "model": "llama-3.2-1b", "task": "inference", "micro_batch": "2"})
    assert refused.status_code == 422 and "“Micro-batch” 2 applies to training" in refused.text  # the form's label


def test_the_pages_engine_is_left_to_the_launch(sqlite_served: Served) -> None:
    """The engine select defaults to blank: the page's TensorRT-LLM launch link sizes its plan for TensorRT-LLM."""
    client = sqlite_served.client
    page = client.get("/plan", params={"model": "llama-3.2-1b", "gpu": "h100", "engine": "", "recipe": "trtllm"})
    assert page.status_code == 200 and "trtllm-serve" in page.text
    picked = client.get("/plan", params={"model": "llama-3.2-1b", "gpu": "h100", "engine": "vllm", "recipe": "trtllm"})
    assert picked.status_code == 200 and "sized for vLLM (engine vllm)" in picked.text  # the form's field


@pytest.mark.parametrize(("argv", "said"), [
    (("plan", "sdxl-base-1.0", "--gpu", "h100", "--context", "4096"), "--context 4096 applies to serving"),
    (("plan", "sdxl-base-1.0", "--gpu", "h100", "--concurrency", "4"), "--concurrency 4 applies to serving"),
    (("recommend", "sdxl-base-1.0", "--top", "1", "--context", "4096"), "--context 4096 applies to serving"),
    (("recommend", "sdxl-base-1.0", "--top", "1", "--min-tokens-per-s", "5"), "--min-tokens-per-s-per-user 5"),
])
def test_a_diffusion_pipeline_with_the_default_task_refuses_serving_options(
        local_db: None, capsys: pytest.CaptureFixture[str], sqlite_served: Served, argv: tuple[str, ...], said: str) -> None:
    """A diffusion pipeline asked for without --task is planned as task diffusion (plan says so), so a serving option
    has no use there and is refused as it is with --task diffusion; it was dropped in silence."""
    err = cli_refusal(capsys, *argv, "--json")
    assert said in err and "task diffusion" in err
    body: dict[str, object] = {"model": "sdxl-base-1.0", "context": 4096}
    for path in ("/v1/plan", "/v1/recommend"):
        response = sqlite_served.client.post(path, json=body)
        assert response.status_code == 422 and "task diffusion" in problem_of(response)["detail"], response.text[:300]
    assert sqlite_served.client.post("/v1/plan", json={"model": "sdxl-base-1.0", "gpu": "h100"}).status_code == 200
