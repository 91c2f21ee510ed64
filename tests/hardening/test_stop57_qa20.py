"""Stop 57's QA of the training answers, plan against recommend (benchmarks/hardening/stop57_qa20.md, "qa20").

1. The tokens to train on are ``tokens`` in ``POST /v1/plan`` and ``train_tokens`` in ``POST /v1/recommend`` (both the
   CLI's ``--tokens``; ``api.words._RENAMED_FLAGS``). A client that sent one route's name to the other got only
   "body.train_tokens: Extra inputs are not permitted"; the refusal now names the field the route has, and a field
   misspelt close to one (``gpuz``) the field meant.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

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
