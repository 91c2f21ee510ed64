"""The real app in-process for tests: an account's caller headers and the app with a client that answers 500s
instead of raising them (so a 500 is seen as a 500). Used by the reliability and hardening conftests."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient


@dataclass(frozen=True)
class Caller:
    account_id: str
    api_key: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    def idem(self, key: str) -> dict[str, str]:
        return {**self.auth, "Idempotency-Key": key}


@dataclass
class ServedApp:
    """The app, its test client and helpers to act on it as an account."""

    app: Any
    client: TestClient

    @property
    def store(self) -> Any:
        return self.app.state.store

    def caller(self, name: str) -> Caller:
        from anchorgpu.accounts import create_account

        account_id, api_key = create_account(self.store.uow_factory(), name, clock=self.app.state.clock)
        return Caller(account_id, api_key)

    def quote(self, caller: Caller, **body: Any) -> dict[str, Any]:
        payload = {"offering": "h100-sxm-1x-vm", "quantity": 1, "term": "1month", "options": {}, **body}
        response = self.client.post("/v1/quotes", json=payload, headers=caller.auth)
        assert response.status_code == 201, response.text
        quote: dict[str, Any] = response.json()
        return quote

    def book(self, caller: Caller, key: str) -> dict[str, Any]:
        response = self.client.post("/v1/allocations", json={"quote_id": self.quote(caller)["id"]}, headers=caller.idem(key))
        assert response.status_code == 201, response.text
        allocation: dict[str, Any] = response.json()
        return allocation
