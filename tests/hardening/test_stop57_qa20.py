"""Stop 57's QA of the training answers, plan against recommend (benchmarks/hardening/stop57_qa20.md, "qa20").

1. The tokens to train on are ``tokens`` in ``POST /v1/plan`` and ``train_tokens`` in ``POST /v1/recommend`` (both the
   CLI's ``--tokens``; ``api.words._RENAMED_FLAGS``). A client that sent one route's name to the other got only
   "body.train_tokens: Extra inputs are not permitted"; the refusal now names the field the route has, and a field
   misspelt close to one (``gpuz``) the field meant.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from cli_runner import run_json
from hardening.conftest import problem_of

_8B_TRAIN: dict[str, Any] = {"model": "llama-3.1-8b", "task": "train"}


def test_the_other_routes_name_for_the_training_tokens_is_answered_with_this_routes(client: TestClient) -> None:
    plan = client.post("/v1/plan", json={**_8B_TRAIN, "gpu": "h100", "gpus": 8, "train_tokens": 10**10})
    assert plan.status_code == 422
    assert problem_of(plan)["detail"] == (
        "body.train_tokens: Extra inputs are not permitted; this route names it 'tokens'")
    rec = client.post("/v1/recommend", json={**_8B_TRAIN, "tokens": 10**10})
    assert rec.status_code == 422
    assert problem_of(rec)["errors"] == [{"field": "body.tokens", "message":
                                          "Extra inputs are not permitted; this route names it 'train_tokens'"}]
    # the names each route has are taken (controls): the same run, timed alike by both
    timed = client.post("/v1/plan", json={**_8B_TRAIN, "gpu": "h100", "gpus": 8, "tokens": 10**10})
    assert timed.status_code == 200 and timed.json()["performance"]["train_time_s"] > 0


def test_a_misspelt_field_names_the_field_meant_and_an_unknown_one_nothing_more(client: TestClient) -> None:
    typo = client.post("/v1/plan", json={**_8B_TRAIN, "gpuz": "h100"})
    assert problem_of(typo)["detail"] == "body.gpuz: Extra inputs are not permitted; did you mean 'gpu'?"
    unknown = client.post("/v1/plan", json={**_8B_TRAIN, "colour": "red"})
    assert problem_of(unknown)["detail"] == "body.colour: Extra inputs are not permitted"


def test_recommend_breaks_a_speed_tie_toward_data_parallelism_as_plan_chooses(
        capsys: pytest.CaptureFixture[str]) -> None:
    """2. Llama 3.1 8B at 131,072 tokens on one server of 8 MI355X: CP 4 x DP 2 and CP 8 x DP 1 are predicted at the
    same speed (ring attention hidden behind attention, the same work a GPU). ``plan`` chose CP 4 x DP 2; recommend's
    row for the same offering and count was CP 8 x DP 1 (its tie went to the lesser memory), so the two faces showed
    two layouts for one question. The tie now goes to the more data-parallel ranks first, on every such row."""
    argv = ("llama-3.1-8b", "--task", "train", "--seq", "131072", "--tokens", "1e10", "--gpu", "mi355x")
    rows = run_json(capsys, "recommend", *argv, "--top", "3")["results"]
    one_server = next(r for r in rows if r["gpus"] == 8)
    chosen = run_json(capsys, "plan", *argv, "--gpus", "8")
    assert (one_server["layout"]["cp"], one_server["layout"]["dp"]) == (4, 2)
    assert (chosen["layout"]["cp"], chosen["layout"]["dp"]) == (4, 2)
    assert one_server["train_tokens_per_s"] == pytest.approx(chosen["performance"]["train_tokens_per_s"], abs=0.1)
