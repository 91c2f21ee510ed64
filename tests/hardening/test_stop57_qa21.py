"""Stop 57's qa21: the small wrong answers earlier QA rounds left (benchmarks/hardening/stop57_qa21.md).

5. The NVFP4-on-AMD refusal (stop57_qa19.md, Left 6) said ``--engine vllm`` where nobody typed ``--engine``: plan,
   recommend and ``gpus compare`` chose vLLM by default. The workload carries how its engine was chosen
   (``engine_source``); the refusal now says "the default engine (vLLM)" then, and ``--engine vllm`` only where typed.
3. ``--task serve`` (``serving``) and ``--task training`` were refused as unknown tasks with no pointer to the one
   meant. DESIGN.md's CLI contract keeps one spelling per task (``workload.task`` is ``inference`` in every answer,
   and ``anchorgpu serve`` is the command that starts the API), so a synonym is not taken: it is refused naming the
   task meant ("did you mean 'inference'?"), on plan, recommend, ``gpus compare`` and the API.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run
from hardening.conftest import cli_refusal

_R1_MI355X = ("plan", "deepseek-r1-0528-fp4", "--gpu", "mi355x", "--concurrency", "8")


def test_the_nvfp4_on_amd_refusal_names_the_default_engine_when_none_was_typed(
        capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, *_R1_MI355X)
    assert err.startswith("error: the default engine (vLLM) with nvfp4 weights on mi355x:"), err
    assert "--engine" not in err.split(";")[0], err
    typed = cli_refusal(capsys, *_R1_MI355X, "--engine", "vllm")
    assert typed.startswith("error: --engine vllm with nvfp4 weights on mi355x:"), typed  # control: typed, named as typed


def test_compare_and_recommend_which_take_no_engine_say_the_default_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "gpus", "compare", "mi355x", "b200", "--model", "deepseek-r1-0528-fp4")
    assert code == 0 and "refused: the default engine (vLLM) with nvfp4" in " ".join(out.split()), err
    code, _, err = run(capsys, "recommend", "deepseek-r1-0528-fp4", "--concurrency", "8", "--gpu", "mi355x")
    assert code == 2 and "the default engine (vLLM) with nvfp4 weights" in err and "--engine vllm" not in err, err


def test_the_api_says_the_default_engine_too(client: TestClient) -> None:
    body = {"model": "deepseek-r1-0528-fp4", "gpu": "mi355x", "concurrency": 8}
    r = client.post("/v1/plan", json=body)
    assert r.status_code == 422 and r.json()["detail"].startswith("the default engine (vLLM) with nvfp4"), r.text
    r = client.post("/v1/plan", json={**body, "engine": "vllm"})
    assert r.status_code == 422 and r.json()["detail"].startswith("engine vllm with nvfp4"), r.text


@pytest.mark.parametrize(("argv", "meant"), [
    (("recommend", "llama-3.1-8b", "--task", "serve"), "inference"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--task", "serving"), "inference"),
    (("plan", "llama-3.1-8b", "--gpu", "h100", "--task", "training"), "train"),
    (("gpus", "compare", "h100", "h200", "--model", "llama-3.1-8b", "--task", "serve"), "inference"),
])
def test_a_synonym_of_a_task_is_refused_naming_the_task_meant(capsys: pytest.CaptureFixture[str],
                                                              argv: tuple[str, ...], meant: str) -> None:
    err = cli_refusal(capsys, *argv)
    assert f"did you mean {meant!r}?" in err, err


def test_an_unrelated_task_word_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "plan", "llama-3.1-8b", "--gpu", "h100", "--task", "cook")
    assert "did you mean" not in err and "valid: inference, train" in err, err


@pytest.mark.parametrize("route", ["/v1/plan", "/v1/recommend"])
def test_the_api_names_the_task_meant(client: TestClient, route: str) -> None:
    r = client.post(route, json={"model": "llama-3.1-8b", "task": "serve"})
    assert r.status_code == 422 and r.json()["detail"].endswith("did you mean 'inference'?"), r.text
