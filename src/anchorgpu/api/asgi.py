"""ASGI entry for worker processes: ``uvicorn anchorgpu.api.asgi:app``.

The only module that builds the application at import; settings come from ``ANCHORGPU_*`` variables
(``anchorgpu serve`` sets ``ANCHORGPU_SESSION_SECRET`` so that every worker signs page sessions alike).
"""

from __future__ import annotations

from anchorgpu.api.app import create_app

app = create_app(rate_limit=True)  # per-address limits on public computations (anchorgpu.api.ratelimit)
