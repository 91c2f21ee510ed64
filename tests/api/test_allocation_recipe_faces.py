"""An allocation's launch in each face's own words (stop 60, faces60; qa25fix and allocreach left it).

``GET /v1/allocations/{id}/recipe`` (and ``anchorgpu allocations recipe``, and the allocation page) wrote SGLang's and
TensorRT-LLM's launch lines "as planned (--engine sglang ...)": an option none of those faces has (their launch is
chosen by ``kind`` / ``--kind`` / the page's "Launch kind", and it chose the engine). Where the launch chose the engine
the line now names the launch's own engine in words every face shares; where the user gave ``--engine`` (``plan``,
``POST /v1/plan``), that option is still named, as its face names it. A refusal of the launch names the allocation's
option too: ``kind`` here, ``--kind`` on the CLI, not ``plan``'s ``--recipe``.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


def _booked(client: TestClient, alice: Any, quote_for: Any) -> str:
    quote = quote_for(alice, offering="h100-sxm-8x-bm", quantity=1)
    bought = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("faces60"))
    assert bought.status_code == 201, bought.text
    allocation_id: str = bought.json()["id"]
    return allocation_id


@pytest.mark.parametrize(("kind", "line"), [
    ("sglang", "--mem-fraction-static 0.812 as planned (SGLang, this launch's engine, SGLang's own default"),
    ("trtllm", "--free_gpu_memory_fraction as planned (TensorRT-LLM, this launch's engine): the KV cache takes"),
])
def test_the_allocation_launch_names_its_own_engine_not_an_option_it_lacks(client: TestClient, alice: Any,
                                                                           quote_for: Any, kind: str, line: str) -> None:
    allocation = _booked(client, alice, quote_for)
    answer = client.get(f"/v1/allocations/{allocation}/recipe", headers=alice.auth,
                        params={"kind": kind, "model": "llama-3.1-8b"})
    assert answer.status_code == 200, answer.text
    lines = answer.json()["recipe"]["assumptions"]
    assert any(a.startswith(line) for a in lines), lines
    assert not any("--engine" in a or "engine sglang" in a or "engine trtllm" in a for a in lines), lines


def test_plan_still_names_the_engine_option_the_user_gave(client: TestClient) -> None:
    """Given ``engine`` with the recipe, the line names it as the API's field (qa25fix's wording, kept)."""
    body = {"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8, "recipe": "sglang", "engine": "sglang"}
    given = client.post("/v1/plan", json=body).json()["recipe"]["assumptions"]
    assert any("as planned (engine sglang" in a for a in given), given
    chosen = client.post("/v1/plan", json={**body, "engine": None}).json()["recipe"]["assumptions"]
    assert any("as planned (SGLang, this launch's engine" in a for a in chosen), chosen


def test_a_refused_allocation_launch_names_the_routes_kind(client: TestClient, alice: Any, quote_for: Any) -> None:
    allocation = _booked(client, alice, quote_for)
    refused = client.get(f"/v1/allocations/{allocation}/recipe", headers=alice.auth,
                         params={"kind": "deepspeed", "model": "llama-3.1-8b"})
    assert refused.status_code == 422
    assert refused.json()["detail"] == ("kind deepspeed: a training recipe for an inference plan (use vllm, sglang or "
                                        "trtllm)")
    planned = client.post("/v1/plan", json={"model": "llama-3.1-8b", "gpu": "h100", "recipe": "deepspeed"})
    assert planned.json()["detail"].startswith("recipe deepspeed: a training recipe")  # plan's own field
