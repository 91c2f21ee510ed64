"""Per-address rate limits and a concurrency cap on the public computations (``anchorgpu serve``).

The planner, the recommender and the GPU comparison are open to callers without a key, and one training
``POST /v1/recommend`` of a large model costs a few hundred ms of CPU. Unbounded, a single address sending
them in a loop takes the CPU the booking workers need (``benchmarks/load/run.py --hostile`` measured the
booking p99 at 2.3x its baseline with four such loops). So, in each worker process:

- **compute** routes (``POST /v1/plan``, ``POST /v1/recommend``, ``GET /v1/gpus/compare``, ``GET /v1/models/{name}``
  and the pages that run the same code: ``/plan``, ``/recommend``, ``/gpus/compare`` with a query) are limited
  per client address with a moving window (:data:`COMPUTE_LIMITS`, a recommendation counting
  :data:`RECOMMEND_COST`), whatever headers the request carries;
- every other public ``GET`` under ``/v1`` (glossary search, catalog, model and GPU lists) has a looser limit
  per address (:data:`PUBLIC_LIMITS`);
- at most :data:`MAX_CONCURRENT_COMPUTE` compute requests run at once in a worker, whichever addresses send
  them: more answer ``503 server_busy`` at once (no queue that an attacker could fill);
- **failed authentications**: an address whose keys answered 401 more than :data:`AUTH_FAILURE_LIMITS` times
  gets 429 for any further key it presents on any ``/v1`` route (a key sent to a public route is checked too),
  without a database lookup, except a key that this worker has seen succeed (kept as a SHA-256 in a bounded set,
  only to skip the limiter: such a key is still checked in the database on every request, so a revoke holds at
  once). Random keys sent in a loop (each a key lookup) so cost the server a hash, while the buyers behind the
  same address go on; the same address without a key keeps the public routes (their own limits apply);
- otherwise quotes, allocations and keys (authenticated, per account) and ``/v1/healthz`` are never limited here.

A refused request answers ``429 rate_limited`` (problem+json) with ``Retry-After`` in whole seconds; the counters
live in the worker's memory (the ``limits`` library's moving window), so with ``--workers N`` an address gets
up to N times the figures below. The client address is the TCP peer (``anchorgpu serve`` does not trust
``X-Forwarded-For``).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from limits import RateLimitItem, parse_many
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

__all__ = ["AUTH_FAILURE_LIMITS", "COMPUTE_LIMITS", "MAX_CONCURRENT_COMPUTE", "PUBLIC_LIMITS", "RECOMMEND_COST", "PublicRateLimitMiddleware", "refusals", "route_tier"]

COMPUTE_LIMITS = "5/second;60/minute"
"""Per client address and worker: planner, recommender and comparison computations, in units: a recommendation
(a sweep over the catalog, up to a few hundred ms) costs :data:`RECOMMEND_COST`, anything else 1. So one address
gets 60 plans (the planner page asks as you type) or 20 recommendations a minute from each worker."""
RECOMMEND_COST = 3
PUBLIC_LIMITS = "5/second;120/minute"
"""Per client address and worker: every other public ``GET`` under ``/v1`` (glossary, catalog, lists)."""
MAX_CONCURRENT_COMPUTE = 2
"""Compute requests running at once in one worker, all addresses together; more answer 503 at once."""
AUTH_FAILURE_LIMITS = "2/second;20/minute"
"""Per client address and worker: 401 answers before further unknown keys from it answer 429."""
KNOWN_GOOD_KEYS = 10_000
"""Hashes of keys seen to succeed, kept per worker (oldest dropped first)."""

_COMPUTE = (
    ("POST", re.compile(r"^/v1/(plan|recommend)/?$")),
    ("GET", re.compile(r"^/v1/gpus/compare/?$")),
    ("GET", re.compile(r"^/v1/models/.+")),
    ("GET", re.compile(r"^/(plan|recommend|gpus/compare)/?$")),
)
_UNLIMITED = re.compile(r"^/v1/(healthz|quotes|allocations|keys)(/|$)")
_KEYED = re.compile(r"^/v1/(quotes|allocations|keys)(/|$)")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def route_tier(method: str, path: str, query_string: bytes = b"") -> str | None:
    """``"compute"``, ``"public"`` or None (not limited here) for a request.

    >>> route_tier("POST", "/v1/recommend"), route_tier("GET", "/v1/glossary"), route_tier("POST", "/v1/allocations")
    ('compute', 'public', None)
    """
    for m, pattern in _COMPUTE:
        if method == m and pattern.match(path):
            if not path.startswith("/v1/") and not query_string:
                return None  # the empty form of a page costs nothing
            return "compute"
    if _UNLIMITED.match(path) or not path.startswith("/v1/"):
        return None
    return "public" if method in ("GET", "HEAD") else None


_RETRY_AFTER = {"description": "Whole seconds to wait before asking again", "schema": {"type": "integer", "minimum": 1}}


def refusals(method: str, path: str) -> dict[str, dict[str, Any]]:
    """The OpenAPI responses this middleware can answer on operation ``method path`` (a path template), each with
    its ``Retry-After`` header: 429 on every ``/v1`` operation (the failed-key limit holds on any of them, the per-address
    limits on the public and compute ones), 503 on the compute ones as well.

    >>> sorted(refusals("POST", "/v1/plan")), sorted(refusals("GET", "/v1/glossary")), refusals("GET", "/plan")
    (['429', '503'], ['429'], {})
    """
    if not path.startswith("/v1/"):
        return {}
    tier = route_tier(method, path)
    limits = {"compute": f"{COMPUTE_LIMITS} a client address, a recommendation counting {RECOMMEND_COST}",
              "public": f"{PUBLIC_LIMITS} a client address"}.get(tier or "")
    out = {"429": {"description": "rate_limited: too many requests from this address" + (f" ({limits})" if limits else "")
                                  + ", or too many unknown API keys from it (any key it sends is refused until the "
                                  "Retry-After has passed)",
                   "headers": {"Retry-After": dict(_RETRY_AFTER)}}}
    if tier == "compute":
        out["503"] = {"description": f"server_busy: {MAX_CONCURRENT_COMPUTE} planner computations already running on "
                                     "this worker; ask again shortly", "headers": {"Retry-After": dict(_RETRY_AFTER)}}
    return out


class PublicRateLimitMiddleware:
    """Pure ASGI middleware applying the limits above (see the module's documentation)."""

    def __init__(self, app: ASGIApp, *, compute_limits: str = COMPUTE_LIMITS, public_limits: str = PUBLIC_LIMITS,
                 max_concurrent_compute: int = MAX_CONCURRENT_COMPUTE, auth_failure_limits: str = AUTH_FAILURE_LIMITS) -> None:
        self.app = app
        self.limiter = MovingWindowRateLimiter(MemoryStorage())
        self.limits: dict[str, list[RateLimitItem]] = {"compute": parse_many(compute_limits), "public": parse_many(public_limits),
                                                       "auth": parse_many(auth_failure_limits)}
        self.known_good: dict[bytes, None] = {}  # insertion-ordered: the oldest is dropped first
        self.max_concurrent_compute = max_concurrent_compute
        self.running_compute = 0  # changed only on the event loop: no lock needed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else "unknown"
        path = scope["path"]
        authorization = None
        if path.startswith("/v1/"):  # the API checks a key it is sent on every route; the pages read none
            authorization = next((v for k, v in scope.get("headers", []) if k == b"authorization"), None)
        digest = None if authorization is None else hashlib.sha256(authorization).digest()
        if digest is not None and digest not in self.known_good and await self._past_failures(scope, receive, send,
                                                                                              address):
            return
        tier = None if _KEYED.match(path) else route_tier(scope["method"], path, scope.get("query_string", b""))
        if tier is not None:
            cost = RECOMMEND_COST if tier == "compute" and path.rstrip("/").endswith("/recommend") else 1
            for item in self.limits[tier]:
                if not self.limiter.hit(item, tier, address, cost=cost):
                    reset_at = self.limiter.get_window_stats(item, tier, address).reset_time
                    retry_s = max(1, math.ceil(reset_at - time.time()))
                    await self._refuse(scope, receive, send, 429, "rate_limited",
                                       f"too many {tier} requests from this address: at most {item}"
                                       + (f" (a recommendation counts {RECOMMEND_COST})" if tier == "compute" else "")
                                       + f"; retry in {retry_s} s", retry_s)
                    return
        if tier == "compute":
            if self.running_compute >= self.max_concurrent_compute:
                await self._refuse(scope, receive, send, 503, "server_busy",
                                   f"{self.running_compute} planner computations are already running on this worker; "
                                   "retry shortly", 1)
                return
            self.running_compute += 1
        try:
            if digest is None:
                await self.app(scope, receive, send)
            else:
                await self._learn(scope, receive, send, address, digest)
        finally:
            if tier == "compute":
                self.running_compute -= 1

    async def _past_failures(self, scope: Scope, receive: Receive, send: Send, address: str) -> bool:
        """Refuse (429, no lookup) a key not known good from an address past its failed keys; True when refused."""
        for item in self.limits["auth"]:
            if not self.limiter.test(item, "auth", address):
                reset_at = self.limiter.get_window_stats(item, "auth", address).reset_time
                retry_s = max(1, math.ceil(reset_at - time.time()))
                await self._refuse(scope, receive, send, 429, "rate_limited",
                                   f"too many requests with invalid API keys from this address: at most {item} "
                                   f"(retry in {retry_s} s)", retry_s)
                return True
        return False

    async def _learn(self, scope: Scope, receive: Receive, send: Send, address: str, digest: bytes) -> None:
        """Run a request that presents a key and learn from the answer: a 401 counts as a failure (and forgets the
        key), a success remembers it as known good."""
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status == 401:
            self.known_good.pop(digest, None)
            for item in self.limits["auth"]:
                self.limiter.hit(item, "auth", address)
        elif 200 <= status < 300 and digest not in self.known_good:  # a 422 can come before the key is read
            self.known_good[digest] = None
            if len(self.known_good) > KNOWN_GOOD_KEYS:
                del self.known_good[next(iter(self.known_good))]

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, code: str, detail: str,
                      retry_after_s: int) -> None:
        from anchorgpu.api.errors import problem

        response = problem(status, code, detail, headers={"Retry-After": str(retry_after_s)})
        await response(scope, receive, send)
