"""How ``anchorgpu serve`` runs uvicorn: the HTTP protocol and timeouts that keep hostile clients cheap.

- A request the HTTP parser cannot read (a ``Content-Length`` that is not a number, two different ones,
  a malformed request line) never reaches the app: uvicorn answers it itself, in plain text. Our protocol
  class answers the same 400 as ``application/problem+json`` with the code ``malformed_request``, like every
  other error of the API, and closes the connection.
- A body shorter than its declared length is cut off by :class:`anchorgpu.api.security.BodyLimitMiddleware`
  after :data:`anchorgpu.api.security.BODY_TIMEOUT_S` (408), so it cannot hold a connection and a worker.
- A connection whose request line and headers are not complete within :data:`HEADER_TIMEOUT_S` of its first
  byte (or of being opened) is closed: uvicorn itself waits for them for ever, so a client could hold any number
  of connections open with half a request each (``benchmarks/load/run.py --hostile``, pattern ``held_open``).
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_S", "ProblemH11Protocol", "uvicorn_options"]

HEADER_TIMEOUT_S = 10.0
"""Longest time a request line and its headers may take to arrive (a real client sends them at once)."""

MALFORMED_REQUEST_BODY = json.dumps({
    "type": "/glossary/errors#malformed_request", "title": "Bad Request", "status": 400,
    "detail": "the HTTP request could not be parsed (check its request line and headers, e.g. Content-Length)",
    "code": "malformed_request",
}).encode()


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering unparseable requests with a problem+json 400 instead of plain text, and
    closing a connection whose request headers do not arrive within :data:`HEADER_TIMEOUT_S`."""

    header_timeout_s = HEADER_TIMEOUT_S
    _header_deadline: Any = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm_header_deadline()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        import h11

        if self.conn.their_state == h11.IDLE:  # the request line or headers are still incomplete
            self._arm_header_deadline()
        elif self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        if self._header_deadline is None:  # counted from the first byte (or the connection), not re-armed by more
            self._header_deadline = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _header_timeout(self) -> None:
        import h11

        self._header_deadline = None
        idle = self.cycle is None or self.cycle.response_complete  # no request of this connection is being answered
        if idle and self.conn.their_state == h11.IDLE and not self.transport.is_closing():
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        import h11

        headers = [(b"content-type", b"application/problem+json"), (b"connection", b"close"),
                   (b"content-length", str(len(MALFORMED_REQUEST_BODY)).encode())]
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
            self.transport.write(self.conn.send(h11.Data(data=MALFORMED_REQUEST_BODY)) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:  # a response had already started on this connection: just close it
            pass
        self.transport.close()


def uvicorn_options() -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` shared by one-process and multi-worker serving."""
    return {"http": ProblemH11Protocol, "timeout_keep_alive": 5}
