"""Stop 58's qa22: a new user's adversarial pass over plan, recommend, the API and the page
(benchmarks/hardening/stop58_qa22.md).

1. A serving plan of one output token a request among several users gave the time to first token of the request's
   own prompt chunks (``plan llama-3.1-8b --gpu h100 --gpus 1 --prompt 1000 --output-tokens 1 --concurrency 64``:
   TTFT 0.028 s) beside an output of 49 tok/s: 64 requests ending every 0.028 s would be 2,285 tok/s. By Little's
   law a request of ``O`` tokens takes ``O`` mean steps, and with ``O = 1`` all of it comes before the first (and
   only) token: TTFT is the step, 1.31 s (the ``O > 1`` guard skipped the rule, in plan and in recommend's sweep).
2. The page answered ``task=serve`` with the choices only, where the CLI and the API add "did you mean 'inference'?"
   (stop57_qa21.md item 3): the page's error line now says it too, in its language.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run_json
from hardening.conftest import page_error

_ONE_TOKEN = ("--gpu", "h100", "--prompt", "1000", "--output-tokens", "1", "--concurrency", "64")


@pytest.mark.parametrize(("model", "gpus"), [("llama-3.1-8b", "1"), ("llama-3.1-8b", "2"), ("qwen3-30b-a3b", "1")])
def test_one_token_requests_end_at_their_first_token(capsys: pytest.CaptureFixture[str], model: str,
                                                     gpus: str) -> None:
    """Property: with one output token a request, C users in a closed loop emit C tokens every TTFT."""
    perf = run_json(capsys, "plan", model, *_ONE_TOKEN, "--gpus", gpus)["performance"]
    assert perf["output_tokens"] == 1
    assert 64 / perf["ttft_s"] == pytest.approx(perf["output_tokens_per_s"], rel=0.02), perf
    assert perf["ttft_s_ceiling"] <= perf["ttft_s_low"] <= perf["ttft_s"] <= perf["ttft_s_high"]


def test_one_token_ttft_runs_on_from_two_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    """Property: one token fewer a request cannot cut the wait before the first token to a fortieth."""
    one = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN, "--gpus", "1")["performance"]["ttft_s"]
    two = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN[:-3], "2", "--concurrency", "64",
                   "--gpus", "1")["performance"]["ttft_s"]
    assert two / 2 < one < two * 2, (one, two)


def test_recommend_times_one_token_requests_as_plan(capsys: pytest.CaptureFixture[str]) -> None:
    rows = run_json(capsys, "recommend", "llama-3.1-8b", *_ONE_TOKEN)["results"]
    row = next(r for r in rows if r["gpus"] == 1)
    plan = run_json(capsys, "plan", "llama-3.1-8b", *_ONE_TOKEN, "--gpus", "1")["performance"]
    assert row["ttft_s"] == pytest.approx(plan["ttft_s"], rel=1e-3)
    assert 64 / row["ttft_s"] == pytest.approx(row["output_tokens_per_s"], rel=0.02)


@pytest.mark.parametrize(("path", "typed", "meant"), [("/plan", "serve", "inference"), ("/recommend", "serve", "inference"),
                                                       ("/plan", "Training", "train")])
def test_the_page_says_which_task_a_synonym_means(client: TestClient, path: str, typed: str, meant: str) -> None:
    """The CLI and the API answer ``task=serve`` with "did you mean 'inference'?" (planner.inputs.task_hint); the
    page's error line said only the choices."""
    page = client.get(f"{path}?model=llama-3.1-8b&gpu=h100&task={typed}&lang=en")
    assert page.status_code == 422
    assert page_error(page.text).endswith(f"; did you mean '{meant}'?"), page_error(page.text)
    ru = page_error(client.get(f"{path}?model=llama-3.1-8b&gpu=h100&task={typed}&lang=ru").text)
    assert ru.endswith(f"; возможно, имелось в виду '{meant}'?"), ru


def test_an_unknown_task_that_is_no_synonym_gets_no_guess(client: TestClient) -> None:
    said = page_error(client.get("/plan?model=llama-3.1-8b&gpu=h100&task=cook&lang=en").text)
    assert "must be one of" in said and "did you mean" not in said, said  # control
