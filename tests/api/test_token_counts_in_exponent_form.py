"""The token counts (``tokens`` on plan, ``train_tokens`` on recommend, ``global_batch`` on both) take a JSON number
that is an exact integer, as ``1e10`` is (JSON has one number type; the OpenAPI document calls them ``integer``, which
in JSON Schema is any number with a zero fractional part), the same answer as ``10000000000``; a fraction is a
one-line 422 that says how to write the count. Stop 54, branch qa12 (qa10 and qa11 left it: ``"tokens": 1e10``
answered "Input should be a valid integer", while ``--tokens 1e10`` and the page took it)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

TRAIN = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8}


def _raw(client: TestClient, path: str, body: str) -> tuple[int, dict]:
    """POST a body as written (``json=`` would rewrite 1e10 as 10000000000.0)."""
    response = client.post(path, content=body, headers={"Content-Type": "application/json"})
    return response.status_code, response.json()


def test_plan_tokens_and_global_batch_in_exponent_form_are_the_integers(client: TestClient) -> None:
    base = '{"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, '
    code, written = _raw(client, "/v1/plan", base + '"tokens": 1e10, "global_batch": 4.194304e6}')
    assert code == 200, written
    plain = client.post("/v1/plan", json={**TRAIN, "tokens": 10**10, "global_batch": 4194304}).json()
    assert written["performance"]["train_time_s"] == plain["performance"]["train_time_s"]
    assert written["workload"] == plain["workload"]


def test_recommend_train_tokens_in_exponent_form_is_the_integer(client: TestClient) -> None:
    code, written = _raw(client, "/v1/recommend",
                         '{"model": "llama-3.1-8b", "task": "train", "top": 1, "train_tokens": 1e10}')
    assert code == 200, written
    plain = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "top": 1,
                                               "train_tokens": 10**10}).json()
    assert written["results"][0]["run_hours"] == plain["results"][0]["run_hours"]


@pytest.mark.parametrize(("path", "field", "value"), [
    ("/v1/plan", "tokens", "10000000000.5"),
    ("/v1/plan", "global_batch", "4194304.5"),
    ("/v1/recommend", "train_tokens", "2.5"),
])
def test_a_fraction_is_one_line_saying_how_to_write_the_count(client: TestClient, path: str, field: str,
                                                              value: str) -> None:
    layout = ', "gpu": "h100", "gpus": 8' if path == "/v1/plan" else ""
    body = f'{{"model": "llama-3.1-8b", "task": "train"{layout}, "{field}": {value}}}'
    code, problem = _raw(client, path, body)
    assert code == 422 and problem["code"] == "invalid_request", problem
    assert "\n" not in problem["detail"] and field in problem["detail"], problem
    # what the number is, as the CLI and the page say it (stop56_qa17 item 1), and how to write a count
    assert f"{float(value):,} is not a whole number of tokens" in problem["detail"], problem
    assert "e.g. 4194304 or 1e10" in problem["detail"], problem


def test_other_integer_fields_stay_strict(client: TestClient) -> None:
    code, problem = _raw(client, "/v1/plan", '{"model": "llama-3.1-8b", "gpu": "h100", "context": 1000.0}')
    assert code == 422 and "context" in problem["detail"], problem
