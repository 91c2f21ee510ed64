"""SQL is built only through bound parameters: injection strings in every text field change nothing and
reveal nothing, on SQLite and on PostgreSQL.

Every text a client controls — body fields, path segments, query parameters, the Idempotency-Key and
Authorization headers, an account name — is sent with classic injection payloads. Afterwards every table
still exists with the rows it had, another account's allocation and quote appear in no answer, no
answer is a 500, and a payload used as an idempotency key is simply a key (stored verbatim, replayed).
(ruff's S608 rule also refuses SQL assembled from strings anywhere in the code.)
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote as urlquote

import pytest
from sqlalchemy import func, inspect, select

from anchorgpu.accounts import create_account
from anchorgpu.store.tables import IdempotencyKeyRow, metadata

PAYLOADS = [
    "'; DROP TABLE allocations; --",
    "' OR '1'='1",
    '" OR 1=1 --',
    "x' UNION SELECT id, api_key_hash FROM accounts --",
    "1); DELETE FROM accounts; --",
    "%' OR account_id LIKE '%",
    "'; SELECT pg_sleep(3); --",
    "\\'; TRUNCATE idempotency_keys; --",
]


def _counts(engine: Any) -> dict[str, int]:
    with engine.connect() as conn:
        return {t.name: int(conn.execute(select(func.count()).select_from(t)).scalar_one()) for t in metadata.sorted_tables}


def _requests(payload: str, own_allocation: str) -> list[tuple[str, str, dict[str, Any], bool]]:
    """(method, path, kwargs, authenticated) with ``payload`` in each text field in turn."""
    p = urlquote(payload, safe="")
    key = {"Idempotency-Key": f"inj-{abs(hash(payload))}"}
    return [
        ("POST", "/v1/quotes", {"json": {"offering": payload, "term": "1h"}}, True),
        ("POST", "/v1/quotes", {"json": {"offering": "h100-sxm-1x-vm", "term": "1h", "region": payload}}, True),
        ("POST", "/v1/quotes", {"json": {"offering": "h100-sxm-1x-vm", "term": payload[:20]}}, True),
        ("POST", "/v1/quotes", {"json": {"offering": "h100-sxm-1x-vm", "term": "1h", "options": {payload: 1}}}, True),
        ("POST", "/v1/allocations", {"json": {"quote_id": payload}, "headers": key}, True),
        ("GET", f"/v1/allocations/{p}", {}, True),
        ("GET", f"/v1/quotes/{p}", {}, True),
        ("POST", f"/v1/allocations/{p}/stop", {"headers": key}, True),
        ("POST", f"/v1/allocations/{own_allocation}/extend", {"json": {"term": payload[:20]}, "headers": key}, True),
        ("GET", f"/v1/gpus/{p}", {}, False),
        ("GET", f"/v1/models/{p}", {}, False),
        ("GET", f"/v1/glossary/{p}", {}, False),
        ("GET", f"/v1/glossary?q={p}", {}, False),
        ("GET", f"/v1/offerings?gpu={p}&region={p}", {}, False),
        ("POST", "/v1/plan", {"json": {"model": payload}}, False),
        ("POST", "/v1/plan", {"json": {"model": "llama-3.1-8b", "gpu": payload, "weights": payload[:40]}}, False),
        ("POST", "/v1/recommend", {"json": {"model": "llama-3.1-8b", "gpu": payload}}, False),
        ("GET", "/v1/allocations", {"headers": {"Authorization": f"Bearer {payload}"}}, False),
    ]


def test_injection_strings_in_every_text_field_change_nothing_and_reveal_nothing(any_app: Any) -> None:
    victim, mallory = any_app.caller("victim"), any_app.caller("mallory")
    secret_quote = any_app.quote(victim)
    secret = any_app.client.post("/v1/allocations", json={"quote_id": secret_quote["id"]}, headers=victim.idem("v-1")).json()
    own = any_app.client.post("/v1/allocations", json={"quote_id": any_app.quote(mallory)["id"]}, headers=mallory.idem("m-1")).json()
    tables = set(inspect(any_app.store.engine).get_table_names())
    before = _counts(any_app.store.engine)

    for payload in PAYLOADS:
        for method, path, kwargs, authenticated in _requests(payload, own["id"]):
            kwargs = dict(kwargs)
            headers = {**(mallory.auth if authenticated else {}), **kwargs.pop("headers", {})}
            response = any_app.client.request(method, path, headers=headers, **kwargs)
            assert response.status_code < 500, f"{method} {path} with {payload!r}: {response.status_code} {response.text[:300]}"
            for hidden in (secret["id"], secret_quote["id"], victim.account_id):
                assert hidden not in response.text, f"{method} {path} with {payload!r} revealed {hidden}"
        account_id, _ = create_account(any_app.store.uow_factory(), payload, clock=any_app.app.state.clock)
        assert account_id.startswith("acct_")

    assert set(inspect(any_app.store.engine).get_table_names()) == tables
    after = _counts(any_app.store.engine)
    assert after["accounts"] == before["accounts"] + len(PAYLOADS)  # the names were stored as names, nothing else
    assert after["api_keys"] == before["api_keys"] + len(PAYLOADS)  # each new account's first key
    grown = ("accounts", "api_keys")
    assert {k: v for k, v in after.items() if k not in grown} == {k: v for k, v in before.items() if k not in grown}
    listed = any_app.client.get("/v1/allocations", headers=victim.auth).json()
    assert [a["id"] for a in listed["data"]] == [secret["id"]]


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_an_injection_string_as_an_idempotency_key_is_just_a_key(any_app: Any, payload: str) -> None:
    alice = any_app.caller("alice")
    quote = any_app.quote(alice)
    first = any_app.client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem(payload))
    again = any_app.client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem(payload))
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()
    with any_app.store.engine.connect() as conn:
        stored = conn.execute(select(IdempotencyKeyRow.key).where(IdempotencyKeyRow.account_id == alice.account_id)).scalars().all()
    assert stored == [payload]
