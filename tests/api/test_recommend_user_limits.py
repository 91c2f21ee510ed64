"""``POST /v1/recommend`` takes the per-user limits ``anchorgpu recommend`` takes (``min_tokens_per_s_per_user``,
``max_ttft_s``; recommend.limits), answers as the CLI does with them, says in ``limits`` what they dropped, and
refuses a bad value or a training task with a 422 problem+json naming the field (a floor of 0 was accepted and
applied nothing; there was no TTFT limit)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_fields import as_api
from cli_runner import run

SMALL = {"model": "llama-3.1-8b", "gpu": "h100", "top": 3, "max_servers": 1}
CLI_SMALL = ("recommend", "llama-3.1-8b", "--gpu", "h100", "--top", "3", "--max-servers", "1", "--json")


def test_the_limits_answer_as_the_cli_and_say_what_they_dropped(client: TestClient, capsys: Any) -> None:
    response = client.post("/v1/recommend", json={**SMALL, "min_tokens_per_s_per_user": 60, "max_ttft_s": 1.5})
    assert response.status_code == 200, response.text[:400]
    body = response.json()
    code, out, err = run(capsys, *CLI_SMALL, "--min-tokens-per-s-per-user", "60", "--max-ttft-s", "1.5")
    assert code == 0, err
    cli = json.loads(out)
    assert body["results"] and body["results"] == cli["results"]
    assert body["limits"] == cli["limits"]
    assert body["limits"]["min_tokens_per_s_per_user"] == 60 and body["limits"]["max_ttft_s"] == 1.5
    assert set(body["limits"]["dropped"]) == {"min_tokens_per_s_per_user", "max_ttft_s"}
    for row in body["results"]:
        assert row["decode_tokens_per_s_per_user"] >= 60 and row["ttft_s"] <= 1.5


@pytest.mark.parametrize(("name", "value"), [
    ("min_tokens_per_s_per_user", 0), ("min_tokens_per_s_per_user", -5), ("min_tokens_per_s_per_user", "fast"),
    ("min_tokens_per_s_per_user", True), ("min_tokens_per_s_per_user", 1e9),
    ("max_ttft_s", 0), ("max_ttft_s", -1), ("max_ttft_s", "2s"), ("max_ttft_s", 1e6),
])
def test_a_bad_limit_is_a_422_naming_the_field(client: TestClient, problem: Any, name: str, value: Any) -> None:
    response = client.post("/v1/recommend", json={**SMALL, name: value})
    assert response.status_code == 422, response.text[:300]
    assert problem(response)["detail"].startswith(f"body.{name}:"), response.text[:300]


@pytest.mark.parametrize(("fields", "named"), [
    ({"min_tokens_per_s_per_user": 20}, "--min-tokens-per-s-per-user 20 applies to serving"),
    ({"max_ttft_s": 2}, "--max-ttft-s 2 applies to serving"),
])
def test_a_training_task_refuses_the_limits(client: TestClient, problem: Any, fields: dict[str, Any],
                                            named: str) -> None:
    response = client.post("/v1/recommend", json={**SMALL, "task": "train", **fields})
    assert response.status_code == 422
    body = problem(response)
    assert body["code"] == "invalid_workload" and body["detail"].startswith(as_api(named, "/v1/recommend")), body["detail"]
