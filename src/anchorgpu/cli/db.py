"""Database commands: ``anchorgpu db upgrade`` (apply migrations), ``db current``, ``db purge-keys``,
``db backup FILE`` and ``db restore FILE`` (see :mod:`anchorgpu.store.backup`).

The database is ``ANCHORGPU_DATABASE_URL`` (the embedded SQLite file by default).
"""

from __future__ import annotations

from typing import Annotated

import typer

from anchorgpu.cli._app import app, console, emit_json

db_app = typer.Typer(help="The database: migrations and upkeep.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@db_app.command("upgrade")
def upgrade_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Apply every pending migration (an empty database gets the whole schema) and seed missing stock."""
    from anchorgpu.bootstrap import bootstrap
    from anchorgpu.config import Settings
    from anchorgpu.store.engine import make_engine
    from anchorgpu.store.migrate import current_revision, head_revision

    settings = Settings()
    before = current_revision(make_engine(settings.database_url))
    store = bootstrap(settings)
    after = current_revision(store.engine)
    result = {"database": store.engine.url.render_as_string(hide_password=True), "from_revision": before,
              "revision": after, "head": head_revision()}
    if as_json:
        emit_json(result)
        return
    what = "already up to date" if before == after else f"upgraded {before or '(empty)'} -> {after}"
    console().print(f"{result['database']}: {what}")


@db_app.command("current")
def current_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the database's migration revision and the newest shipped one."""
    from anchorgpu.config import Settings
    from anchorgpu.store.engine import make_engine
    from anchorgpu.store.migrate import current_revision, head_revision

    engine = make_engine(Settings().database_url)
    result = {"revision": current_revision(engine), "head": head_revision()}
    if as_json:
        emit_json(result)
    else:
        console().print(f"revision {result['revision'] or '(empty database)'}; newest {result['head']}")


@db_app.command("purge-keys")
def purge_keys_command(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Delete idempotency keys past their retention (Settings.idempotency_key_ttl_s, at least 24 h)."""
    from anchorgpu.allocations.idempotency import purge_idempotency_keys
    from anchorgpu.bootstrap import bootstrap

    store = bootstrap()
    purged = purge_idempotency_keys(store.uow_factory(), now=store.clock())
    if as_json:
        emit_json({"purged": purged})
    else:
        console().print(f"purged {purged} expired idempotency keys")


@db_app.command("backup")
def backup_command(
    file: Annotated[str, typer.Argument(help="Backup file to write (JSON lines; replaced atomically).")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Write every table (accounts, stock, quotes, allocations, events, bookings, idempotency keys) to FILE."""
    from anchorgpu.bootstrap import system_clock
    from anchorgpu.config import Settings
    from anchorgpu.store.backup import backup
    from anchorgpu.store.engine import make_engine

    engine = make_engine(Settings().database_url)
    try:
        summary = backup(engine, file, now=system_clock())
    finally:
        engine.dispose()
    if as_json:
        emit_json(summary.to_json())
    else:
        console().print(f"backed up {summary.to_json()['rows']} rows at revision {summary.revision} to {summary.path}")


@db_app.command("restore")
def restore_command(
    file: Annotated[str, typer.Argument(help="Backup file written by 'anchorgpu db backup'.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Load FILE into this database; only an empty one migrated to the backup's revision ('anchorgpu db upgrade')."""
    from anchorgpu.config import Settings
    from anchorgpu.store.backup import restore
    from anchorgpu.store.engine import make_engine

    engine = make_engine(Settings().database_url)
    try:
        summary = restore(engine, file)
    finally:
        engine.dispose()
    if as_json:
        emit_json(summary.to_json())
    else:
        console().print(f"restored {summary.to_json()['rows']} rows at revision {summary.revision} from {summary.path}")
