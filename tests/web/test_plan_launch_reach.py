"""The planner page plans for the launch it is asked to write, as ``anchorgpu plan --recipe`` and ``POST /v1/plan``
do (stop 59 webreach): its workload takes the recipe's reach (:func:`anchorgpu.planner.engine_choice.launch_reach`),
engine and training stack. Before, the page planned without the recipe and wrote the launch from a second plan, so
the figures on the page were not the launch's (nor the API's): a training recipe's PyTorch stack was planned as
Megatron's, a serving recipe's engine as vLLM, and Llama-3.1-8B, train, 8 H100, ZeRO-3, ``recipe accelerate`` showed
Megatron's memory where a training recipe plans the PyTorch stack (tests/hardening/test_stop59_accroot.py,
stop59_accroot.md). Since stop 60 (mem60) accelerate 1.15.0's wrap is counted as torchtitan's units, which it makes
(68.12 GiB per GPU either way)."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

TRAIN = {"model": "llama-3.1-8b", "task": "train", "gpu": "h100", "gpus": 8, "tp": 1, "pp": 1, "dp": 8, "zero": 3}


def _page_total_bytes(page: str) -> int:
    """The memory table's Total row, in bytes (the page writes them beside the GiB)."""
    match = re.search(r"<th>Total</th><td[^>]*><strong>[^<]*</strong></td><td[^>]*>([\d,]+) bytes</td>", page)
    assert match is not None, "no Total row"
    return int(match.group(1).replace(",", ""))


def _page(client: TestClient, body: dict[str, Any]) -> str:
    r = client.get("/plan", params={k: str(v) for k, v in body.items()})
    assert r.status_code == 200, r.text[-500:]
    return r.text


@pytest.mark.parametrize("recipe", [None, "accelerate", "torchrun-fsdp", "deepspeed"])
def test_the_page_gives_the_apis_memory_for_the_launch_asked_for(client: TestClient, recipe: str | None) -> None:
    body = {**TRAIN, **({"recipe": recipe} if recipe else {})}
    api = client.post("/v1/plan", json=body)
    assert api.status_code == 200, api.text
    page = _page(client, body)
    assert _page_total_bytes(page) == api.json()["per_gpu"]["total_bytes"]
    if recipe == "accelerate":
        assert round(api.json()["per_gpu"]["total_bytes"] / 2**30, 2) == 68.12  # stop60_mem60.md
        assert "the units the plan counted" in html.unescape(page)  # the launch beside the plan is the plan's own


def test_accelerate_counts_torchtitans_units_on_the_page(client: TestClient) -> None:
    """On the PyTorch stack (the stack a training recipe plans for, resolve_train_stack): 68.12 GiB without a launch
    (torchtitan's units) and with accelerate's, the same units in accelerate 1.15.0 (stop60_mem60.md)."""
    plain = _page_total_bytes(_page(client, {**TRAIN, "train_stack": "pytorch"}))
    accelerate = _page_total_bytes(_page(client, {**TRAIN, "recipe": "accelerate"}))
    assert (round(plain / 2**30, 2), round(accelerate / 2**30, 2)) == (68.12, 68.12)


def test_a_serving_launch_sizes_the_page_for_its_engine(client: TestClient) -> None:
    """recipe sglang with no engine given: the API sizes the plan for SGLang (resolve_engine), and so does the page."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1, "context": 8192, "concurrency": 16, "recipe": "sglang"}
    api = client.post("/v1/plan", json=body).json()
    assert api["workload"]["engine"] == "sglang"
    assert _page_total_bytes(_page(client, body)) == api["per_gpu"]["total_bytes"]


def test_a_launch_refused_before_planning_leaves_the_plan_without_it(client: TestClient) -> None:
    """A training launch for a serving plan: the API refuses the request; the page keeps the plan (as planned
    without a recipe) and says why beside it."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 1, "context": 8192, "concurrency": 16}
    plain = client.post("/v1/plan", json=body).json()
    page = _page(client, {**body, "recipe": "deepspeed"})
    assert _page_total_bytes(page) == plain["per_gpu"]["total_bytes"] and 'id="verdict"' in page
    assert re.search(r'id="launch-error"[^>]*>recipe deepspeed: a training recipe for an inference plan', page)


def test_the_formats_beside_the_plan_are_planned_for_its_launch(client: TestClient) -> None:
    """The formats table's row for the plan's own format is the plan above it (accelerate's 68.12 GiB, shown 68.1, not
    Megatron's 59.90 GiB), and each row's link keeps the launch, so the page it opens shows the row's figure."""
    page = html.unescape(_page(client, {**TRAIN, "recipe": "accelerate"}))
    row = re.search(r'<tr class="current"[^>]*>\s*<td><a href="([^"]+)">bf16</a>.*?<td class="num">([\d.]+) GiB</td>',
                    page, re.S)
    assert row is not None, "no current bf16 row"
    assert "recipe=accelerate" in row.group(1) and row.group(2) == "68.1"  # the gib filter: one decimal
