"""API bodies: a key sent twice and a body not sent as JSON (QA pass on issue 13).

Found by hand: ``POST /v1/quotes {"offering": …, "quantity": 1, "quantity": 2}`` quoted two servers (the last
key won, silently); ``{"term": "1h", "term": "1month"}`` a month. A JSON body sent as ``text/plain`` or as
``curl -d`` sends it (``application/x-www-form-urlencoded``) was answered 422 "body: Input should be a valid
dictionary or object", which names neither the header nor the fix. Now: 400 ``malformed_body`` naming the key,
415 ``unsupported_media_type`` naming the header; nothing is created either way.
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from anchorgpu.store.tables import metadata
from hardening.conftest import Served, problem_of

_JSON = {"content-type": "application/json"}


def _counts(served: Served) -> dict[str, int]:
    with served.app.state.store.engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in metadata.sorted_tables}


@pytest.mark.parametrize("raw,key", [
    (b'{"offering": "h100-sxm-1x-vm", "quantity": 1, "quantity": 2, "term": "1h"}', "quantity"),
    (b'{"offering": "h100-sxm-1x-vm", "term": "1h", "term": "1month"}', "term"),
    (b'{"offering": "h100-sxm-1x-vm", "term": "1h", "options": {"nvme-tb": 1, "nvme-tb": 2}}', "nvme-tb"),
])
def test_a_key_sent_twice_is_refused_naming_it_and_no_quote_is_made(served: Served, raw: bytes, key: str) -> None:
    alice = served.caller("alice")
    before = _counts(served)
    response = served.client.post("/v1/quotes", content=raw, headers={**alice.auth, **_JSON})
    assert response.status_code == 400, response.text[:300]
    assert _counts(served) == before
    problem = problem_of(response)
    assert problem["code"] == "malformed_body" and repr(key) in problem["detail"]
    once = served.client.post("/v1/quotes", content=raw.replace(b'"quantity": 1, ', b"").replace(b'"term": "1h", "term"', b'"term"')
                              .replace(b'"nvme-tb": 1, ', b""), headers={**alice.auth, **_JSON})
    assert once.status_code == 201, once.text[:300]  # the same body with each key once is fine


def test_repeated_keys_are_refused_on_every_api_body_and_nowhere_else(sqlite_served: Served) -> None:
    client = sqlite_served.client
    alice = sqlite_served.caller("alice")
    for path, raw in (("/v1/plan", b'{"model": "llama-3.1-8b", "model": "llama-3.1-70b"}'),
                      ("/v1/recommend", b'{"model": "llama-3.1-8b", "top": 1, "top": 2}'),
                      ("/v1/keys", b'{"name": "a", "name": "b"}'),
                      ("/v1/allocations", b'{"quote_id": "q_a", "quote_id": "q_b"}')):
        response = client.post(path, content=raw, headers={**alice.auth, **_JSON, "Idempotency-Key": "dup-1"})
        assert response.status_code == 400 and problem_of(response)["code"] == "malformed_body", (path, response.text[:200])
    assert len(client.get("/v1/keys", headers=alice.auth).json()["data"]) == 1  # no key was made
    assert client.post("/v1/plan", content=b'{"model": "llama-3.1-8b", "gpu": "h100"}', headers=_JSON).status_code == 200


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded", "application/xml",
                                          "multipart/form-data; boundary=x"])
def test_a_body_not_sent_as_json_is_415_naming_the_header(sqlite_served: Served, content_type: str | None) -> None:
    alice = sqlite_served.caller("alice")
    before = _counts(sqlite_served)
    headers = {**alice.auth, **({"content-type": content_type} if content_type else {})}
    for path in ("/v1/plan", "/v1/quotes"):
        response = sqlite_served.client.post(path, content=b'{"model": "llama-3.1-8b", "offering": "h100-sxm-1x-vm"}',
                                             headers=headers)
        assert response.status_code == 415, (path, response.status_code, response.text[:200])
        problem = problem_of(response)
        assert problem["code"] == "unsupported_media_type" and "Content-Type: application/json" in problem["detail"]
    assert _counts(sqlite_served) == before


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                                          "application/merge-patch+json"])
def test_json_media_types_and_bodiless_actions_are_still_taken(sqlite_served: Served, content_type: str) -> None:
    response = sqlite_served.client.post("/v1/plan", content=b'{"model": "llama-3.1-8b"}',
                                         headers={"content-type": content_type})
    assert response.status_code == 200, response.text[:200]
    alice = sqlite_served.caller("alice")
    quote = sqlite_served.client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": "1h"}, headers=alice.auth)
    booked = sqlite_served.client.post("/v1/allocations", json={"quote_id": quote.json()["id"]},
                                       headers={**alice.auth, "Idempotency-Key": f"book-{content_type}"})
    stop = sqlite_served.client.post(f"/v1/allocations/{booked.json()['id']}/stop",  # no body, no Content-Type
                                     headers={**alice.auth, "Idempotency-Key": f"stop-{content_type}"})
    assert stop.status_code == 200, stop.text[:200]


def test_the_openapi_document_lists_the_415(sqlite_served: Served) -> None:
    document = sqlite_served.client.get("/openapi.json").json()
    operation = document["paths"]["/v1/quotes"]["post"]
    assert "415" in operation["responses"] and "application/problem+json" in operation["responses"]["415"]["content"]
