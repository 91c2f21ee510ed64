"""Hostile clients for ``run.py --hostile``: what a caller without an API key can send, all at once.

Each pattern is a set of asyncio tasks sending as fast as the server answers until the phase ends, on its own
connections (never the buyers' pool):

* ``hub_plan``        ``POST /v1/plan`` of a Hub id (``org/name``, a new one every time: no cache helps);
* ``recommend_train`` ``POST /v1/recommend`` training sweeps of the largest registry models (the most costly
                      public computation: a few hundred ms of CPU each, measured in-process);
* ``plan_large``      ``POST /v1/plan`` training of large models with a fresh token count each time;
* ``glossary_long``   ``GET /v1/glossary?q=`` with a 200-character random query (the longest allowed);
* ``invalid_key``     ``GET /v1/allocations`` with a random ``Bearer`` key (the 401 path: hash + key lookup);
* ``slow_body``       a ``POST`` declaring 1,000 bytes and sending 10 (the server must cut it off: 408);
* ``bad_length``      ``Content-Length: abc`` (400) and an oversized declared body (``Content-Length`` 2 MiB: 413);
* ``held_open``       many connections opened and kept open without a complete request.

Every answer is tallied by pattern and status; a 500 from any of them fails the run's no-500 check.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import string
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import httpx

PATTERNS = ("hub_plan", "recommend_train", "plan_large", "glossary_long", "invalid_key", "slow_body", "bad_length",
            "held_open")
LARGE_MODELS = ("llama-3.1-405b", "llama-3.1-70b", "qwen2.5-72b", "mixtral-8x22b", "deepseek-v3")
"""Registry models among the largest (unknown names just answer 404 quickly, which is also fine)."""


@dataclass
class HostileRecord:
    statuses: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    requests: int = 0
    held_peak: int = 0
    cpu_s: float = 0.0

    def tally(self, pattern: str, outcome: str | int) -> None:
        self.requests += 1
        self.statuses[f"{pattern} {outcome}"] += 1


class Hostile:
    """Unauthenticated clients against ``host:port`` until ``deadline`` (monotonic)."""

    def __init__(self, base_url: str, deadline: float, record: HostileRecord, *, tasks_per_pattern: int = 4,
                 held_connections: int = 200, patterns: tuple[str, ...] = PATTERNS, seed: int = 13) -> None:
        self.base_url = base_url
        host_port = base_url.split("://", 1)[1]
        self.host, _, port = host_port.partition(":")
        self.port = int(port)
        self.deadline = deadline
        self.record = record
        self.tasks_per_pattern = tasks_per_pattern
        self.held_connections = held_connections
        self.patterns = patterns
        self.rng = random.Random(seed)

    def _open(self) -> bool:
        return time.monotonic() < self.deadline

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=self.tasks_per_pattern * 8, max_keepalive_connections=self.tasks_per_pattern * 8)
        async with httpx.AsyncClient(base_url=self.base_url, limits=limits, timeout=30) as http:
            work: list[Any] = []
            for pattern in self.patterns:
                if pattern == "held_open":
                    work.append(self.held_open())
                    continue
                loop = getattr(self, pattern)
                work.extend(loop(http) for _ in range(self.tasks_per_pattern))
            await asyncio.gather(*work)

    async def _http(self, pattern: str, http: httpx.AsyncClient, method: str, path: str, **kwargs: Any) -> None:
        try:
            response = await http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            self.record.tally(pattern, type(exc).__name__)
            await asyncio.sleep(0.05)
            return
        self.record.tally(pattern, response.status_code)
        if response.status_code in (429, 503):  # an attacker would not wait; a polite client would: do not
            await asyncio.sleep(0)

    # -- HTTP patterns ------------------------------------------------------------------------

    async def hub_plan(self, http: httpx.AsyncClient) -> None:
        while self._open():
            model = f"org{secrets.token_hex(3)}/model-{secrets.token_hex(4)}"
            await self._http("hub_plan", http, "POST", "/v1/plan", json={"model": model, "task": "inference"})

    async def recommend_train(self, http: httpx.AsyncClient) -> None:
        while self._open():
            body = {"model": self.rng.choice(LARGE_MODELS), "task": "train", "term": "1h",
                    "train_tokens": self.rng.randint(10**9, 10**12)}
            await self._http("recommend_train", http, "POST", "/v1/recommend", json=body)

    async def plan_large(self, http: httpx.AsyncClient) -> None:
        while self._open():
            body = {"model": self.rng.choice(LARGE_MODELS), "task": "train", "gpu": "h100",
                    "tokens": self.rng.randint(10**9, 10**12)}
            await self._http("plan_large", http, "POST", "/v1/plan", json=body)

    async def glossary_long(self, http: httpx.AsyncClient) -> None:
        letters = string.ascii_lowercase + " "
        while self._open():
            q = "".join(self.rng.choice(letters) for _ in range(200))
            await self._http("glossary_long", http, "GET", "/v1/glossary", params={"q": q})

    async def invalid_key(self, http: httpx.AsyncClient) -> None:
        while self._open():
            headers = {"Authorization": f"Bearer agpu_{secrets.token_urlsafe(32)}"}
            await self._http("invalid_key", http, "GET", "/v1/allocations", headers=headers)

    # -- raw-socket patterns ------------------------------------------------------------------

    async def _raw(self, pattern: str, request: bytes, *, wait_s: float = 10.0) -> None:
        """Send ``request`` on a new connection, read the status line of the answer (or note the silence)."""
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 5)
        except (OSError, TimeoutError) as exc:
            self.record.tally(pattern, type(exc).__name__)
            await asyncio.sleep(0.05)
            return
        try:
            writer.write(request)
            await writer.drain()
            line = await asyncio.wait_for(reader.readline(), wait_s)
            parts = line.split()
            self.record.tally(pattern, int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else "closed")
        except (OSError, TimeoutError):
            self.record.tally(pattern, "no answer")
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass

    def _post(self, path: str, headers: str, body: bytes) -> bytes:
        return (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n{headers}\r\n").encode() + body

    async def slow_body(self, _http: httpx.AsyncClient) -> None:
        while self._open():
            await self._raw("slow_body", self._post("/v1/plan", "Content-Length: 1000\r\n", b'{"model": "'))

    async def bad_length(self, _http: httpx.AsyncClient) -> None:
        while self._open():
            await self._raw("bad_length", self._post("/v1/plan", "Content-Length: abc\r\n", b"{}"))
            await self._raw("oversized", self._post("/v1/recommend", f"Content-Length: {2 * 1024 * 1024}\r\n", b"{" * 4096))

    async def held_open(self) -> None:
        """Keep ``held_connections`` connections open, each with half a request line; reopen what the server closes."""
        held: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        try:
            while self._open():
                while len(held) < self.held_connections and self._open():
                    try:
                        reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port), 5)
                        writer.write(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n")  # never finished
                        held.append((reader, writer))
                        self.record.tally("held_open", "opened")
                    except (OSError, TimeoutError) as exc:
                        self.record.tally("held_open", type(exc).__name__)
                        await asyncio.sleep(0.1)
                        break
                self.record.held_peak = max(self.record.held_peak, len(held))
                await asyncio.sleep(0.5)
                alive = []
                for reader, writer in held:
                    if reader.at_eof() or writer.is_closing():
                        self.record.tally("held_open", "closed by server")
                        writer.close()
                    else:
                        alive.append((reader, writer))
                held = alive
        finally:
            for _, writer in held:
                writer.close()


def main(argv: list[str] | None = None) -> int:
    """``python load_hostile.py URL SECONDS TASKS HELD PATTERNS``: run the attackers in a process of their own
    (so their client-side work does not slow the buyers' event loop) and print their record as JSON."""
    import json
    import sys

    url, seconds, tasks, held, patterns = (argv if argv is not None else sys.argv[1:])
    record = HostileRecord()
    hostile = Hostile(url, time.monotonic() + float(seconds), record, tasks_per_pattern=int(tasks),
                      held_connections=int(held), patterns=tuple(p for p in patterns.split(",") if p))
    asyncio.run(hostile.run())
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"statuses": dict(record.statuses), "requests": record.requests, "held_peak": record.held_peak,
                      "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
