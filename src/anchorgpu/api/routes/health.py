"""``GET /v1/healthz``: liveness and readiness (the database answers a trivial query)."""

from __future__ import annotations

from fastapi import APIRouter

from anchorgpu import __version__
from anchorgpu.api.deps import StoreDep
from anchorgpu.api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Health, summary="Health check")
def healthz(store: StoreDep) -> Health:
    """Report that the service is up and its database answers."""
    from sqlalchemy import text

    with store.engine.connect() as connection:
        connection.execute(text("SELECT 1"))
    return Health(status="ok", version=__version__, database=store.engine.dialect.name)
