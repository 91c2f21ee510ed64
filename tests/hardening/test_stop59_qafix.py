"""Stop 59's fixes of three defects qa24 left (benchmarks/hardening/stop59_qa24.md "Left" 1, 4 and 5; the findings in
benchmarks/hardening/stop59_qafix.md).

1. A ``--tokens`` that was not a whole number of global batches was timed as a fraction of a step
   (``plan llama-3.1-8b --task train --gpu h100 --gpus 8 --tokens 5e6``: 1.19 steps, 52.5 s, 0.12 GPU-hours). A run
   steps the optimizer once a whole global batch: it is now timed, GPU-houred and priced as ceil(tokens / batch)
   steps (here 2 of the default 4,194,304 tokens, 8,388,608 tokens trained), and the plan says so.
2. ``POST /v1/plan`` named the training tokens ``tokens``, ``POST /v1/recommend`` ``train_tokens``. Both routes now
   take ``tokens`` (the CLI's ``--tokens``) and accept ``train_tokens`` as its alias; both given with different
   values is a 422 naming the field, not a silent pick.
3. A budget rejection wrote "1241.00 USD > 500 USD" beside the offering's "$1,241.00"; both amounts are now written
   as the price beside them ("$1,241.00 > $500.00").
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from cli_runner import run, run_json

DEFAULT_BATCH_TOKENS = 4_194_304  # the default --global-batch (speed.training.DEFAULT_GLOBAL_BATCH_TOKENS), 4M tokens
EIGHT_B_ON_8_H100 = ("plan", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--gpus", "8")


def test_a_run_of_tokens_not_whole_batches_is_timed_as_whole_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """5,000,000 tokens at the default 4,194,304-token batch: 2 whole steps, so the training time is two steps and
    the GPU-hours 8 GPUs over it; the fraction (1.19 steps) was timed before."""
    perf = run_json(capsys, *EIGHT_B_ON_8_H100, "--tokens", "5e6")["performance"]
    assert perf["global_batch_tokens"] == DEFAULT_BATCH_TOKENS
    assert perf["train_time_s"] == pytest.approx(2 * perf["step_time_s"], rel=1e-9)
    assert perf["gpu_hours"] == pytest.approx(2 * perf["step_time_s"] * 8 / 3600, rel=1e-9)
    # the floor is the same two steps at the roofline rate
    assert perf["train_time_s_ceiling"] == pytest.approx(2 * DEFAULT_BATCH_TOKENS / perf["train_tokens_per_s_ceiling"],
                                                         rel=1e-9)
    line = next(a for a in perf["assumptions"] if a.startswith("run timed:"))
    assert "2 whole optimizer steps of 4,194,304 tokens = 8,388,608 tokens trained" in line
    assert "--tokens 5,000,000 rounded up" in line
    _, out, _ = run(capsys, *EIGHT_B_ON_8_H100, "--tokens", "5e6")
    assert "run timed: 2 whole optimizer steps" in out  # printed under the speed, beside the batch it is timed with


def test_whole_batches_are_not_rounded(capsys: pytest.CaptureFixture[str]) -> None:
    """Exactly 3 batches: 3 steps, no tokens added, and the line says no rounding."""
    perf = run_json(capsys, *EIGHT_B_ON_8_H100, "--tokens", str(3 * DEFAULT_BATCH_TOKENS))["performance"]
    assert perf["train_time_s"] == pytest.approx(3 * perf["step_time_s"], rel=1e-9)
    line = next(a for a in perf["assumptions"] if a.startswith("run timed:"))
    assert line == "run timed: 3 whole optimizer steps of 4,194,304 tokens (--tokens 12,582,912)"


def test_recommend_times_and_prices_the_same_whole_steps_as_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """recommend's row on one 8-GPU H100 server takes plan's layout (the chooser's rule) and so its two steps: the
    same training time (its JSON to 0.1 s), a run of 8,388,608 tokens (time x rate), not 5,000,000."""
    plan_s = run_json(capsys, *EIGHT_B_ON_8_H100, "--tokens", "5e6")["performance"]["train_time_s"]
    rec = run_json(capsys, "recommend", "llama-3.1-8b", "--task", "train", "--gpu", "h100", "--tokens", "5e6",
                   "--max-servers", "1")
    row = next(r for r in rec["results"] if r["gpus"] == 8)
    assert row["train_time_s"] == pytest.approx(plan_s, abs=0.05)
    for r in rec["results"]:
        assert r["train_time_s"] * r["train_tokens_per_s"] >= 2 * DEFAULT_BATCH_TOKENS * 0.995  # the JSON: 0.1 s
        assert r["train_time_s_ceiling"] * r["train_tokens_per_s_ceiling"] >= 2 * DEFAULT_BATCH_TOKENS * 0.995


_PLAN = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8}
_RECOMMEND = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "max_servers": 1, "top": 2}


@pytest.mark.parametrize("spelling", ["tokens", "train_tokens"])
def test_both_planning_routes_take_tokens_and_its_alias(client: TestClient, spelling: str) -> None:
    """``tokens`` on both routes (recommend refused it as an unknown field before), ``train_tokens`` on both (plan
    refused it before): one answer whichever is sent."""
    plan = client.post("/v1/plan", json={**_PLAN, spelling: 5e6})
    assert plan.status_code == 200, plan.text
    assert plan.json()["performance"]["train_time_s"] is not None
    rec = client.post("/v1/recommend", json={**_RECOMMEND, spelling: 5e6})
    assert rec.status_code == 200, rec.text
    assert rec.json()["workload"]["train_tokens"] == 5_000_000  # the answer's key, unchanged (the JSON contract)
    assert all(r["run_usd"] is not None for r in rec.json()["results"])


@pytest.mark.parametrize("route,body", [("/v1/plan", _PLAN), ("/v1/recommend", _RECOMMEND)])
def test_tokens_and_its_alias_with_two_values_is_a_422_naming_it(client: TestClient, route: str,
                                                                   body: dict[str, object]) -> None:
    r = client.post(route, json={**body, "tokens": 5e6, "train_tokens": 6e6})
    assert r.status_code == 422
    assert r.headers["content-type"].startswith("application/problem+json")
    detail = r.json()["detail"]
    assert detail == ("body.tokens: 'tokens' 5,000,000 and its alias 'train_tokens' 6,000,000 are the same field given "
                      "twice with different values: send one")
    same = client.post(route, json={**body, "tokens": 5e6, "train_tokens": 5e6})  # one value twice: that value
    assert same.status_code == 200, same.text


def test_the_openapi_document_names_tokens_on_both_routes(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("PlanRequest", "RecommendRequest"):
        props = schemas[name]["properties"]
        assert "tokens" in props and "train_tokens" not in props
        assert "also accepted as 'train_tokens'" in props["tokens"]["description"]
        assert props["tokens"]["anyOf"][0] == {"type": "integer", "minimum": 1, "maximum": 10**15}


def test_a_budget_rejection_writes_money_as_the_price_beside_it(capsys: pytest.CaptureFixture[str]) -> None:
    """qa24's command: the A100 VM's month is $1,241.00 (catalog), over the $500 budget."""
    code, out, _ = run(capsys, "recommend", "llama-3.1-8b", "--concurrency", "64", "--prompt", "1000",
                       "--output-tokens", "200", "--max-usd", "500")
    assert code == 0
    assert "a100-80gb-sxm-1x-vm x1 ($1,241.00): over the budget: $1,241.00 > $500.00" in out
    assert " USD >" not in out and "> 500 USD" not in out


@pytest.mark.parametrize("spelling", ["tokens", "train_tokens"])
def test_the_recommend_page_takes_tokens_and_an_older_links_train_tokens(client: TestClient, spelling: str) -> None:
    """The page's input is ``tokens`` as the API's field; a link written with ``train_tokens`` still fills it, and a
    refusal names the form's label either way."""
    import html
    import re

    page = client.get("/recommend", params={"model": "llama-3.1-8b", "task": "train", spelling: "1000"}).text
    assert re.search(r'<input name="tokens" inputmode="numeric" value="1000"', page)
    found = re.search(r'class="[^"]*error[^"]*"[^>]*>(.*?)</', page, re.S)
    assert found is not None
    assert html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip().startswith(
        "“Train tokens” 1,000 is less than one optimizer step")
