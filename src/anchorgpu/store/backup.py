"""Backups that restore: every table as JSON lines, portable between SQLite and PostgreSQL.

``anchorgpu db backup FILE`` / ``anchorgpu db restore FILE``. The file is UTF-8 JSON lines::

    {"format": "anchorgpu-backup", "version": 1, "revision": "<alembic revision>", "dialect": "postgresql",
     "created_at": "...", "tables": ["accounts", "stock", "quotes", ...]}
    {"table": "accounts", "row": {"id": "acct_…", "name": "…", "api_key_hash": "…", "created_at": "…"}}
    ...
    {"end": true, "counts": {"accounts": 3, ...}}

* Tables come in dependency order (parents before children: SQLAlchemy's ``sorted_tables``), so a restore
  inserts them in file order. Instants are ISO 8601 UTC strings, money is a decimal string, JSON columns
  stay JSON: a SQLite backup restores into PostgreSQL and back.
* The backup reads one consistent snapshot (one transaction; REPEATABLE READ on PostgreSQL) and is written
  to a temporary file renamed into place, so a crash never leaves a half-written FILE behind.
* The last line carries the row counts: a truncated or edited file is refused, not half restored.
* Restore runs only into a database migrated to the backup's revision that holds no accounts, quotes,
  allocations, events, bookings or idempotency keys (a fresh ``anchorgpu db upgrade``: its seeded stock
  rows are replaced by the backup's). It is one transaction: all rows or none. On PostgreSQL the id
  sequences are moved past the restored ids so that new rows do not collide.

Following the seeds' rule for training checkpoints — a checkpoint counts only once it has been restored —
the tests restore every backup into an empty database and compare every row.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import IO, Any

from sqlalchemy import Engine, Table, func, select, text

from anchorgpu.errors import Conflict, InvalidInput
from anchorgpu.store.tables import metadata
from anchorgpu.store.types import Money, UtcDateTime

__all__ = [
    "BACKUP_FORMAT",
    "BACKUP_VERSION",
    "BackupInvalid",
    "BackupSummary",
    "RestoreRefused",
    "backup",
    "dump_rows",
    "restore",
]

BACKUP_FORMAT = "anchorgpu-backup"
BACKUP_VERSION = 1
_BATCH_ROWS = 500
_REPLACEABLE = frozenset({"stock"})
"""Tables a freshly migrated database already fills (seeded from the catalog); restore replaces them."""


class BackupInvalid(InvalidInput):
    """The file is not a complete AnchorGPU backup (wrong format, truncated, unknown table or column)."""

    code = "backup_invalid"


class RestoreRefused(Conflict):
    """The target database is not empty, not migrated, or at another schema revision than the backup."""

    code = "restore_refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupSummary:
    """What a backup or restore covered: schema revision, dialect of the source and rows per table."""

    path: str
    revision: str
    dialect: str
    counts: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "revision": self.revision, "dialect": self.dialect, "counts": dict(self.counts),
                "rows": sum(self.counts.values())}


def _tables() -> list[Table]:
    return list(metadata.sorted_tables)


def _encode(table: Table, row: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in table.columns:
        value = row._mapping[column.name]
        if value is not None and isinstance(column.type, UtcDateTime):
            value = value.astimezone(UTC).isoformat()
        elif value is not None and isinstance(column.type, Money):
            value = str(value)
        out[column.name] = value
    return out


def _decode(table: Table, values: dict[str, Any], line_no: int) -> dict[str, Any]:
    unknown = set(values) - set(table.columns.keys())
    if unknown:
        raise BackupInvalid(f"line {line_no}: table {table.name} has no column {sorted(unknown)[0]!r}")
    out: dict[str, Any] = {}
    for column in table.columns:
        value = values.get(column.name)
        try:
            if value is not None and isinstance(column.type, UtcDateTime):
                value = datetime.fromisoformat(value)
                if value.tzinfo is None:
                    raise ValueError("no time zone")
            elif value is not None and isinstance(column.type, Money):
                value = Decimal(value)
        except (TypeError, ValueError, InvalidOperation) as exc:
            raise BackupInvalid(f"line {line_no}: {table.name}.{column.name} = {value!r} is not valid ({exc})") from exc
        out[column.name] = value
    return out


def _revision(engine: Engine) -> str | None:
    from anchorgpu.store.migrate import current_revision

    return current_revision(engine)


def dump_rows(engine: Engine) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every row of every table as ``(table name, JSON-ready row)``, in dependency order, from one snapshot.

    Rows of a table come in primary-key order, so two dumps of equal databases are equal.
    """
    connection = engine.connect()
    if engine.dialect.name == "postgresql":
        connection = connection.execution_options(isolation_level="REPEATABLE READ")
    with connection as conn, conn.begin():
        for table in _tables():
            for row in conn.execute(select(table).order_by(*table.primary_key.columns)):
                yield table.name, _encode(table, row)


def backup(engine: Engine, path: str | Path, *, now: datetime) -> BackupSummary:
    """Write every table of ``engine``'s database to ``path`` (JSON lines, see the module docstring)."""
    revision = _revision(engine)
    if revision is None:
        raise RestoreRefused("nothing to back up: the database has no AnchorGPU schema (run: anchorgpu db upgrade)")
    target = Path(path)
    if target.is_dir():
        raise InvalidInput(f"backup file {str(target)!r} is a directory")
    target.parent.mkdir(parents=True, exist_ok=True)
    counts = {t.name: 0 for t in _tables()}
    header = {"format": BACKUP_FORMAT, "version": BACKUP_VERSION, "revision": revision, "dialect": engine.dialect.name,
              "created_at": now.astimezone(UTC).isoformat(), "tables": list(counts)}
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            _write(out, header)
            for name, row in dump_rows(engine):
                _write(out, {"table": name, "row": row})
                counts[name] += 1
            _write(out, {"end": True, "counts": counts})
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return BackupSummary(path=str(target), revision=revision, dialect=engine.dialect.name, counts=counts)


def _write(out: IO[str], value: dict[str, Any]) -> None:
    out.write(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    out.write("\n")


def _read(path: Path) -> tuple[dict[str, Any], list[tuple[Table, dict[str, Any]]], dict[str, int]]:
    """Parse and validate the whole file before anything is written."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot read backup file {str(path)!r}: {exc.strerror or exc}") from exc
    tables = {t.name: t for t in _tables()}
    order = list(tables)
    header: dict[str, Any] | None = None
    rows: list[tuple[Table, dict[str, Any]]] = []
    end: dict[str, Any] | None = None
    position = 0
    with handle:
        try:
            for line_no, line in enumerate(handle, start=1):
                try:
                    item = json.loads(line)
                except ValueError as exc:
                    raise BackupInvalid(f"{path}: line {line_no} is not JSON") from exc
                if not isinstance(item, dict):
                    raise BackupInvalid(f"{path}: line {line_no} is not a JSON object")
                if header is None:
                    if item.get("format") != BACKUP_FORMAT or item.get("version") != BACKUP_VERSION:
                        raise BackupInvalid(f"{path} is not an AnchorGPU backup (version {BACKUP_VERSION})")
                    header = item
                elif end is not None:
                    raise BackupInvalid(f"{path}: line {line_no} comes after the end line")
                elif item.get("end") is True:
                    end = item
                else:
                    name, values = item.get("table"), item.get("row")
                    if name not in tables or not isinstance(values, dict):
                        raise BackupInvalid(f"{path}: line {line_no}: unknown table {name!r}")
                    if order.index(name) < position:
                        raise BackupInvalid(f"{path}: line {line_no}: table {name} out of dependency order")
                    position = order.index(name)
                    rows.append((tables[name], _decode(tables[name], values, line_no)))
        except UnicodeDecodeError as exc:
            raise BackupInvalid(f"{path} is not UTF-8 text") from exc
    if header is None:
        raise BackupInvalid(f"{path} is empty")
    if end is None:
        raise BackupInvalid(f"{path} is truncated: it has no end line")
    seen: dict[str, int] = {name: 0 for name in tables}
    for table, _ in rows:
        seen[table.name] += 1
    if end.get("counts") != seen:
        raise BackupInvalid(f"{path}: the rows do not match the counts of its end line (edited or damaged)")
    return header, rows, seen


def _occupied(conn: Any) -> list[str]:
    return [t.name for t in _tables()
            if t.name not in _REPLACEABLE and conn.execute(select(func.count()).select_from(t)).scalar_one() > 0]


def restore(engine: Engine, path: str | Path) -> BackupSummary:
    """Load the backup at ``path`` into ``engine``'s empty, migrated database, in one transaction."""
    from anchorgpu.store.engine import write_engine

    source = Path(path)
    header, rows, counts = _read(source)
    revision = _revision(engine)
    if revision is None:
        raise RestoreRefused("the target database has no AnchorGPU schema: run 'anchorgpu db upgrade' on it first, then restore")
    if revision != header.get("revision"):
        raise RestoreRefused(f"the backup is at schema revision {header.get('revision')} but the database is at {revision}; "
                             "restore into a database at the backup's revision")
    with write_engine(engine).connect() as conn, conn.begin():
        occupied = _occupied(conn)
        if occupied:
            raise RestoreRefused(f"the target database is not empty (it has rows in {', '.join(occupied)}); "
                                 "restore only into a freshly migrated database")
        for table in _tables():
            if table.name in _REPLACEABLE:
                conn.execute(table.delete())
        batch: list[dict[str, Any]] = []
        current: Table | None = None
        for table, values in rows:
            if table is not current or len(batch) >= _BATCH_ROWS:
                if current is not None and batch:
                    conn.execute(current.insert(), batch)
                batch, current = [], table
            batch.append(values)
        if current is not None and batch:
            conn.execute(current.insert(), batch)
        if conn.dialect.name == "postgresql":
            _advance_sequences(conn)
    return BackupSummary(path=str(source), revision=str(header["revision"]), dialect=str(header.get("dialect")), counts=counts)


def _advance_sequences(conn: Any) -> None:
    """Move each serial id sequence past the largest restored id (explicit ids do not advance them)."""
    for table in _tables():
        for column in table.primary_key.columns:
            if column.autoincrement is True or (column.autoincrement == "auto" and column.type.python_type is int):
                sequence = conn.execute(text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table.name, "c": column.name}).scalar()
                if sequence is None:
                    continue
                top = conn.execute(select(func.max(column))).scalar()
                conn.execute(text("SELECT setval(:s, :v, :called)"),
                             {"s": sequence, "v": top if top is not None else 1, "called": top is not None})
