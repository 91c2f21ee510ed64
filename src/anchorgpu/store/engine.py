"""Engine factory: one place that knows how SQLite and PostgreSQL are configured.

SQLite (the embedded default)
    WAL journal (readers do not block the writer), foreign keys on, ``busy_timeout`` so a writer waits
    for another instead of failing, and every unit-of-work transaction opened with ``BEGIN IMMEDIATE`` (:func:`write_engine`): SQLite then
    serializes writers at the start of the transaction, which makes check-then-insert (capacity,
    idempotency keys) atomic across processes. The driver's own implicit transactions are switched off
    so SQLAlchemy's ``BEGIN`` is the only one (the recipe in SQLAlchemy's pysqlite documentation).
PostgreSQL (``postgresql+psycopg://…``)
    psycopg 3, READ COMMITTED; the services take ``SELECT … FOR UPDATE`` row locks where they check
    capacity, so concurrent purchases in any number of processes serialize on the stock row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from anchorgpu.errors import InvalidInput

__all__ = ["SQLITE_BUSY_TIMEOUT_MS", "WRITE_OPTION", "make_engine", "write_engine"]

WRITE_OPTION = "anchorgpu_write_transaction"

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer waits for the write lock before giving up (milliseconds)."""


def make_engine(url: str, *, echo: bool = False, pool_size: int | None = None) -> Engine:
    """Create the engine for ``url`` (SQLite file or PostgreSQL) with AnchorGPU's connection settings.

    A SQLite file's parent directory is created. ``postgresql://`` URLs are routed to psycopg 3.
    Creating the engine opens no connection.
    """
    try:
        parsed = make_url(url)
    except Exception as exc:  # SQLAlchemy's ArgumentError for a malformed URL
        raise InvalidInput(f"database URL {url!r} is not a valid SQLAlchemy URL") from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(parsed, echo=echo)
    if backend == "postgresql":
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        kwargs: dict[str, Any] = {"pool_pre_ping": True}
        if pool_size is not None:
            kwargs["pool_size"] = pool_size
        return create_engine(parsed, echo=echo, **kwargs)
    raise InvalidInput(f"database URL {url!r}: only sqlite:/// and postgresql+psycopg:// are supported")


def write_engine(engine: Engine) -> Engine:
    """The same engine (same pool) whose transactions take SQLite's write lock at BEGIN (``BEGIN
    IMMEDIATE``), for units of work: check-then-write is then atomic across processes. No effect on
    PostgreSQL, where the services lock rows instead."""
    return engine.execution_options(**{WRITE_OPTION: True})


def _sqlite_engine(parsed: Any, *, echo: bool) -> Engine:
    database = parsed.database
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(parsed, echo=echo, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # let SQLAlchemy emit BEGIN itself
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # Units of work run on write_engine(engine): they take the write lock up front. Other
        # connections (reports, tests) begin deferred and, under WAL, never wait for a writer.
        immediate = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine
