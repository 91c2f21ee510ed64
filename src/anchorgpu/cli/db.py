"""Database commands: ``anchorgpu db upgrade`` (apply migrations), ``db current``, ``db purge-keys``,
``db backup FILE``, ``db backup --verify FILE`` and ``db restore FILE [--allow-unverified]`` (see
:mod:`anchorgpu.store.backup`). ``ANCHORGPU_BACKUP_KEY`` adds an HMAC to backups and makes restore require it.

The database is ``ANCHORGPU_DATABASE_URL`` (the embedded SQLite file by default).
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

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


def _backup_key() -> bytes | None:
    from anchorgpu.config import Settings

    secret = Settings().backup_key
    return None if secret is None or not secret.get_secret_value() else secret.get_secret_value().encode("utf-8")


def _report(summary: Any, verb: str, as_json: bool) -> None:
    for warning in summary.warnings:
        sys.stderr.write(f"warning: {warning}\n")
    if as_json:
        emit_json(summary.to_json())
        return
    how = {"sha256": "checksum verified", "none": "NO checksum"}.get(summary.checksum, summary.checksum)
    if summary.signed:
        how += ", HMAC verified" if verb != "backed up" else ", HMAC signed"
    if verb == "backed up":
        how = "SHA-256 written" + (", HMAC signed" if summary.signed else "")
    console().print(f"{verb} {summary.to_json()['rows']} rows at revision {summary.revision} "
                    f"{'to' if verb == 'backed up' else 'from'} {summary.path} ({how})", highlight=False, soft_wrap=True)


@db_app.command("backup")
def backup_command(
    file: Annotated[str, typer.Argument(help="Backup file to write (JSON lines; replaced atomically), or to check with --verify.")],
    verify_only: Annotated[bool, typer.Option("--verify", help="Check FILE (checksum, HMAC, revision, every row) and write nothing.")] = False,
    allow_unverified: Annotated[bool, typer.Option("--allow-unverified", help="With --verify: accept an old backup without a checksum (rows still validated).")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Write every table to FILE with its SHA-256 (and an HMAC when ANCHORGPU_BACKUP_KEY is set); --verify checks a FILE instead."""
    from anchorgpu.store.backup import backup, verify

    if verify_only:
        _report(verify(file, key=_backup_key(), allow_unverified=allow_unverified), "verified", as_json)
        return
    from anchorgpu.bootstrap import system_clock
    from anchorgpu.config import Settings
    from anchorgpu.store.engine import make_engine

    engine = make_engine(Settings().database_url)
    try:
        summary = backup(engine, file, now=system_clock(), key=_backup_key())
    finally:
        engine.dispose()
    _report(summary, "backed up", as_json)


@db_app.command("restore")
def restore_command(
    file: Annotated[str, typer.Argument(help="Backup file written by 'anchorgpu db backup'.")],
    allow_unverified: Annotated[bool, typer.Option("--allow-unverified", help="Accept an old backup without a checksum, or one without an HMAC while ANCHORGPU_BACKUP_KEY is set (rows still validated).")] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Check FILE completely, then load it into this database: only an empty one at the newest revision ('anchorgpu db upgrade')."""
    from anchorgpu.config import Settings
    from anchorgpu.store.backup import restore
    from anchorgpu.store.engine import make_engine

    engine = make_engine(Settings().database_url)
    try:
        summary = restore(engine, file, key=_backup_key(), allow_unverified=allow_unverified)
    finally:
        engine.dispose()
    _report(summary, "restored", as_json)
