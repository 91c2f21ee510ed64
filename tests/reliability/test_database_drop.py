"""A PostgreSQL connection dropped in the middle of a purchase: 503 (not a 500), nothing half-written,
and the retry with the same key books exactly once.

Regression test for a bug the load harness (benchmarks/load/run.py) found: ``pg_terminate_backend``
during load made POST /v1/allocations answer ``500 internal_error`` ("a bug in AnchorGPU") where the
client should be told to retry; fixed in ``api/errors.py`` (503 ``database_unavailable`` + Retry-After).
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text

from anchorgpu.api.deps import get_uow_factory
from anchorgpu.store.tables import AllocationRow, CapacityBookingRow, IdempotencyKeyRow
from anchorgpu.store.uow import SqlAlchemyUnitOfWork

pytestmark = pytest.mark.postgres


class _DroppedOnce(SqlAlchemyUnitOfWork):
    """A unit of work whose database connection is terminated by the server right after BEGIN, once."""

    armed = True

    def __init__(self, session_factory: Any, admin_engine: Any) -> None:
        super().__init__(session_factory)
        self._admin = admin_engine

    def set_lock_timeout(self, seconds: float) -> None:
        super().set_lock_timeout(seconds)  # first statement of the idempotent transaction: it is open now
        if _DroppedOnce.armed:
            _DroppedOnce.armed = False
            pid = self.session.execute(text("SELECT pg_backend_pid()")).scalar_one()
            with self._admin.connect() as conn:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


def _count(engine: Any, table: Any) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_a_purchase_whose_connection_is_killed_answers_503_and_its_retry_books_once(postgres_app: Any) -> None:
    from sqlalchemy import create_engine

    store = postgres_app.store
    admin = create_engine(store.engine.url, isolation_level="AUTOCOMMIT")
    alice = postgres_app.caller("alice")
    quote = postgres_app.quote(alice)
    _DroppedOnce.armed = True
    postgres_app.app.dependency_overrides[get_uow_factory] = lambda: (lambda: _DroppedOnce(store.session_factory, admin))
    try:
        first = postgres_app.client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("drop-1"))
        assert first.status_code == 503, first.text
        assert first.headers["content-type"].startswith("application/problem+json")
        assert first.json()["code"] == "database_unavailable"
        assert first.headers["retry-after"] == "1"
        # nothing half-written: no allocation, no capacity held, the key is free for the retry
        assert _count(store.engine, AllocationRow) == 0
        assert _count(store.engine, CapacityBookingRow) == 0
        assert _count(store.engine, IdempotencyKeyRow) == 0

        retry = postgres_app.client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("drop-1"))
        assert retry.status_code == 201, retry.text
        again = postgres_app.client.post("/v1/allocations", json={"quote_id": quote["id"]}, headers=alice.idem("drop-1"))
        assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
        assert again.json() == retry.json()
        assert _count(store.engine, AllocationRow) == 1
    finally:
        postgres_app.app.dependency_overrides.clear()
        admin.dispose()
