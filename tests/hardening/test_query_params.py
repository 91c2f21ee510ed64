"""Query parameters a ``/v1`` route does not take are refused, naming them (QA pass on issue 13).

Found by hand: ``GET /v1/offerings?gpus=8`` (a typo for ``min_gpus``) listed every offering; ``GET
/v1/models?family=qwen`` listed every model although the API has no such filter (the CLI has ``--family``);
``GET /v1/allocations/{id}/recipe?kind=vllm&model=…&seq=4096`` planned the model's default context. Each answered
200 as if it had been understood. Now 422 ``invalid_request`` with the parameter and what the path takes; the
body rule ("Extra inputs are not permitted") and the query rule are the same.
"""

from __future__ import annotations

import pytest

from hardening.conftest import Served, problem_of


@pytest.mark.parametrize("method,path,unknown,auth", [
    ("GET", "/v1/offerings?gpu=h100", "gpus=8", False),
    ("GET", "/v1/models", "family=qwen", False),
    ("GET", "/v1/models/llama-3.1-8b", "kv_cache=fp8", False),
    ("GET", "/v1/gpus", "vendor=amd", False),
    ("GET", "/v1/gpus/compare?a=h100&b=h200", "model=llama-3.1-8b", False),
    ("GET", "/v1/glossary?q=fsdp", "langs=ru", False),
    ("GET", "/v1/healthz", "verbose=1", False),
    ("POST", "/v1/plan", "debug=1", False),
    ("GET", "/v1/allocations", "state=active", True),
    ("GET", "/v1/keys", "all=1", True),
])
def test_an_unknown_query_parameter_is_a_422_naming_it(sqlite_served: Served, method: str, path: str, unknown: str,
                                                        auth: bool) -> None:
    headers = sqlite_served.caller("alice").auth if auth else {}
    body = {"json": {"model": "llama-3.1-8b"}} if method == "POST" else {}
    known = sqlite_served.client.request(method, path, headers=headers, **body)
    assert known.status_code == 200, known.text[:200]
    joined = f"{path}{'&' if '?' in path else '?'}{unknown}"
    refused = sqlite_served.client.request(method, joined, headers=headers, **body)
    assert refused.status_code == 422, (joined, refused.text[:200])
    problem = problem_of(refused)
    name = unknown.split("=")[0]
    assert problem["code"] == "invalid_request" and problem["detail"].startswith(f"query.{name}: Extra inputs")


def test_the_recipe_route_refuses_a_parameter_it_does_not_take_before_planning(sqlite_served: Served) -> None:
    alice = sqlite_served.caller("alice")
    quote = sqlite_served.quote(alice, offering="h100-sxm-8x-bm", term="1w")
    booked = sqlite_served.client.post("/v1/allocations", json={"quote_id": quote["id"]},
                                       headers={**alice.auth, "Idempotency-Key": "q-1"}).json()
    path = f"/v1/allocations/{booked['id']}/recipe?kind=vllm&model=llama-3.1-8b"
    assert sqlite_served.client.get(f"{path}&context=4096", headers=alice.auth).status_code == 200
    refused = sqlite_served.client.get(f"{path}&seq=4096", headers=alice.auth)
    assert refused.status_code == 422 and "query.seq" in problem_of(refused)["detail"]
    assert "context" in refused.json()["detail"]  # it says what the path takes


def test_pages_keep_their_own_query_handling(sqlite_served: Served) -> None:
    assert sqlite_served.client.get("/glossary?q=fsdp&utm_source=x").status_code == 200
