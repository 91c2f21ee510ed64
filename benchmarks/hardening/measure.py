"""Figures of the README's issue-13 reliability rows, measured against a real uvicorn server (not in tests).

    .venv/bin/python benchmarks/hardening/measure.py transport          # bad Content-Length, short body (after)
    .venv/bin/python benchmarks/hardening/measure.py transport --before # the same with the old behaviour restored
    .venv/bin/python benchmarks/hardening/measure.py hub [--hub-fetch]  # 60 concurrent Hub-id plans, a Hub that never answers
    .venv/bin/python benchmarks/hardening/measure.py fuzz URL [N]       # schemathesis over every operation, statuses counted

``--before`` restores what the server did before issue 13 in-process: uvicorn's own h11 protocol (plain-text
400) and no deadline on the request body. ``fuzz`` needs a migrated database at URL (``anchorgpu db`` or
``anchorgpu serve`` once) and prints the number of cases per status.
"""

from __future__ import annotations

import argparse
import collections
import socket
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from typing import Any


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(app: Any, **options: Any) -> tuple[Any, tuple[str, int]]:
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", lifespan="off", **options))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, ("127.0.0.1", port)


def _exchange(address: tuple[str, int], raw: bytes, wait_s: float = 12.0) -> tuple[bytes, float]:
    with socket.create_connection(address, timeout=wait_s) as sock:
        started = time.perf_counter()
        sock.sendall(raw)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
        return data, time.perf_counter() - started


def transport(before: bool) -> None:
    from anchorgpu.api import security
    from anchorgpu.api.app import create_app
    from anchorgpu.api.server import uvicorn_options
    from anchorgpu.config import Settings

    if before:
        security.BodyLimitMiddleware.__init__.__kwdefaults__["timeout_s"] = 1e9  # type: ignore[index]
    app = create_app(Settings(database_url=f"sqlite:///{tempfile.mkdtemp()}/a.db", offline=True), session_secret="measure")
    server, address = _serve(app, **({} if before else uvicorn_options()))
    label = "before" if before else "after"
    answer, seconds = _exchange(address, b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}")
    lines = answer.split(b"\r\n")
    kind = [line.decode() for line in lines if line.lower().startswith(b"content-type")]
    print(f"{label}: Content-Length: abc -> {lines[0].decode()} {kind[0] if kind else ''} in {seconds:.2f} s")
    answer, seconds = _exchange(address, b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                         b"Content-Length: 100\r\n\r\n{\"model\":")
    status = answer.split(b"\r\n")[0].decode() or "(no answer; the client gave up at 12 s)"
    print(f"{label}: body 92 bytes short of its Content-Length -> {status}, connection held {seconds:.2f} s")
    server.should_exit = True


def hub(hub_fetch: bool) -> None:
    import concurrent.futures as cf

    import httpx

    from anchorgpu.api.app import create_app
    from anchorgpu.api.server import uvicorn_options
    from anchorgpu.architectures import loader
    from anchorgpu.config import Settings

    def stalled(repo_id: str) -> str:  # a Hub that never answers within the run
        time.sleep(30)
        raise OSError("unreachable")

    loader._hub_download = stalled  # type: ignore[assignment]
    app = create_app(Settings(database_url=f"sqlite:///{tempfile.mkdtemp()}/a.db", offline=False, hub_fetch=hub_fetch),
                     session_secret="measure")
    server, (host, port) = _serve(app, **uvicorn_options())
    base = f"http://{host}:{port}"
    httpx.get(base + "/v1/healthz")
    httpx.post(base + "/v1/plan", json={"model": "llama-3.2-1b"}, timeout=60)  # imports done before the burst

    def plan(i: int) -> tuple[int, float]:
        started = time.perf_counter()
        response = httpx.post(base + "/v1/plan", json={"model": f"someorg/model-{i}"}, timeout=60)
        return response.status_code, time.perf_counter() - started

    with cf.ThreadPoolExecutor(60) as pool:
        futures = [pool.submit(plan, i) for i in range(60)]
        time.sleep(0.3)
        started = time.perf_counter()
        health = httpx.get(base + "/v1/healthz", timeout=60)
        health_s = time.perf_counter() - started
        results = [f.result() for f in futures]
    codes = collections.Counter(code for code, _ in results)
    print(f"hub_fetch={'on' if hub_fetch else 'off'}: 60 Hub-id plans -> {dict(codes)}, slowest {max(s for _, s in results):.2f} s; "
          f"/v1/healthz meanwhile {health_s * 1000:.0f} ms ({health.status_code})")
    server.should_exit = True


def fuzz(url: str, examples: int) -> None:
    import schemathesis
    from fastapi.testclient import TestClient
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    from anchorgpu.accounts import create_account
    from anchorgpu.api.app import create_app
    from anchorgpu.config import Settings

    def clock() -> datetime:
        return datetime(2026, 11, 29, 12, tzinfo=UTC)

    app = create_app(Settings(database_url=url, offline=True), clock=clock, session_secret="fuzz")
    with TestClient(app) as client:
        client.get("/v1/healthz")
    _, api_key = create_account(app.state.store.uow_factory(), "fuzzer", clock=clock)
    statuses: collections.Counter[int] = collections.Counter()
    errors: list[str] = []
    started = time.perf_counter()
    for result in schemathesis.openapi.from_asgi("/openapi.json", app).get_all_operations():
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(max_examples=3 if operation.path == "/v1/recommend" else examples, deadline=None,
                      suppress_health_check=list(HealthCheck), database=None)
            def run(case: Any) -> None:
                if case.operation.path.startswith(("/v1/quotes", "/v1/allocations")):
                    case.headers = {**(case.headers or {}), "Authorization": f"Bearer {api_key}"}
                response = case.call()
                statuses[response.status_code] += 1
                if response.status_code >= 500:
                    errors.append(f"{case.method} {case.formatted_path} -> {response.status_code}")

            try:
                run()
            except Unsatisfiable:
                pass
    app.state.store.dispose()
    print(f"{url.split(':')[0]}: {sum(statuses.values())} cases in {time.perf_counter() - started:.0f} s, "
          f"statuses {dict(sorted(statuses.items()))}, 5xx {len(errors)}")
    for line in errors[:10]:
        print("  " + line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("transport").add_argument("--before", action="store_true")
    sub.add_parser("hub").add_argument("--hub-fetch", action="store_true")
    f = sub.add_parser("fuzz")
    f.add_argument("url")
    f.add_argument("examples", nargs="?", type=int, default=60)
    args = parser.parse_args(argv)
    if args.what == "transport":
        transport(args.before)
    elif args.what == "hub":
        hub(args.hub_fetch)
    else:
        fuzz(args.url, args.examples)
    return 0


if __name__ == "__main__":
    sys.exit(main())
