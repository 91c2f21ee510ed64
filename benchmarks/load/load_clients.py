"""The clients: N concurrent asyncio tasks over httpx, each an account with its own API key.

Roles (client index modulo 5):

* ``buyer``    quote one server of the bulk offering for 1 h, book it with a fresh idempotency key, repeat;
* ``retrier``  book with two identical requests sent at once plus one later retry (same key), then send the
               same key with a different quote and expect ``422 idempotency_key_reused``;
* ``racer`` ×2 race for the last servers of the race offering (stock set low), hold a won server a moment
               and terminate it (so the race goes on all run long);
* ``actor``    book, then stop (and replay the stop), start and extend by 1 h, each with its own key.

Every purchase-like request keeps its idempotency key for all its retries. A request is retried (same
key, same body) after a transport error (a killed worker, a dropped connection), a 5xx, or
``409 idempotency_request_in_progress``, until it gets a final answer or the grace period ends. A share
of first attempts (every 12th) hang up before the answer (a read timeout of a few milliseconds) and
then retry.

The clients keep their own record of every answer (:class:`KeyedRequest`); :mod:`load_checks` compares
it with the database at the end.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx

BULK = ("l4-1x-vm", "us-east")
"""Offering and region that everybody books (stock raised so it does not run out)."""
RACE = ("h100-sxm-8x-bm", "eu-north")
"""Offering and region whose last servers the racers fight over."""
BULK_STOCK = 100_000
RACE_STOCK = 3

ROLES = ("buyer", "retrier", "racer", "racer", "actor")
HANG_UP_EVERY = 12
"""Every 12th purchase-like request hangs up before its answer on its first attempt (then retries)."""
HANG_UP_AFTER_S = 0.003
RETRYABLE_CODES = {"idempotency_request_in_progress"}
LEAKY_KEYS = {"quote_id", "starts_at", "ends_at", "amount_usd", "total_usd", "lines", "account_id"}
"""Keys of an allocation or quote body: an answer to another account must carry none of them."""


@dataclass
class Answer:
    status: int
    body: Any
    replayed: bool
    latency_s: float


@dataclass
class KeyedRequest:
    """One purchase-like request as the client meant it: every attempt used the same key and body."""

    account_id: str
    operation: str  # buy | stop | start | extend | terminate
    key: str
    path: str
    body: dict[str, Any]
    answers: list[Answer] = field(default_factory=list)
    transport_errors: int = 0
    server_errors: int = 0
    hung_up: int = 0
    resolved: bool = False

    @property
    def final(self) -> Answer | None:
        return self.answers[-1] if self.resolved and self.answers else None

    @property
    def succeeded(self) -> bool:
        final = self.final
        return final is not None and 200 <= final.status < 300


@dataclass
class Caller:
    account_id: str
    api_key: str

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}


@dataclass
class Record:
    """Everything the clients saw."""

    keyed: list[KeyedRequest] = field(default_factory=list)
    quotes: dict[str, str] = field(default_factory=dict)  # quote id -> account id
    reuse_checks: list[tuple[str, int, str]] = field(default_factory=list)  # (key, status, code)
    violations: list[str] = field(default_factory=list)  # invariants broken in an answer, seen live
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    requests: int = 0
    race_wins: int = 0
    race_refusals: int = 0


class Budget:
    """Stops new work at ``deadline`` (monotonic) or after ``max_requests`` requests; retries may finish
    until ``grace_deadline``."""

    def __init__(self, seconds: float, max_requests: int, grace_s: float) -> None:
        now = time.monotonic()
        self.deadline = now + seconds
        self.grace_deadline = self.deadline + grace_s
        self.max_requests = max_requests
        self.sent = 0

    def open(self) -> bool:
        return time.monotonic() < self.deadline and self.sent < self.max_requests

    def in_grace(self) -> bool:
        return time.monotonic() < self.grace_deadline


class Clients:
    def __init__(self, client: httpx.AsyncClient, callers: list[Caller], budget: Budget, record: Record, seed: int) -> None:
        self.http = client
        self.callers = callers
        self.budget = budget
        self.record = record
        self.rng = random.Random(seed)
        self.keyed_sent = 0

    # -- one request ---------------------------------------------------------------------------

    async def _send(self, kind: str, method: str, path: str, *, headers: dict[str, str], json: Any = None,
                    hang_up: bool = False) -> Answer:
        self.budget.sent += 1
        self.record.requests += 1
        timeout = httpx.Timeout(60.0, read=HANG_UP_AFTER_S) if hang_up else httpx.Timeout(60.0)
        began = time.perf_counter()
        response = await self.http.request(method, path, headers=headers, json=json, timeout=timeout)
        latency = time.perf_counter() - began
        self.record.latencies[kind].append(latency)
        self.record.statuses[f"{kind} {response.status_code}"] += 1
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return Answer(response.status_code, body, response.headers.get("idempotent-replayed") == "true", latency)

    async def keyed(self, caller: Caller, request: KeyedRequest, *, allow_hang_up: bool = True) -> KeyedRequest:
        """Send ``request`` until it gets a final answer (same key, same body on every try)."""
        headers = {**caller.auth, "Idempotency-Key": request.key}
        first = True
        delay = 0.05
        self.keyed_sent += 1
        hang_up_first = allow_hang_up and self.keyed_sent % HANG_UP_EVERY == 0
        while self.budget.in_grace():
            hang_up = first and hang_up_first
            first = False
            try:
                answer = await self._send(request.operation, "POST", request.path, headers=headers, json=request.body,
                                          hang_up=hang_up)
            except httpx.TimeoutException:
                if hang_up:
                    request.hung_up += 1
                else:
                    request.transport_errors += 1
                await asyncio.sleep(delay)
                continue
            except httpx.TransportError:  # connection refused or reset: a worker died, or the server restarts
                request.transport_errors += 1
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            request.answers.append(answer)
            code = answer.body.get("code") if isinstance(answer.body, dict) else None
            if answer.status >= 500:
                request.server_errors += 1
            elif answer.status == 409 and code in RETRYABLE_CODES:
                pass
            else:
                request.resolved = True
                return request
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        return request

    async def quote(self, caller: Caller, offering: tuple[str, str], term: str = "1h") -> str | None:
        """A new quote (plain POST, retried on transport errors: a lost answer only leaves an unused quote)."""
        payload = {"offering": offering[0], "region": offering[1], "quantity": 1, "term": term, "options": {}}
        while self.budget.in_grace():
            try:
                answer = await self._send("quote", "POST", "/v1/quotes", headers=caller.auth, json=payload)
            except httpx.TransportError:
                await asyncio.sleep(0.1)
                continue
            if answer.status == 201:
                quote_id: str = answer.body["id"]
                self.record.quotes[quote_id] = caller.account_id
                return quote_id
            if answer.status < 500:
                self.record.violations.append(f"quote refused: {answer.status} {str(answer.body)[:200]}")
                return None
            await asyncio.sleep(0.1)
        return None

    def _new(self, caller: Caller, operation: str, path: str, body: dict[str, Any]) -> KeyedRequest:
        request = KeyedRequest(account_id=caller.account_id, operation=operation,
                               key=f"{operation}-{secrets.token_hex(8)}", path=path, body=body)
        self.record.keyed.append(request)
        return request

    async def buy(self, caller: Caller, quote_id: str) -> KeyedRequest:
        return await self.keyed(caller, self._new(caller, "buy", "/v1/allocations", {"quote_id": quote_id}))

    async def act(self, caller: Caller, allocation_id: str, action: str, body: dict[str, Any] | None = None) -> KeyedRequest:
        request = self._new(caller, action, f"/v1/allocations/{allocation_id}/{action}", body or {})
        return await self.keyed(caller, request)

    # -- roles ---------------------------------------------------------------------------------

    async def buyer(self, caller: Caller) -> None:
        while self.budget.open():
            quote_id = await self.quote(caller, BULK)
            if quote_id is not None:
                await self.buy(caller, quote_id)

    async def retrier(self, caller: Caller) -> None:
        while self.budget.open():
            quote_id = await self.quote(caller, BULK)
            if quote_id is None:
                continue
            request = self._new(caller, "buy", "/v1/allocations", {"quote_id": quote_id})
            twin = KeyedRequest(**{**request.__dict__, "answers": []})  # same key and body, its own answers
            await asyncio.gather(self.keyed(caller, request, allow_hang_up=False), self.keyed(caller, twin, allow_hang_up=False))
            request.answers.extend(twin.answers)
            request.transport_errors += twin.transport_errors
            request.server_errors += twin.server_errors
            request.resolved = request.resolved and twin.resolved
            again = KeyedRequest(**{**request.__dict__, "answers": []})
            await self.keyed(caller, again)
            request.answers.extend(again.answers)
            request.resolved = request.resolved and again.resolved
            if not self.budget.open():
                break
            other = await self.quote(caller, BULK)
            if other is not None:  # the same key for a different purchase must be refused
                try:
                    answer = await self._send("buy", "POST", "/v1/allocations",
                                              headers={**caller.auth, "Idempotency-Key": request.key}, json={"quote_id": other})
                except httpx.TransportError:
                    continue
                code = answer.body.get("code", "") if isinstance(answer.body, dict) else ""
                if answer.status < 500:
                    self.record.reuse_checks.append((request.key, answer.status, code))

    async def racer(self, caller: Caller) -> None:
        while self.budget.open():
            quote_id = await self.quote(caller, RACE)
            if quote_id is None:
                continue
            bought = await self.buy(caller, quote_id)
            if bought.succeeded:
                self.record.race_wins += 1
                await asyncio.sleep(self.rng.uniform(0.0, 0.3))
                await self.act(caller, bought.final.body["id"], "terminate")  # type: ignore[union-attr]
            elif bought.final is not None and bought.final.status == 409:
                self.record.race_refusals += 1
                await asyncio.sleep(self.rng.uniform(0.0, 0.05))

    async def actor(self, caller: Caller) -> None:
        while self.budget.open():
            quote_id = await self.quote(caller, BULK)
            if quote_id is None:
                continue
            bought = await self.buy(caller, quote_id)
            if not bought.succeeded:
                continue
            booked = bought.final.body  # type: ignore[union-attr]
            stopped = await self.act(caller, booked["id"], "stop")
            if stopped.succeeded:
                body = stopped.final.body  # type: ignore[union-attr]
                if (body["ends_at"], body["amount_usd"]) != (booked["ends_at"], booked["amount_usd"]) or "notice" not in body:
                    self.record.violations.append(f"stop changed the paid term or said nothing: {booked['id']}")
                replay = KeyedRequest(**{**stopped.__dict__, "answers": []})
                await self.keyed(caller, replay, allow_hang_up=False)
                stopped.answers.extend(replay.answers)
            await self.act(caller, booked["id"], "start")
            await self.act(caller, booked["id"], "extend", {"term": "1h"})

    async def run(self) -> None:
        tasks = [getattr(self, ROLES[i % len(ROLES)])(caller) for i, caller in enumerate(self.callers)]
        await asyncio.gather(*tasks)


async def hammer_healthz(client: httpx.AsyncClient, clients: int, budget: Budget, record: Record) -> None:
    """The stack's own ceiling: the same number of clients asking GET /v1/healthz as fast as they can."""

    async def one() -> None:
        while budget.open():
            budget.sent += 1
            began = time.perf_counter()
            try:
                response = await client.get("/v1/healthz")
            except httpx.TransportError:
                record.statuses["healthz transport-error"] += 1
                continue
            record.latencies["healthz"].append(time.perf_counter() - began)
            record.statuses[f"healthz {response.status_code}"] += 1

    await asyncio.gather(*(one() for _ in range(clients)))


async def cross_account_probe(client: httpx.AsyncClient, callers: list[Caller], owned: dict[str, list[tuple[str, str]]],
                              per_account: int = 2) -> list[str]:
    """Each account asks for the next account's allocations and quotes, and tries to stop them: all must be
    404 with none of the other account's data; its own list must hold only what the database says it owns.

    ``owned``: account id → [(allocation id, quote id)] from the database. Returns the leaks (empty when none).
    """
    leaks: list[str] = []

    async def probe(i: int, caller: Caller) -> None:
        victim = callers[(i + 1) % len(callers)]
        for allocation_id, quote_id in owned.get(victim.account_id, [])[:per_account]:
            probes = [
                ("GET", f"/v1/allocations/{allocation_id}", None, {}),
                ("GET", f"/v1/quotes/{quote_id}", None, {}),
                ("POST", f"/v1/allocations/{allocation_id}/stop", None, {"Idempotency-Key": f"probe-{secrets.token_hex(6)}"}),
            ]
            for method, path, body, extra in probes:
                response = await client.request(method, path, json=body, headers={**caller.auth, **extra})
                shown = response.json() if response.headers.get("content-type", "").endswith("json") else {}
                if response.status_code != 404 or LEAKY_KEYS & set(shown):
                    leaks.append(f"{caller.account_id} {method} {path} -> {response.status_code} {sorted(shown)}")
        listed = await client.get("/v1/allocations", headers=caller.auth)
        mine = {a for a, _ in owned.get(caller.account_id, [])}
        for item in listed.json().get("data", []):
            if item["id"] not in mine:
                leaks.append(f"{caller.account_id} lists {item['id']}, which it did not buy")

    await asyncio.gather(*(probe(i, caller) for i, caller in enumerate(callers)))
    return leaks
