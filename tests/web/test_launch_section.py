"""The allocation page's "Launch" section (issue 15): a model's launch on the allocation's own servers, with copy
buttons, and the one-line reason when the launch cannot express the plan."""

from __future__ import annotations

import html
import re
from typing import Any

from fastapi.testclient import TestClient


def _booked(client: TestClient, field: Any, offering: str, quantity: str) -> str:
    token = field(client.get(f"/quote?offering={offering}").text, "csrf_token")
    quote = client.post("/quote", data={"csrf_token": token, "offering": offering, "quantity": quantity, "term": "1month"})
    quote_url = quote.headers["location"]
    key = field(client.get(quote_url).text, "idempotency_key")
    booked = client.post(f"{quote_url}/book", data={"csrf_token": token, "idempotency_key": key})
    location: str = booked.headers["location"]
    return location


def test_the_allocation_page_writes_the_launch_with_copy_buttons(client: TestClient, signed_in: str,
                                                                 field: Any) -> None:
    url = _booked(client, field, "h100-sxm-8x-bm", "2")
    page = client.get(url).text
    assert 'id="launch-form"' in page and 'id="launch-command"' not in page  # nothing written until asked
    done = client.get(url, params={"kind": "vllm", "model": "llama-3.1-70b", "context": "8k", "concurrency": "64"})
    assert done.status_code == 200
    command = html.unescape(re.search(r'<pre id="launch-command">(.*?)</pre>', done.text, re.S).group(1))  # type: ignore[union-attr]
    assert command.startswith("vllm serve meta-llama/Llama-3.1-70B") and "--tensor-parallel-size 8" in command
    assert 'data-copy="launch-command"' in done.text
    train = client.get(url, params={"kind": "k8s", "model": "llama-3.1-8b", "task": "train"}).text
    assert 'data-copy="launch-file-1"' in train and "&#34;completionMode&#34;: &#34;Indexed&#34;" in train
    refused = client.get(url, params={"kind": "deepspeed", "model": "llama-3.1-8b"}).text
    # the form's control named as the form shows it ("Launch kind"), not plan's --recipe (stop 60, faces60)
    assert re.search(r'id="launch-error">“Launch kind” deepspeed: a training recipe for an inference plan', refused)
    russian = client.get(url, params={"kind": "deepspeed", "model": "llama-3.1-8b", "lang": "ru"}).text
    assert re.search(r'id="launch-error">«Способ запуска» deepspeed: это рецепт обучения, а план — для задачи inference', russian)
    lines = client.get(url, params={"kind": "sglang", "model": "llama-3.1-8b"}).text
    assert "this launch&#39;s engine" in lines and "--engine" not in lines  # no option this page lacks


def test_the_planner_page_offers_every_launch_and_shows_a_refusal_beside_the_plan(client: TestClient) -> None:
    query = {"model": "llama-3.1-70b", "gpu": "h100", "gpus": "8", "context": "8k", "concurrency": "32"}
    page = client.get("/plan", params=query).text
    assert page.count('class="launch-kind') == 8 and 'id="launch-command"' not in page
    done = client.get("/plan", params={**query, "recipe": "sglang"})
    assert done.status_code == 200
    command = html.unescape(re.search(r'<pre id="launch-command">(.*?)</pre>', done.text, re.S).group(1))  # type: ignore[union-attr]
    assert command.startswith("python -m sglang.launch_server") and "--tp-size 8" in command
    refused = client.get("/plan", params={**query, "gpu": "a100-80gb-sxm", "kv_cache": "fp8", "recipe": "vllm"})
    assert refused.status_code == 200 and 'id="verdict"' in refused.text  # the plan stays; the launch says why not
    assert "no FP8 hardware" in refused.text


def test_the_recommend_page_writes_a_launch_per_offering(client: TestClient) -> None:
    query = {"model": "llama-3.1-8b", "context": "8192", "concurrency": "16", "top": "3"}
    page = client.get("/recommend", params=query).text
    assert page.count('class="launch-kind') == 8 and "launch-row" not in page
    done = client.get("/recommend", params={**query, "recipe": "vllm"})
    assert done.status_code == 200
    rows = done.text.count('<details class="launch-row"')
    copies = re.findall(r'data-copy="(launch-\d+-command)"', done.text)
    assert rows >= 1 and len(copies) == rows == len(set(copies))  # one launch per offering, each copies its own


def test_the_planner_page_refuses_the_launch_of_a_plan_that_does_not_fit(client: TestClient) -> None:
    """QA pass: the Launch section wrote a launch for a plan that does not fit (it would run out of memory); it now
    shows the one-line refusal in its place, naming what would fit, and the plan itself stays. Short by 146.43 GiB:
    217.66 GiB per GPU against vLLM's 0.9 x 79.18 GiB (the H100's CUDA total, gpus.toml), as the CLI's refusal in
    tests/recipes/test_recipe_faces.py."""
    query = {"model": "llama-3.1-70b", "gpu": "h100", "gpus": "1", "context": "8k", "concurrency": "32",
             "recipe": "vllm"}
    page = client.get("/plan", params=query)
    assert page.status_code == 200 and 'id="verdict"' in page.text
    assert 'id="launch-command"' not in page.text
    error = re.search(r'<p class="error" id="launch-error"[^>]*>(.*?)</p>', page.text, re.S)
    assert error is not None
    assert html.unescape(error.group(1)) == ("recipe vllm: the plan does not fit on 1 x h100-sxm (short by "
                                             "146.43 GiB per GPU); plan with gpus 4 tp 4 first")  # the form's fields
