"""``run.py --hostile``'s ``held_open`` pattern: half a request line held open. uvicorn waits for the rest of the
headers for ever; :class:`anchorgpu.api.server.ProblemH11Protocol` closes such a connection after
``HEADER_TIMEOUT_S`` (10 s; shortened to 0.5 s here through a subclass), while a slow but complete request and
keep-alive between requests are not affected.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchorgpu.api.app import create_app
from anchorgpu.api.server import HEADER_TIMEOUT_S, ProblemH11Protocol
from anchorgpu.config import Settings
from hardening.conftest import uvicorn_thread


class _Quick(ProblemH11Protocol):
    header_timeout_s = 0.5


@pytest.fixture
def address(tmp_path: Path) -> Iterator[tuple[str, int]]:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'h.db'}", offline=True), session_secret="headers")
    yield from uvicorn_thread(app, http=_Quick)


def _closed_after(sock: socket.socket, wait_s: float = 8.0) -> float | None:
    """Seconds until the server closes ``sock`` (None: still open after ``wait_s``)."""
    sock.settimeout(wait_s)
    began = time.perf_counter()
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return None
    return time.perf_counter() - began


def test_the_default_deadline_is_stated() -> None:
    assert ProblemH11Protocol.header_timeout_s == HEADER_TIMEOUT_S == 10.0


@pytest.mark.parametrize("sent", [b"", b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n"])
def test_a_connection_without_complete_headers_is_closed(address: tuple[str, int], sent: bytes) -> None:
    with socket.create_connection(address) as sock:
        sock.sendall(sent)
        closed = _closed_after(sock)
    assert closed is not None and closed < 5  # uvicorn alone: still open when the wait ends


def test_headers_trickled_past_the_deadline_do_not_re_arm_it(address: tuple[str, int]) -> None:
    with socket.create_connection(address) as sock:
        sock.sendall(b"GET /v1/healthz HTTP/1.1\r\n")
        for _ in range(4):
            time.sleep(0.2)
            try:
                sock.sendall(b"X-A: b\r\n")
            except OSError:
                break
        closed = _closed_after(sock)
    assert closed is not None and closed < 5


def test_complete_requests_and_keep_alive_are_answered(address: tuple[str, int]) -> None:
    with socket.create_connection(address, timeout=5) as sock:
        for _ in range(2):
            sock.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"}"):  # the head and the JSON body may come in separate reads
                chunk = sock.recv(65536)
                assert chunk, "the server closed a keep-alive connection between requests"
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200")
            time.sleep(0.8)  # longer than the header deadline, shorter than keep-alive (5 s): still open
