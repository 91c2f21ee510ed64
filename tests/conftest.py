"""Shared fixtures: per-test databases on SQLite and PostgreSQL, a fixed clock, a wired store, accounts.

Reuse them from any test folder (they are in the root conftest):

``fixed_clock``            a :class:`FixedClock` at ``START`` (2026-11-29 12:00 UTC); ``.advance(hours=1)``.
``sqlite_url``             a fresh, migrated and seeded SQLite file for this test (copied from a template).
``postgres_url``           a fresh, migrated and seeded PostgreSQL schema for this test alone, in a database
                           the session creates on 127.0.0.1:5432 as user ``postgres`` and drops at its end;
                           the URL pins ``search_path`` (``?options=-csearch_path=…``) so every connection,
                           subprocess or server started with it works in that schema. The schema is dropped
                           after the test. Skips with a clear message when the server is unreachable.
                           ``ANCHORGPU_TEST_POSTGRES_URL`` overrides the admin URL.
``postgres_database_url``  a whole EMPTY PostgreSQL database for this test (slower), dropped afterwards.
``db_url``                 parametrized: the test runs once on ``sqlite`` and once on ``postgres``
                           (test ids ``[sqlite]`` / ``[postgres]``; the PostgreSQL run is marked ``postgres``).
``empty_db_url``           the same two engines, but an EMPTY database (no migrations) — for migration tests.
``store``                  :func:`anchorgpu.bootstrap.bootstrap` on ``db_url`` with ``fixed_clock``:
                           ``store.uow_factory()``, ``store.clock``, ``store.engine``; disposed afterwards.
``account``                an :class:`AccountFixture` (``id``, ``api_key``) created in ``store``.
``make_account``           ``make_account(name)`` → another :class:`AccountFixture` in ``store``.

SQLite: a migrated + seeded template file is built once per session and copied for each test.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

START = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
POSTGRES_ADMIN_URL = os.environ.get(
    "ANCHORGPU_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


class FixedClock:
    """A clock that only moves when a test moves it (timezone-aware UTC)."""

    def __init__(self, now: datetime = START) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


@dataclass(frozen=True)
class AccountFixture:
    id: str
    api_key: str


@pytest.fixture
def fixed_clock() -> FixedClock:
    return FixedClock()


# -- SQLite --------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings

    path = tmp_path_factory.mktemp("sqlite-template") / "anchorgpu.db"
    store = bootstrap(Settings(database_url=f"sqlite:///{path}"), clock=FixedClock())
    store.dispose()  # closing the last connection folds the WAL into the main file
    assert not path.with_name(path.name + "-wal").exists()
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, _sqlite_template: Path) -> str:
    """A migrated, seeded SQLite database file of this test alone."""
    path = tmp_path / "anchorgpu.db"
    shutil.copy(_sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def empty_sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'empty.db'}"


# -- PostgreSQL ----------------------------------------------------------------------------------
# One database per test session (per xdist worker), created on the server and dropped at the end; each
# test gets its OWN SCHEMA in it (the URL pins ``search_path``), migrated and seeded, dropped after the
# test. A schema costs ~0.5 s where a whole database costs ~3 s (CREATE/DROP DATABASE checkpoint).

def _admin_engine() -> Any:
    from sqlalchemy import create_engine, text

    engine = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except Exception as exc:  # server down, wrong auth, psycopg missing
        engine.dispose()
        pytest.skip(f"PostgreSQL at {POSTGRES_ADMIN_URL} is not reachable ({type(exc).__name__}); PostgreSQL tests skipped")
    return engine


def _url_for(database: str, schema: str | None = None) -> str:
    from sqlalchemy.engine import make_url

    url = make_url(POSTGRES_ADMIN_URL).set(database=database)
    if schema is not None:
        url = url.update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


def _drop_database(admin: Any, name: str) -> None:
    from sqlalchemy import text

    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def _postgres_admin() -> Iterator[Any]:
    engine = _admin_engine()
    yield engine
    engine.dispose()


@pytest.fixture(scope="session")
def _postgres_session_db(_postgres_admin: Any) -> Iterator[Any]:
    """This session's database and an AUTOCOMMIT engine on it (for creating and dropping schemas)."""
    from sqlalchemy import create_engine, text

    name = f"agpu_test_{os.getpid()}_{secrets.token_hex(4)}"
    with _postgres_admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine = create_engine(_url_for(name), isolation_level="AUTOCOMMIT")
    yield name, engine
    engine.dispose()
    _drop_database(_postgres_admin, name)


def _create_schema(session_db: Any, prefix: str) -> tuple[str, str]:
    """A new empty schema in the session database: (its URL pinning search_path, its name)."""
    from sqlalchemy import text

    name, engine = session_db
    schema = f"{prefix}_{secrets.token_hex(6)}"
    with engine.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    return _url_for(name, schema), schema


def _drop_schema(session_db: Any, schema: str) -> None:
    from sqlalchemy import text

    with session_db[1].connect() as conn:
        conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


@pytest.fixture(scope="session")
def _postgres_schema_recipe(_postgres_session_db: Any) -> str:
    """SQL that builds a migrated, seeded schema in one round trip: Alembic's own offline DDL of the
    shipped migrations, plus the stock rows of a schema that ``bootstrap`` migrated and seeded for real
    (``tests/store/test_migrations.py`` runs the migrations themselves on empty schemas)."""
    import io

    from alembic import command

    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings
    from anchorgpu.store.migrate import alembic_config

    seeded, seed_schema = _create_schema(_postgres_session_db, "seed")  # lives as long as the session database
    bootstrap(Settings(database_url=seeded), clock=FixedClock()).dispose()
    buffer = io.StringIO()
    config = alembic_config()
    config.output_buffer = buffer
    config.set_main_option("sqlalchemy.url", "postgresql+psycopg://")
    command.upgrade(config, "head", sql=True)
    ddl = buffer.getvalue().replace("BEGIN;", "").replace("COMMIT;", "")
    return f'{ddl}\nINSERT INTO stock SELECT * FROM "{seed_schema}".stock;\n'  # noqa: S608 - our own generated schema name


@pytest.fixture
def postgres_url(_postgres_session_db: Any, _postgres_schema_recipe: str) -> Iterator[str]:
    """A migrated, seeded PostgreSQL schema of this test alone (its URL pins ``search_path``)."""
    from sqlalchemy import text

    url, schema = _create_schema(_postgres_session_db, "t")
    with _postgres_session_db[1].connect() as conn:
        conn.execute(text("BEGIN"))
        conn.exec_driver_sql(f'SET LOCAL search_path TO "{schema}";\n{_postgres_schema_recipe}')
        conn.execute(text("COMMIT"))
    yield url
    _drop_schema(_postgres_session_db, schema)


@pytest.fixture
def empty_postgres_url(_postgres_session_db: Any) -> Iterator[str]:
    """An EMPTY PostgreSQL schema of this test alone."""
    url, schema = _create_schema(_postgres_session_db, "e")
    yield url
    _drop_schema(_postgres_session_db, schema)


@pytest.fixture
def postgres_database_url(_postgres_admin: Any) -> Iterator[str]:
    """A whole, EMPTY PostgreSQL database of this test alone (slower: ~3 s), for tools that work on a
    database rather than a schema (dump/restore). Dropped afterwards."""
    from sqlalchemy import text

    name = f"agpu_db_{secrets.token_hex(6)}"
    with _postgres_admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield _url_for(name)
    _drop_database(_postgres_admin, name)


# -- both engines --------------------------------------------------------------------------------

ENGINES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=ENGINES)
def db_url(request: pytest.FixtureRequest) -> str:
    """A fresh migrated + seeded database: the test runs once per engine."""
    url: str = request.getfixturevalue(f"{request.param}_url")
    return url


@pytest.fixture(params=ENGINES)
def empty_db_url(request: pytest.FixtureRequest) -> str:
    """A fresh EMPTY database (no schema) on each engine."""
    url: str = request.getfixturevalue(f"empty_{request.param}_url")
    return url


@pytest.fixture
def store(db_url: str, fixed_clock: FixedClock) -> Iterator[Any]:
    """The wired store (bootstrap) on this test's database, with the fixed clock."""
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings

    wired = bootstrap(Settings(database_url=db_url), clock=fixed_clock)
    yield wired
    wired.dispose()


@pytest.fixture
def make_account(store: Any) -> Callable[[str], AccountFixture]:
    from anchorgpu.accounts import create_account

    def make(name: str = "test account") -> AccountFixture:
        account_id, api_key = create_account(store.uow_factory(), name, clock=store.clock)
        return AccountFixture(id=account_id, api_key=api_key)

    return make


@pytest.fixture
def account(make_account: Callable[[str], AccountFixture]) -> AccountFixture:
    return make_account("alice")
