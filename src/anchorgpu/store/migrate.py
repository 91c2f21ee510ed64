"""Apply the Alembic migrations shipped in ``anchorgpu/store/migrations``.

``upgrade(engine)`` brings any database (empty SQLite file, empty PostgreSQL database, or an older
AnchorGPU schema) to the newest revision. On PostgreSQL it holds an advisory lock while migrating so
that several ``serve`` workers starting together migrate once.
"""

from __future__ import annotations

from importlib import resources

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text

__all__ = ["alembic_config", "current_revision", "head_revision", "is_up_to_date", "upgrade"]

_MIGRATION_LOCK_ID = 0x616E6368  # "anch": advisory lock key for migrations on PostgreSQL


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's Config for the shipped migrations, optionally bound to an open connection."""
    ini = resources.files("anchorgpu.store").joinpath("alembic.ini")
    config = Config(str(ini))
    config.set_main_option("script_location", "anchorgpu.store:migrations")
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str:
    """The newest migration revision shipped with this version of AnchorGPU."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migrations shipped"
    return head


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at (None for an empty database)."""
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def is_up_to_date(engine: Engine) -> bool:
    return current_revision(engine) == head_revision()


def upgrade(engine: Engine, revision: str = "head") -> str | None:
    """Migrate the database to ``revision`` (default: newest); return the revision it ends at."""
    from anchorgpu.store.engine import write_engine

    # SQLite: take the write lock at BEGIN, so a second process waits and then finds the schema done.
    with write_engine(engine).connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if conn.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_ID})
            conn.commit()
        if sqlite:  # a table rebuild (batch mode) drops a table others refer to: check the keys at the end instead
            conn.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
            # One write transaction for every step, begun before Alembic reads the revision: Alembic commits each
            # migration apart on SQLite unless it runs inside the caller's transaction, and between two of its
            # commits a second worker could take the lock, find the first step done and run the next one too.
            conn.begin()
        try:
            command.upgrade(alembic_config(conn), revision)
            if sqlite:
                broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    conn.rollback()
                    raise RuntimeError(f"migration to {revision} would break {len(broken)} foreign keys (first: {tuple(broken[0])})")
            conn.commit()
        finally:
            if sqlite:
                conn.connection.driver_connection.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
            if conn.dialect.name == "postgresql":
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_ID})
                conn.commit()
        return MigrationContext.configure(conn).get_current_revision()
