"""Advice inside a successful answer names the request's fields, as a refusal already did (stop 53): the planner writes
``suggestions[].change``, ``rejected[].reason`` and its assumption lines for the CLI (``--max-num-seqs 256``,
``--train-precision fp8: …``, ``set --min-tokens-per-s-per-user``); ``POST /v1/plan`` and ``POST /v1/recommend``
said those flags to a client that has none. The API writes each line through ``anchorgpu.api.words.api_words``; the
CLI's lines are unchanged. The requests are the ones whose CLI answers carry the flags (checked below on the CLI)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.api.words import api_words
from api_fields import as_api
from cli_runner import run, run_json

_OUR_FLAG = re.compile(r"(?<![\w-])--(gpus|tp|pp|weights|max-num-seqs|gpu-memory-utilization|train-precision|zero|"
                       r"recompute|min-tokens-per-s-per-user|concurrency|engine|context|prompt|output-tokens)(?![\w-])")


def _advice(answer: dict[str, Any]) -> list[str]:
    """Every line of advice of a plan or a recommendation (not its launch)."""
    lines = [*answer.get("assumptions", []), *answer.get("checks", []),
             *(w["message"] for w in answer.get("warnings", []))]
    lines += [s["change"] for s in answer.get("suggestions", [])] + [s["description"] for s in answer.get("suggestions", [])]
    lines += [r["reason"] for r in answer.get("rejected", [])]
    lines += [*((answer.get("performance") or {}).get("assumptions") or [])]
    lines += [row["recipe_refused"] for row in answer.get("results", []) if row.get("recipe_refused")]
    return lines


PLANS = [  # (body, the CLI's arguments, the CLI's changes): serving, MoE, a model too large, training
    ({"model": "gpt-oss-120b", "gpu": "h100-sxm", "concurrency": 64, "gpus": 1},
     ("plan", "gpt-oss-120b", "--gpu", "h100-sxm", "--concurrency", "64", "--gpus", "1"),
     ["--engine trtllm", "--max-num-seqs 256", "--gpu-memory-utilization 0.96", "--gpus 2 --tp 2"]),
    ({"model": "llama-3.1-405b", "gpu": "h100-sxm", "gpus": 8},
     ("plan", "llama-3.1-405b", "--gpu", "h100-sxm", "--gpus", "8"),
     ["--weights int4-awq", "--weights fp8", "--gpus 16 --tp 8 --pp 2"]),
    ({"model": "llama-3.1-405b", "gpu": "h100-sxm", "task": "train", "gpus": 8},
     ("plan", "llama-3.1-405b", "--gpu", "h100-sxm", "--task", "train", "--gpus", "8"),
     ["--gpus 128", "--gpus 128 --zero 3 --recompute full"]),
]


@pytest.mark.parametrize(("body", "argv", "changes"), PLANS, ids=[p[0]["model"] + "-" + p[0].get("task", "serve") for p in PLANS])
def test_a_plans_suggestions_name_the_fields_and_the_cli_keeps_its_flags(
        client: TestClient, capsys: pytest.CaptureFixture[str], body: dict[str, Any], argv: tuple[str, ...],
        changes: list[str]) -> None:
    cli = run_json(capsys, *argv)
    assert [s["change"] for s in cli["suggestions"]] == changes  # the CLI: its flags, as before
    answer = client.post("/v1/plan", json=body).json()
    assert answer["fits"] is False
    assert [s["change"] for s in answer["suggestions"]] == [as_api(c) for c in changes]
    assert not [line for line in _advice(answer) if _OUR_FLAG.search(line)]


def test_the_serving_changes_read_as_the_fields(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    answer = client.post("/v1/plan", json=PLANS[0][0]).json()
    assert [s["change"] for s in answer["suggestions"]] == ["engine trtllm", "max_num_seqs 256",
                                                            "gpu_memory_utilization 0.96", "gpus 2 tp 2"]
    _, table, _ = run(capsys, *PLANS[0][1])  # the CLI's table still says the flag
    assert "--max-num-seqs 256" in table and "--gpus 2 --tp 2" in table


def test_a_rejected_offering_names_the_field(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    """FP8 training on an A100 (no FP8 tensor cores, hardware/data/gpus.toml): rejected with the field's name. Ranked
    by the price of a 10B-token run: a rejection is shown only where cheaper than the first row, and by the month's
    price one L40S with its optimizer state in host memory ($766, stop 58 recoffload) undercuts the A100 VM ($1,241)."""
    said = "a100-80gb-sxm has no FP8 tensor cores"
    answer = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "task": "train", "train_precision": "fp8",
                                                "train_tokens": 10**10}).json()
    assert f"train_precision fp8: {said}" in {r["reason"] for r in answer["rejected"]}
    assert not [line for line in _advice(answer) if _OUR_FLAG.search(line)]
    cli = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp8", "--tokens", "10B")
    assert f"--train-precision fp8: {said}" in {r["reason"] for r in cli["rejected"]}
    _, table, _ = run(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--train-precision", "fp8", "--tokens", "10B")
    assert f"--train-precision fp8: {said}" in table


def test_recommends_assumptions_name_the_fields_and_plans_route(client: TestClient,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """``plan --concurrency N`` is POST /v1/plan's field; the line that names each face's switch keeps the CLI's."""
    answer = client.post("/v1/recommend", json={"model": "llama-3.1-8b"}).json()
    cli = run_json(capsys, "recommend", "llama-3.1-8b")
    sized = next(a for a in answer["assumptions"] if a.startswith("Context not given"))
    assert "each sequence sized as POST /v1/plan with concurrency N sizes it" in sized
    assert "plan --concurrency N" in next(a for a in cli["assumptions"] if a.startswith("Context not given"))
    chat = next(a for a in answer["assumptions"] if "for chat, set" in a)
    assert "for chat, set min_tokens_per_s_per_user" in chat
    assert "for chat, set --min-tokens-per-s-per-user" in next(a for a in cli["assumptions"] if "for chat, set" in a)
    both = "(CLI --lower-precision or a --weights list, API lower_precision, the page's checkbox)"
    assert any(both in a for a in answer["assumptions"]) and any(both in a for a in cli["assumptions"])
    assert [as_api(a, "/v1/recommend") for a in cli["assumptions"]] == answer["assumptions"]


def test_a_refused_launch_names_the_field_and_the_launch_keeps_the_engines_flags(client: TestClient) -> None:
    """DeepSpeed's ds_config.json has no FP8 switch (recipes/training.py): 'plan --train-precision mixed' is the
    plan route's field; a vLLM launch keeps vLLM's --max-num-seqs, though the request has a field of that name."""
    fp8 = client.post("/v1/recommend", json={"model": "llama-3.1-70b", "task": "train", "recipe": "deepspeed",
                                             "train_precision": "fp8", "top": 3}).json()
    refused = {row["recipe_refused"] for row in fp8["results"]}
    assert refused == {"recipe deepspeed: ds_config.json has no FP8 training switch (Transformer Engine is set up in the "
                       "model code); use recipe accelerate or POST /v1/plan with train_precision mixed"}
    served = client.post("/v1/recommend", json={"model": "llama-3.1-8b", "recipe": "vllm", "top": 1}).json()
    assert "--max-num-seqs" in served["results"][0]["recipe"]["command"]


def test_an_engines_own_flags_are_kept(client: TestClient) -> None:
    """Mixtral with EP 2 over TP 1 is attention data parallelism; its check names vLLM's and SGLang's flags."""
    answer = client.post("/v1/plan", json={"model": "mixtral-8x7b-v0.1", "gpu": "h100-sxm", "gpus": 2, "tp": 1,
                                           "ep": 2}).json()
    check = next(c for c in answer["checks"] if "attention data parallelism" in c)
    assert "vLLM --data-parallel-size with --enable-expert-parallel, SGLang --enable-dp-attention" in check


def test_a_quoted_cli_command_becomes_the_route() -> None:
    """recommend/candidates.py writes a run longer than its term as the `anchorgpu plan ...` command to run."""
    line = ("finishing within it needs about 96 servers - plan 128 with `anchorgpu plan llama-3.1-405b --task train "
            "--gpu b300 --gpus 1024`; `anchorgpu model --json` and `--tp 2` and `anchorgpu plan x --no-such 1`")
    assert api_words(line, frozenset({"tp"})) == (
        "finishing within it needs about 96 servers - plan 128 with POST /v1/plan with model llama-3.1-405b task train "
        "gpu b300 gpus 1024; `anchorgpu model --json` and `tp 2` and `anchorgpu plan x --no-such 1`")


def test_a_flag_of_another_route_is_kept() -> None:
    """recommend has no pp or network_gbit_per_gpu (POST /v1/plan has): such a flag stays the CLI's, not a field the
    request does not have; a command whose flags are not all its route's stays as written, its own flags rewritten."""
    fields = frozenset({"recipe", "concurrency"})
    assert api_words("plan with --pp 1 (--pp 1 --fsdp, say); `--network-gbit-per-gpu`", fields) \
        == "plan with --pp 1 (--pp 1 --fsdp, say); `--network-gbit-per-gpu`"
    assert api_words("recommend --concurrency 8 --no-such-flag; --recipe vllm", fields) \
        == "recommend concurrency 8 --no-such-flag; recipe vllm"


def test_the_openapi_document_describes_the_advice_as_fields(client: TestClient) -> None:
    """PlanOut.suggestions said "change (CLI flags)"; it and RecommendOut.rejected now say the fields."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    suggestions = schemas["PlanOut"]["properties"]["suggestions"]["description"]
    assert "CLI flags" not in suggestions and "'gpus 4 tp 4'" in suggestions
    assert "'train_precision fp8: " in schemas["RecommendOut"]["properties"]["rejected"]["description"]
    for name in ("PlanOut", "RecommendOut"):
        assert "name the request's fields where the CLI names its flags" in schemas[name]["description"]
