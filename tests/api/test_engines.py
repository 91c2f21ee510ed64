"""The API on both stores (SQLite and the PostgreSQL at 127.0.0.1:5432): booking once, also under racing twins."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from fastapi.testclient import TestClient

from anchorgpu.accounts import create_account
from anchorgpu.api.app import create_app
from anchorgpu.config import Settings


@pytest.fixture
def engine_client(db_url: str, fixed_clock: Any) -> Any:
    app = create_app(Settings(database_url=db_url, offline=True), clock=fixed_clock, session_secret="engines")
    with TestClient(app, raise_server_exceptions=False) as client:
        client.get("/v1/healthz")
        _, key = create_account(app.state.store.uow_factory(), "racer", clock=fixed_clock)
        yield client, {"Authorization": f"Bearer {key}"}
    app.state.store.dispose()


def test_twins_racing_with_one_key_book_one_allocation_and_agree(engine_client: Any) -> None:
    client, auth = engine_client
    quote = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "term": "1w"}, headers=auth).json()

    def buy(_: int) -> Any:
        return client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers={**auth, "Idempotency-Key": "same-key"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(buy, range(8)))
    created = [a for a in answers if a.status_code == 201]
    assert created, [a.text for a in answers]
    assert all(a.status_code in (201, 409) for a in answers), [a.text for a in answers]
    assert all(a.json()["code"] == "idempotency_request_in_progress" for a in answers if a.status_code == 409)
    assert len({a.json()["id"] for a in created}) == 1
    assert sum(1 for a in created if a.headers.get("idempotent-replayed") != "true") == 1
    assert client.get("/v1/allocations", headers=auth).json()["count"] == 1


def test_racing_buyers_of_the_last_servers_never_oversell(engine_client: Any) -> None:
    client, auth = engine_client
    offering = client.get("/v1/offerings", params={"gpu": "h100", "kind": "bare-metal", "region": "eu-north"}).json()["data"][0]
    stock = offering["stock"]
    quotes = [client.post("/v1/quotes", json={"offering": offering["id"], "region": "eu-north", "term": "1w"}, headers=auth).json()
              for _ in range(stock + 3)]

    def buy(index: int) -> Any:
        return client.post("/v1/allocations", json={"quote_id": quotes[index]["id"]}, headers={**auth, "Idempotency-Key": f"buyer-{index}"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(buy, range(len(quotes))))
    assert sum(a.status_code == 201 for a in answers) == stock
    assert {a.json()["code"] for a in answers if a.status_code != 201} <= {"insufficient_capacity", "idempotency_request_in_progress"}
    assert client.get("/v1/allocations", headers=auth).json()["count"] == stock
