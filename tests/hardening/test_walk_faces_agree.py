"""What a second adversarial walk found where the CLI and the API accepted or refused different things, or refused
in the wrong words (each test failed before its fix):

* ``--output-tokens 1e3`` (and ``--max-num-batched-tokens 8k``) was click's "not a valid integer" while ``--prompt``
  and ``--context`` take ``1e3`` and ``8k``, and the page reads all of them as token counts;
* ``"zero": 1.0`` passed the API's schema (a ``Literal`` matches by equality) while ``"context": 1000.0`` is refused;
* ``"gpu": ""`` in POST /v1/recommend and /v1/plan was read as no GPU while the CLI refuses ``--gpu ''``;
* ``anchorgpu book ''`` printed a new idempotency key before its refusal, and ``--idempotency-key ''`` was replaced
  by a new key without a word;
* a NaN ``gpu_memory_utilization`` (or ``mfu``, ``fragmentation``) in the API was "should be less than or equal to 1".
"""

from __future__ import annotations

from typing import Any

import pytest

from cli_runner import run, run_json
from hardening.conftest import Served, cli_refusal, problem_of


@pytest.mark.parametrize("command", ["plan", "recommend"])
def test_output_tokens_are_read_as_prompt_tokens_are(local_db: None, capsys: pytest.CaptureFixture[str], command: str) -> None:
    base = (("plan", "llama-3.1-8b", "--gpu", "h100") if command == "plan" else ("recommend", "llama-3.1-8b", "--top", "1"))
    plain = run_json(capsys, *base, "--prompt", "1000", "--output-tokens", "1000")
    spelled = run_json(capsys, *base, "--prompt", "1e3", "--output-tokens", "1e3")
    assert plain == spelled
    binary = run_json(capsys, *base, "--prompt", "1k", "--output-tokens", "1k")
    assert binary == run_json(capsys, *base, "--prompt", "1024", "--output-tokens", "1024")
    for bad, reason in (("1.5", "expected a token count"), ("nan", "expected a token count"), ("0", "from 1 to"),
                        ("1e8", "from 1 to 10,000,000")):
        assert reason in cli_refusal(capsys, *base, "--output-tokens", bad)


def test_the_engines_prefill_budget_is_a_token_count_too(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    base = ("plan", "llama-3.1-8b", "--gpu", "h100")
    assert (run_json(capsys, *base, "--max-num-batched-tokens", "8k")
            == run_json(capsys, *base, "--max-num-batched-tokens", "8192"))


def test_servers_stay_plain_integers(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    """Servers to book are counted one by one: 1e3 is refused in one line, as the API's strict int is. (Requests at
    once, ``--concurrency`` and ``--max-num-seqs``, are read as ``--tokens`` is since stop 57 qa21: ``1k``, ``1e3``;
    tests/hardening/test_stop57_qa21.py.)"""
    code, _, err = run(capsys, "quote", "h100-sxm-1x-vm", "--term", "1w", "--quantity", "1e3")
    assert code == 2 and "not a valid integer" in err


@pytest.mark.parametrize("body", [{"zero": 1.0}, {"zero": 1.5}, {"context": 1000.0}, {"tp": 1.0}])
def test_the_api_refuses_a_float_in_every_integral_field(sqlite_served: Served, body: dict[str, Any]) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train", **body})
    detail = problem_of(response)["detail"]
    assert response.status_code == 422 and f"body.{next(iter(body))}: Input should be a valid integer" in detail


def test_the_api_still_takes_a_whole_zero_stage(sqlite_served: Served) -> None:
    response = sqlite_served.client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "task": "train",
                                                           "gpus": 8, "zero": 1})
    assert response.status_code == 200 and response.json()["layout"]["zero"] == 1


@pytest.mark.parametrize("path", ["/v1/recommend", "/v1/plan"])
@pytest.mark.parametrize("gpu", ["", " "])
def test_the_api_refuses_a_blank_gpu_as_the_cli_does(sqlite_served: Served, local_db: None,
                                                     capsys: pytest.CaptureFixture[str], path: str, gpu: str) -> None:
    response = sqlite_served.client.post(path, json={"model": "llama-3.1-8b", "gpu": gpu, "top": 1}
                                         if path == "/v1/recommend" else {"model": "llama-3.1-8b", "gpu": gpu})
    assert response.status_code == 422 and "the name is empty" in problem_of(response)["detail"]
    assert "the name is empty" in cli_refusal(capsys, path.rsplit("/", 1)[1], "llama-3.1-8b", "--gpu", gpu)


def test_the_page_still_takes_an_empty_gpu_field_as_no_filter(sqlite_served: Served) -> None:
    page = sqlite_served.client.get("/recommend?model=llama-3.1-8b&gpu=&top=1&lang=en")
    assert page.status_code == 200 and 'id="rec-1"' in page.text


@pytest.mark.parametrize("argv", [("book", ""), ("book", " "), ("stop", ""), ("terminate", " "),
                                  ("extend", "", "--term", "1w")])
def test_a_blank_id_is_refused_first_and_alone(local_db: None, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    err = cli_refusal(capsys, *argv)  # one line: no idempotency key printed before it
    assert "the id is empty" in err and "idempotency key" not in err


def test_an_empty_idempotency_key_is_refused_not_replaced(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    err = cli_refusal(capsys, "book", "q_0123abcd", "--idempotency-key", "")
    assert "--idempotency-key '': expected 1-255 printable ASCII characters" in err


@pytest.mark.parametrize(("path", "field"), [("/v1/plan", "gpu_memory_utilization"), ("/v1/recommend", "gpu_memory_utilization"),
                                             ("/v1/plan", "mfu"), ("/v1/recommend", "mbu"), ("/v1/plan", "fragmentation")])
@pytest.mark.parametrize("value", ["NaN", "Infinity"])
def test_the_api_says_a_nan_fraction_is_not_a_finite_number(sqlite_served: Served, path: str, field: str, value: str) -> None:
    body = f'{{"model": "llama-3.1-8b", "{field}": {value}}}'
    response = sqlite_served.client.post(path, content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert f"body.{field}: Input should be a finite number" in problem_of(response)["detail"]


def test_the_cli_says_a_nan_memory_share_is_not_a_finite_number(local_db: None, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (("plan", "llama-3.1-8b", "--gpu", "h100"), ("recommend", "llama-3.1-8b", "--top", "1")):
        err = cli_refusal(capsys, *command, "--gpu-memory-utilization", "nan")
        assert "--gpu-memory-utilization nan: expected a finite number above 0 and at most 1" in err
