"""How ``anchorgpu serve`` runs uvicorn: the HTTP protocol and timeouts that keep hostile clients cheap.

- A request the HTTP parser cannot read (a ``Content-Length`` that is not a number, two different ones,
  a malformed request line) never reaches the app: uvicorn answers it itself, in plain text. Our protocol
  class answers the same 400 as ``application/problem+json`` with the code ``malformed_request``, like every
  other error of the API, and closes the connection.
- A body shorter than its declared length is cut off by :class:`anchorgpu.api.security.BodyLimitMiddleware`
  after :data:`anchorgpu.api.security.BODY_TIMEOUT_S` (408), so it cannot hold a connection and a worker.
"""

from __future__ import annotations

import json
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ProblemH11Protocol", "uvicorn_options"]

MALFORMED_REQUEST_BODY = json.dumps({
    "type": "/glossary/errors#malformed_request", "title": "Bad Request", "status": 400,
    "detail": "the HTTP request could not be parsed (check its request line and headers, e.g. Content-Length)",
    "code": "malformed_request",
}).encode()


class ProblemH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering unparseable requests with a problem+json 400 instead of plain text."""

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
