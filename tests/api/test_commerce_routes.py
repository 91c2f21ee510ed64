"""Quotes and allocations over HTTP: auth, isolation, idempotency on the wire, stop semantics, errors."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient


def test_quotes_need_an_api_key(client: TestClient, problem: Any) -> None:
    response = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm"})
    assert response.status_code == 401
    assert problem(response)["code"] == "authentication_required"
    assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer agpu_not-a-key", "Basic dXNlcjpwYXNz", "Bearer", "agpu_raw-key-without-scheme"])
def test_a_bad_api_key_is_401(client: TestClient, problem: Any, header: str) -> None:
    response = client.get("/v1/allocations", headers={"Authorization": header})
    assert response.status_code == 401
    assert problem(response)["code"] == "authentication_required"


def test_quote_for_a_month_of_h100_is_priced_at_the_list_price(client: TestClient, alice: Any) -> None:
    response = client.post("/v1/quotes", json={"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1month", "options": {}}, headers=alice.auth)
    assert response.status_code == 201
    quote = response.json()
    assert quote["id"].startswith("q_")
    assert quote["term"] == {"unit": "month", "count": 1, "hours": 720}
    # $2,190 per month for 1x H100 (issue 5); the 730-h comparison rate is $3.00, the 720-h effective rate $3.04
    assert quote["total_usd"] == "2190.00"
    assert quote["per_gpu_hour_usd"] == "3.00"
    assert quote["effective_per_gpu_hour_usd"] == "3.04"
    assert quote["gpu_hours"] == 720


def test_quote_is_readable_again_by_its_owner_only(client: TestClient, alice: Any, bob: Any, quote_for: Any, problem: Any) -> None:
    quote = quote_for(alice)
    again = client.get(f"/v1/quotes/{quote['id']}", headers=alice.auth)
    assert again.status_code == 200
    assert again.json()["total_usd"] == quote["total_usd"]
    assert again.json()["used"] is False
    foreign = client.get(f"/v1/quotes/{quote['id']}", headers=bob.auth)
    assert foreign.status_code == 404
    assert problem(foreign)["code"] == "unknown_quote"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"offering": "h100-sxm-1x-vm", "term": "1 fortnight"}, 422, "invalid_term"),
        ({"offering": "h100-sxm-1x-vm", "quantity": 0}, 422, "invalid_request"),
        ({"offering": "h100-sxm-1x-vm", "quantity": 0.5}, 422, "invalid_request"),
        ({"offering": "h100-sxm-1x-vm", "surprise": 1}, 422, "invalid_request"),
        ({"offering": "h100-sxm-1x-vmm"}, 404, "unknown_offering"),
    ],
)
def test_bad_quote_requests_are_refused_with_a_code(client: TestClient, alice: Any, problem: Any, body: dict[str, Any], status: int, code: str) -> None:
    response = client.post("/v1/quotes", json=body, headers=alice.auth)
    assert response.status_code == status, response.text
    assert problem(response)["code"] == code


def test_buying_needs_an_idempotency_key(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    quote = quote_for(alice)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.auth)
    assert response.status_code == 400
    assert problem(response)["code"] == "idempotency_key_missing"
    assert client.get("/v1/allocations", headers=alice.auth).json()["count"] == 0


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "tab\there"])
def test_a_malformed_idempotency_key_is_400(client: TestClient, alice: Any, quote_for: Any, problem: Any, key: str) -> None:
    quote = quote_for(alice)
    headers: dict[str, Any] = {**alice.auth, "Idempotency-Key": key.encode("utf-8")}
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=headers)
    assert response.status_code == 400
    assert problem(response)["code"] in ("idempotency_key_invalid", "idempotency_key_missing")


def test_a_255_character_key_is_accepted(client: TestClient, alice: Any, quote_for: Any) -> None:
    quote = quote_for(alice)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("k" * 255))
    assert response.status_code == 201


def test_buying_a_quote_books_it_and_a_retry_replays_the_same_answer(client: TestClient, alice: Any, quote_for: Any) -> None:
    quote = quote_for(alice)
    first = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("buy-1"))
    assert first.status_code == 201
    assert "idempotent-replayed" not in first.headers
    allocation = first.json()
    assert allocation["quote_id"] == quote["id"]
    assert allocation["state"] == "active"
    assert allocation["amount_usd"] == "2190.00"
    retry = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("buy-1"))
    assert retry.status_code == 201
    assert retry.headers["idempotent-replayed"] == "true"
    assert retry.json() == allocation
    assert client.get("/v1/allocations", headers=alice.auth).json()["count"] == 1


def test_the_same_key_with_another_request_is_422_reused(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    one, two = quote_for(alice), quote_for(alice)
    assert client.post("/v1/allocations", json={"quote_id": one["id"]}, headers=alice.idem("k1")).status_code == 201
    response = client.post("/v1/allocations", json={"quote_id": two["id"]}, headers=alice.idem("k1"))
    assert response.status_code == 422
    assert problem(response)["code"] == "idempotency_key_reused"
    assert client.get("/v1/allocations", headers=alice.auth).json()["count"] == 1


def test_a_second_purchase_of_a_used_quote_is_409(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    quote = quote_for(alice)
    assert client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("a")).status_code == 201
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("b"))
    assert response.status_code == 409
    assert problem(response)["code"] == "quote_already_used"


def test_an_expired_quote_is_409_and_books_nothing(client: TestClient, alice: Any, quote_for: Any, clock: Any, problem: Any) -> None:
    quote = quote_for(alice)
    clock.advance(hours=25)  # quotes hold 24 h by default
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("late"))
    assert response.status_code == 409
    assert problem(response)["code"] == "quote_expired"
    assert client.get("/v1/allocations", headers=alice.auth).json()["count"] == 0


def test_buying_beyond_stock_is_409_insufficient_capacity(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    offering = client.get("/v1/offerings", params={"gpu": "h100", "kind": "bare-metal", "region": "eu-north"}).json()["data"][0]
    quote = quote_for(alice, offering=offering["id"], region="eu-north", quantity=offering["stock"] + 1)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("too-many"))
    assert response.status_code == 409
    assert problem(response)["code"] == "insufficient_capacity"
    replay = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("too-many"))
    assert replay.status_code == 409  # a business outcome is stored under the key and replayed
    assert replay.headers.get("idempotent-replayed") == "true"


def test_another_accounts_allocation_is_404_for_read_and_every_action(client: TestClient, alice: Any, bob: Any, quote_for: Any, problem: Any) -> None:
    quote = quote_for(alice)
    allocation = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("mine")).json()
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=bob.auth).status_code == 404
    assert client.get("/v1/allocations", headers=bob.auth).json()["count"] == 0
    for action in ("stop", "start", "terminate"):
        response = client.post(f"/v1/allocations/{allocation['id']}/{action}", headers=bob.idem(f"b-{action}"))
        assert response.status_code == 404
        assert problem(response)["code"] == "unknown_allocation"
    response = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "1w"}, headers=bob.idem("b-extend"))
    assert response.status_code == 404
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["state"] == "active"


def test_buying_another_accounts_quote_is_404(client: TestClient, alice: Any, bob: Any, quote_for: Any, problem: Any) -> None:
    quote = quote_for(alice)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=bob.idem("steal"))
    assert response.status_code == 404
    assert problem(response)["code"] == "unknown_quote"


def _book(client: TestClient, caller: Any, quote_for: Any) -> dict[str, Any]:
    quote = quote_for(caller)
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=caller.idem(f"buy-{quote['id']}"))
    assert response.status_code == 201
    body: dict[str, Any] = response.json()
    return body


def test_stop_keeps_the_end_and_the_price_and_says_so(client: TestClient, alice: Any, quote_for: Any, clock: Any) -> None:
    allocation = _book(client, alice, quote_for)
    clock.advance(hours=5)
    response = client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("stop-1"))
    assert response.status_code == 200
    stopped = response.json()
    assert stopped["state"] == "stopped"
    assert stopped["ends_at"] == allocation["ends_at"]
    assert stopped["amount_usd"] == allocation["amount_usd"]
    assert "does not pause the paid term" in stopped["notice"]
    replay = client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("stop-1"))
    assert replay.status_code == 200
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == stopped


def test_stop_twice_with_new_keys_is_a_409_state_conflict(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    assert client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("s1")).status_code == 200
    response = client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("s2"))
    assert response.status_code == 409
    assert problem(response)["code"] == "allocation_state_conflict"


def test_start_after_stop_makes_it_active_again(client: TestClient, alice: Any, quote_for: Any) -> None:
    allocation = _book(client, alice, quote_for)
    client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("s"))
    response = client.post(f"/v1/allocations/{allocation['id']}/start", headers=alice.idem("go"))
    assert response.status_code == 200
    assert response.json()["state"] == "active"


def test_start_after_the_term_ended_is_409_expired(client: TestClient, alice: Any, quote_for: Any, clock: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    client.post(f"/v1/allocations/{allocation['id']}/stop", headers=alice.idem("s"))
    clock.advance(hours=721)
    response = client.post(f"/v1/allocations/{allocation['id']}/start", headers=alice.idem("go"))
    assert response.status_code == 409
    assert problem(response)["code"] == "allocation_expired"
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["state"] == "expired"


def test_extend_adds_a_paid_week_to_the_end(client: TestClient, alice: Any, quote_for: Any) -> None:
    from datetime import datetime, timedelta

    allocation = _book(client, alice, quote_for)
    response = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "1w"}, headers=alice.idem("ext"))
    assert response.status_code == 200
    extended = response.json()
    assert datetime.fromisoformat(extended["ends_at"]) - datetime.fromisoformat(allocation["ends_at"]) == timedelta(hours=168)
    assert extended["amount_usd"] != allocation["amount_usd"]
    replay = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "1w"}, headers=alice.idem("ext"))
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json()["ends_at"] == extended["ends_at"]
    other = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "2w"}, headers=alice.idem("ext"))
    assert other.status_code == 422


def test_extend_with_a_bad_term_is_422_and_changes_nothing(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    response = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "-1w"}, headers=alice.idem("bad"))
    assert response.status_code == 422
    assert problem(response)["code"] == "invalid_term"
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["ends_at"] == allocation["ends_at"]


def test_terminate_is_final(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    response = client.post(f"/v1/allocations/{allocation['id']}/terminate", headers=alice.idem("end"))
    assert response.status_code == 200
    assert response.json()["state"] == "terminated"
    again = client.post(f"/v1/allocations/{allocation['id']}/start", headers=alice.idem("revive"))
    assert again.status_code == 409


def test_actions_need_an_idempotency_key(client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    allocation = _book(client, alice, quote_for)
    for action in ("stop", "start", "terminate"):
        response = client.post(f"/v1/allocations/{allocation['id']}/{action}", headers=alice.auth)
        assert response.status_code == 400
        assert problem(response)["code"] == "idempotency_key_missing"
    response = client.post(f"/v1/allocations/{allocation['id']}/extend", json={"term": "1w"}, headers=alice.auth)
    assert response.status_code == 400
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["state"] == "active"


def test_allocation_list_and_get_show_the_contract_keys(client: TestClient, alice: Any, quote_for: Any) -> None:
    allocation = _book(client, alice, quote_for)
    listed = client.get("/v1/allocations", headers=alice.auth).json()
    assert listed["count"] == 1
    assert {"id", "quote_id", "offering", "gpus", "state", "starts_at", "ends_at", "amount_usd"} <= listed["data"][0].keys()
    assert client.get(f"/v1/allocations/{allocation['id']}", headers=alice.auth).json()["id"] == allocation["id"]


def test_an_unknown_allocation_is_404(client: TestClient, alice: Any, problem: Any) -> None:
    response = client.get("/v1/allocations/al_nope", headers=alice.auth)
    assert response.status_code == 404
    assert problem(response)["code"] == "unknown_allocation"


def test_a_twin_still_in_flight_is_409_in_progress(app: Any, client: TestClient, alice: Any, quote_for: Any, problem: Any) -> None:
    """A twin holding the key's lock past the lock timeout: the service says in-progress, the wire says 409."""
    from sqlalchemy.exc import OperationalError

    from anchorgpu.api.deps import get_uow_factory

    quote = quote_for(alice)
    real_factory = app.state.store.uow_factory

    class LockedUow:
        """The real unit of work, except that waiting for the key's row lock times out (as behind a twin)."""

        def __init__(self) -> None:
            self._real = real_factory()

        def __getattr__(self, name: str) -> Any:
            return getattr(self._real, name)

        def __enter__(self) -> Any:
            self._real.__enter__()
            return self

        def __exit__(self, *exc: object) -> None:
            self._real.__exit__(*exc)

        def set_lock_timeout(self, seconds: float) -> None:
            raise OperationalError("SELECT ... FOR UPDATE", {}, Exception("database is locked"))

    app.dependency_overrides[get_uow_factory] = lambda: LockedUow
    response = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("twin"))
    app.dependency_overrides.clear()
    assert response.status_code == 409
    assert problem(response)["code"] == "idempotency_request_in_progress"
    retry = client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("twin"))
    assert retry.status_code == 201  # the in-progress answer was not stored: the retry books
