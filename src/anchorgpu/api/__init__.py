"""AnchorGPU HTTP API (FastAPI) and the application that also serves the web page.

Public API: :func:`create_app` ``(settings=None, *, clock, session_secret, allow_signup, store) -> FastAPI``.
``anchorgpu.api.asgi:app`` is the ASGI entry for worker processes; routes live in ``api/routes`` (one
router per resource under ``/v1``), dependencies in ``api/deps.py``, errors → HTTP in ``api/errors.py``.
"""

from anchorgpu.api.app import API_PREFIX, create_app

__all__ = ["API_PREFIX", "create_app"]
