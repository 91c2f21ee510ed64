"""Issue 13, item 7 (transport): what a raw socket can do to a real server (uvicorn, as ``anchorgpu serve`` runs it).

- A ``Content-Length`` that is not a number: a problem+json 400, not uvicorn's plain text.
- A body shorter than its declared length: answered 408 and closed after ``BODY_TIMEOUT_S`` (3 s), where the
  server used to wait for the missing bytes as long as the client kept the socket open (the report: ≥ 8 s).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from anchorgpu.api.app import create_app
from anchorgpu.api.security import BODY_TIMEOUT_S
from anchorgpu.config import Settings
from hardening.conftest import uvicorn_thread


@pytest.fixture
def server(sqlite_url: str, fixed_clock: Any) -> Iterator[tuple[str, int]]:
    app = create_app(Settings(database_url=sqlite_url, offline=True), clock=fixed_clock, session_secret="transport")
    yield from uvicorn_thread(app)


def _exchange(address: tuple[str, int], raw: bytes, *, wait_s: float = 15.0) -> tuple[bytes, float]:
    """Send ``raw``, keep the socket open, read until the server closes it; (answer, seconds until closed)."""
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


def _status_and_body(answer: bytes) -> tuple[int, dict[str, str], dict[str, Any]]:
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


@pytest.mark.parametrize("length", [b"abc", b"-5", b"1e3", b"10, 20"])
def test_a_bad_content_length_gets_a_problem_json_400(server: tuple[str, int], length: bytes) -> None:
    raw = b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " + length + b"\r\n\r\n{}"
    answer, _ = _exchange(server, raw)
    status, headers, body = _status_and_body(answer)
    assert status == 400
    assert headers["content-type"] == "application/problem+json"
    assert body["code"] == "malformed_request" and body["status"] == 400


def test_a_body_shorter_than_its_length_is_cut_off_after_the_body_timeout(server: tuple[str, int]) -> None:
    raw = b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"model\":"
    answer, seconds = _exchange(server, raw)
    status, headers, body = _status_and_body(answer)
    assert status == 408 and body["code"] == "request_timeout"
    assert headers.get("connection") == "close"
    assert BODY_TIMEOUT_S - 0.2 < seconds < BODY_TIMEOUT_S + 2.0, seconds


def test_a_trickled_body_is_cut_off_too(server: tuple[str, int]) -> None:
    """One byte every 0.5 s of a 40-byte body: the deadline is for the whole body, not per byte."""
    with socket.create_connection(server, timeout=15) as sock:
        started = time.perf_counter()
        sock.sendall(b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n")
        closed_after = None
        for _ in range(40):
            try:
                sock.sendall(b" ")
            except OSError:
                closed_after = time.perf_counter() - started
                break
            time.sleep(0.5)
            sock.setblocking(False)
            try:
                if sock.recv(65536):
                    closed_after = time.perf_counter() - started
                    break
            except BlockingIOError:
                pass
            finally:
                sock.setblocking(True)
        assert closed_after is not None and closed_after < BODY_TIMEOUT_S + 2.0


def test_a_healthy_request_on_the_same_server_is_unaffected(server: tuple[str, int]) -> None:
    body = b'{"model": "llama-3.1-8b", "gpu": "h100"}'
    raw = (b"POST /v1/plan HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: "
           + str(len(body)).encode() + b"\r\n\r\n" + body)
    answer, seconds = _exchange(server, raw)
    assert answer.startswith(b"HTTP/1.1 200") and seconds < 5
