"""Migrations build the whole schema on an empty database of either engine, and agree with the models."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Column, Integer, MetaData, inspect, text

from anchorgpu.store.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine
from anchorgpu.store.migrate import current_revision, head_revision, is_up_to_date, upgrade
from anchorgpu.store.tables import metadata

TABLES = {"accounts", "api_keys", "stock", "quotes", "allocations", "allocation_events", "capacity_bookings", "idempotency_keys"}


def _diff(engine: Any, target: MetaData) -> list[Any]:
    with engine.connect() as conn:
        return list(compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), target))


def test_upgrade_creates_every_table_on_an_empty_database(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        assert current_revision(engine) is None and not is_up_to_date(engine)
        assert upgrade(engine) == head_revision()
        assert TABLES <= set(inspect(engine).get_table_names())
        assert is_up_to_date(engine)
        assert upgrade(engine) == head_revision()  # a second run changes nothing
    finally:
        engine.dispose()


def test_the_models_and_the_migrations_agree(empty_db_url: str) -> None:
    # The `alembic check` of this project: autogenerate finds nothing to add, drop or alter.
    engine = make_engine(empty_db_url)
    try:
        upgrade(engine)
        assert _diff(engine, metadata) == []
    finally:
        engine.dispose()


def test_the_agreement_check_notices_a_model_change_without_a_migration(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    try:
        upgrade(engine)
        changed = MetaData(naming_convention=metadata.naming_convention)
        for table in metadata.tables.values():
            table.to_metadata(changed)
        changed.tables["stock"].append_column(Column("reserved", Integer, nullable=True))
        assert [d[0] for d in _diff(engine, changed)] == ["add_column"]
    finally:
        engine.dispose()


def test_downgrade_to_base_and_upgrade_again_round_trips(empty_db_url: str) -> None:
    from alembic import command

    from anchorgpu.store.migrate import alembic_config

    engine = make_engine(empty_db_url)
    try:
        upgrade(engine)
        with engine.connect() as conn:
            command.downgrade(alembic_config(conn), "base")
            conn.commit()
        assert not TABLES & set(inspect(engine).get_table_names())
        upgrade(engine)
        assert TABLES <= set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_sqlite_connections_use_wal_foreign_keys_and_a_busy_timeout(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == SQLITE_BUSY_TIMEOUT_MS
    finally:
        engine.dispose()


def test_a_plain_postgresql_url_is_served_by_psycopg_3() -> None:
    engine = make_engine("postgresql://postgres@127.0.0.1:5432/postgres")  # no connection is opened
    assert engine.dialect.driver == "psycopg"


@pytest.mark.parametrize("url", ["mysql://root@localhost/x", "not a url"])
def test_an_unsupported_database_url_is_bad_input(url: str) -> None:
    from anchorgpu.errors import InvalidInput

    with pytest.raises(InvalidInput):
        make_engine(url)


def test_bootstrap_seeds_stock_once_and_never_overwrites_an_operator_change(store: Any) -> None:
    from anchorgpu.allocations.services import list_stock, set_stock
    from anchorgpu.bootstrap import bootstrap

    seeded = list_stock(store.uow_factory())
    assert seeded[("h100-sxm-1x-vm", "us-east")] == 48  # catalog/data/stock.csv
    set_stock(store.uow_factory(), offering="h100-sxm-1x-vm", servers=3, clock=store.clock)
    again = bootstrap(store.settings, clock=store.clock)
    try:
        assert list_stock(again.uow_factory())[("h100-sxm-1x-vm", "us-east")] == 3
        assert len(list_stock(again.uow_factory())) == len(seeded)
    finally:
        again.dispose()


def test_bootstrap_builds_nothing_at_import() -> None:
    import importlib

    import anchorgpu.bootstrap as module

    importlib.reload(module)
    assert not any(isinstance(v, module.Store) for v in vars(module).values())


def test_raw_sql_runs_only_with_bound_parameters(store: Any) -> None:
    hostile = "x'); DROP TABLE accounts; --"
    with store.uow_factory() as uow:
        found = uow.execute(text("SELECT count(*) FROM accounts WHERE name = :n"), {"n": hostile}).scalar_one()
    assert found == 0 and "accounts" in inspect(store.engine).get_table_names()


def test_sqlite_migrates_an_empty_database_in_one_write_transaction(tmp_path: Any) -> None:
    # Alembic commits each migration apart on SQLite unless it runs inside the caller's transaction; between two of
    # its commits a second worker could take the write lock, find the first step done and run the next one as well
    # (seen once in CI: "table api_keys already exists"). One BEGIN IMMEDIATE and one COMMIT for the whole upgrade.
    from sqlalchemy import event

    engine = make_engine(f"sqlite:///{tmp_path / 'one.db'}")
    statements: list[str] = []

    @event.listens_for(engine, "commit")
    def _commit(conn: Any) -> None:
        statements.append("COMMIT")

    @event.listens_for(engine, "before_cursor_execute")
    def _begin(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.startswith("BEGIN"):
            statements.append(statement)

    try:
        assert upgrade(engine) == head_revision()
    finally:
        engine.dispose()
    # every migration between the first BEGIN and the one COMMIT (the revision read afterwards begins again)
    assert statements[:2] == ["BEGIN IMMEDIATE", "COMMIT"] and statements.count("COMMIT") == 1, statements
