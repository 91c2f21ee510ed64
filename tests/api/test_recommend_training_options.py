"""``POST /v1/recommend`` takes the training and performance options ``anchorgpu recommend`` takes: ``global_batch``,
``recompute``, ``optimizer``, ``lora_rank``, ``mfu``, ``mbu``, and serving's ``gpu_memory_utilization`` and
``allow_long_context``, with ``plan``'s bounds and the same refusals, and answers as the CLI does.

Before: each was a 422 "Extra inputs are not permitted", so the API could not ask what the CLI asks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api_fields import as_api
from cli_runner import run

MODEL = "llama-3.2-1b"
SMALL = {"model": MODEL, "gpu": "h100", "top": 3, "max_servers": 1}
CLI_SMALL = ("recommend", MODEL, "--gpu", "h100", "--top", "3", "--max-servers", "1", "--json")


def _rows(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["offering"], r["gpus"], json.dumps(r["layout"], sort_keys=True), r["recompute"],
             r["per_gpu_total_bytes"], r["train_tokens_per_s"] or r["decode_tokens_per_s_total"], r["budget_bytes"])
            for r in body["results"]]


def _api(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/recommend", json={**SMALL, **fields})
    assert response.status_code == 200, response.text[:400]
    body: dict[str, Any] = response.json()
    assert body["results"], body["rejected"][:3]
    return body


def _cli(capsys: Any, *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *CLI_SMALL, *argv)
    assert code == 0, err
    body: dict[str, Any] = json.loads(out)
    return body


@pytest.mark.parametrize(("fields", "argv"), [
    ({"task": "train", "global_batch": 65_536, "train_tokens": 10**9}, ("--task", "train", "--global-batch", "64k", "--tokens", "1e9")),
    ({"task": "train", "recompute": "full"}, ("--task", "train", "--recompute", "full")),
    ({"task": "train", "optimizer": "sgd"}, ("--task", "train", "--optimizer", "sgd")),
    ({"task": "lora", "lora_rank": 256}, ("--task", "lora", "--lora-rank", "256")),
    ({"task": "train", "mfu": 0.3}, ("--task", "train", "--mfu", "0.3")),
    ({"mbu": 0.3, "concurrency": 8}, ("--mbu", "0.3", "--concurrency", "8")),
    ({"gpu_memory_utilization": 0.5, "concurrency": 8}, ("--gpu-memory-utilization", "0.5", "--concurrency", "8")),
])
def test_the_api_answers_as_the_cli_with_the_option_and_the_option_counts(
        client: TestClient, capsys: Any, fields: dict[str, Any], argv: tuple[str, ...]) -> None:
    api = _api(client, **fields)
    assert _rows(api) == _rows(_cli(capsys, *argv))
    default = _api(client, **{k: v for k, v in fields.items() if k in ("task", "train_tokens", "concurrency")})
    assert _rows(api) != _rows(default), "the option changed nothing: it did not reach the sweep"


def test_recompute_is_the_one_asked_for_on_every_row(client: TestClient) -> None:
    rows = _api(client, task="train", recompute="selective")["results"]
    assert {r["recompute"] for r in rows} == {"selective"}


def test_a_long_context_is_allowed_only_when_asked(client: TestClient, problem: Any) -> None:
    refused = client.post("/v1/recommend", json={**SMALL, "context": 1_000_000})
    assert refused.status_code == 422 and "allow" in problem(refused)["detail"].lower()
    assert _api(client, context=1_000_000, allow_long_context=True)["results"]


@pytest.mark.parametrize(("fields", "named"), [
    ({"global_batch": 4_194_304}, "--global-batch 4,194,304 applies to training"),
    ({"recompute": "full"}, "--recompute full applies to training"),
    ({"optimizer": "sgd"}, "--optimizer sgd applies to training"),
    ({"task": "train", "lora_rank": 8}, "--lora-rank 8 sets LoRA's adapters"),
    ({"task": "train", "gpu_memory_utilization": 0.8}, "--gpu-memory-utilization 0.8 applies to serving"),
])
def test_an_option_the_task_has_no_use_for_is_refused_as_plan_refuses_it(
        client: TestClient, problem: Any, fields: dict[str, Any], named: str) -> None:
    response = client.post("/v1/recommend", json={**SMALL, **fields})
    assert response.status_code == 422
    body = problem(response)
    assert body["code"] == "invalid_workload" and body["detail"].startswith(as_api(named, "/v1/recommend")), body["detail"]


@pytest.mark.parametrize(("task", "fields"), [
    ("train", {"global_batch": 0}), ("train", {"global_batch": "4M"}), ("train", {"global_batch": 2.5}),
    ("train", {"global_batch": True}), ("train", {"recompute": "some"}), ("train", {"optimizer": "adam"}),
    ("lora", {"lora_rank": 0}), ("train", {"mfu": 0}), ("inference", {"mbu": 1.5}),
    ("inference", {"gpu_memory_utilization": 0}), ("inference", {"allow_long_context": "yes"}),
])
def test_bad_values_are_a_422_naming_the_field_as_on_plan(client: TestClient, problem: Any, task: str,
                                                           fields: dict[str, Any]) -> None:
    name = next(iter(fields))
    for path, extra in (("/v1/recommend", {}), ("/v1/plan", {"gpu": "h100"})):
        response = client.post(path, json={"model": MODEL, "task": task, **fields, **extra})
        assert response.status_code == 422, (path, response.text[:300])
        assert problem(response)["detail"].startswith(f"body.{name}:"), (path, response.text[:300])


def test_mfu_times_a_training_row_as_plan_times_that_layout(capsys: Any) -> None:
    """Before: the training sweep timed every row with the calibrated efficiencies, so ``recommend --task train
    --mfu 0.3`` printed the same tokens/s as without it (serving rows already took it)."""
    row = _cli(capsys, "--task", "train", "--mfu", "0.3")["results"][0]
    code, out, err = run(capsys, "plan", MODEL, "--task", "train", "--gpu", row["gpu"], "--gpus", str(row["gpus"]),
                         "--tp", str(row["layout"]["tp"]), "--pp", str(row["layout"]["pp"]),
                         "--dp", str(row["layout"]["dp"]), "--zero", str(row["layout"]["zero"]),
                         "--recompute", row["recompute"], "--micro-batch", "1", "--mfu", "0.3", "--json")
    assert code == 0, err
    assert row["train_tokens_per_s"] == pytest.approx(json.loads(out)["performance"]["train_tokens_per_s"], rel=1e-4)
