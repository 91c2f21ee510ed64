"""Wiring: Settings → engine → migrations (if needed) → stock seeded from the catalog → expired
idempotency keys purged → UoW factory.

Nothing happens at import. The faces call :func:`bootstrap` once (per process) and keep the result::

    store = bootstrap(settings)
    with store.uow_factory() as uow: ...
    services.buy_quote(store.uow_factory(), account_id=..., quote_id=..., idempotency_key=..., clock=store.clock)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from anchorgpu.config import Settings
    from anchorgpu.store.uow import SqlAlchemyUnitOfWork

__all__ = ["Store", "bootstrap", "system_clock"]


def system_clock() -> datetime:
    """The real clock, timezone-aware UTC (domain code never reads the time itself)."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    """What the faces need: the settings, the engine, a session factory, a UoW factory and the clock."""

    settings: Settings
    engine: Engine
    session_factory: sessionmaker[Session]
    clock: Callable[[], datetime]

    def uow_factory(self) -> SqlAlchemyUnitOfWork:
        """A fresh unit of work on this store (enter it with ``with``)."""
        from anchorgpu.store.uow import SqlAlchemyUnitOfWork

        return SqlAlchemyUnitOfWork(self.session_factory)

    @property
    def key_ttl_s(self) -> int:
        return self.settings.idempotency_key_ttl_s

    def dispose(self) -> None:
        self.engine.dispose()


def bootstrap(
    settings: Settings | None = None,
    *,
    migrate: bool = True,
    seed: bool = True,
    clock: Callable[[], datetime] | None = None,
    pool_size: int | None = None,
    purge_keys: bool = True,
) -> Store:
    """Build the store for ``settings`` (default: :func:`anchorgpu.config.get_settings`).

    ``migrate``: apply pending Alembic migrations (an empty database gets the whole schema).
    ``seed``: insert the catalog's initial stock rows that are missing (never overwrites).
    ``purge_keys``: delete idempotency keys past their retention (``Settings.idempotency_key_ttl_s``).
    ``pool_size``: PostgreSQL connections kept per process (SQLAlchemy's default when None).
    """
    from sqlalchemy.orm import sessionmaker

    from anchorgpu.config import get_settings
    from anchorgpu.store.engine import make_engine, write_engine
    from anchorgpu.store.migrate import is_up_to_date, upgrade

    settings = settings or get_settings()
    engine = make_engine(settings.database_url, pool_size=pool_size)
    if migrate and not is_up_to_date(engine):
        upgrade(engine)
    store = Store(
        settings=settings,
        engine=engine,
        session_factory=sessionmaker(bind=write_engine(engine), expire_on_commit=False),
        clock=clock or system_clock,
    )
    if seed:
        from anchorgpu.allocations.services import seed_stock

        seed_stock(store.uow_factory(), clock=store.clock)
    if purge_keys:
        from anchorgpu.allocations.idempotency import purge_idempotency_keys

        purge_idempotency_keys(store.uow_factory(), now=store.clock())
    return store
