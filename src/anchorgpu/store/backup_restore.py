"""Restoring a backup: only into an empty database at head, in one transaction, after the whole file has been
verified (see :mod:`anchorgpu.store.backup`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, func, select, text
from sqlalchemy.exc import DBAPIError, StatementError

from anchorgpu.store.backup_format import (
    _LEGACY_REVISION,
    BackupInvalid,
    BackupSummary,
    RestoreRefused,
    _revision,
    _tables,
)
from anchorgpu.store.backup_verify import _check_integrity, _parse, _rows

__all__ = ["restore"]

_BATCH_ROWS = 500
_REPLACEABLE = frozenset({"stock"})
"""Tables a freshly migrated database already fills (seeded from the catalog); restore replaces them."""


def _occupied(conn: Any) -> list[str]:
    return [t.name for t in _tables()
            if t.name not in _REPLACEABLE and conn.execute(select(func.count()).select_from(t)).scalar_one() > 0]


def restore(engine: Engine, path: str | Path, *, key: bytes | None = None, allow_unverified: bool = False) -> BackupSummary:
    """Load the backup at ``path`` into ``engine``'s empty database at head, in one transaction, after
    :func:`verify` has accepted the whole file."""
    from anchorgpu.store.engine import write_engine
    from anchorgpu.store.migrate import head_revision

    source = Path(path)
    parsed = _parse(source, key)
    checksum, signed, warnings = _check_integrity(source, parsed, key=key, allow_unverified=allow_unverified)
    revision = _revision(engine)
    if revision is None:
        raise RestoreRefused("the target database has no AnchorGPU schema: run 'anchorgpu db upgrade' on it first, then restore")
    wanted = parsed.header.get("revision")
    if wanted == _LEGACY_REVISION and revision == head_revision():
        warnings.append(f"carried from schema revision {_LEGACY_REVISION} to {revision} as the migration does (one key per account)")
    elif revision != wanted:
        raise RestoreRefused(f"the backup is at schema revision {wanted} but the database is at {revision}; "
                             "restore into a database at the backup's revision")
    rows, counts = _rows(source, parsed)
    try:
        with write_engine(engine).connect() as conn, conn.begin():
            occupied = _occupied(conn)
            if occupied:
                raise RestoreRefused(f"the target database is not empty (it has rows in {', '.join(occupied)}); "
                                     "restore only into a freshly migrated database")
            for table in _tables():
                if table.name in _REPLACEABLE:
                    conn.execute(table.delete())
            _insert(conn, rows)
            if conn.dialect.name == "postgresql":
                _advance_sequences(conn)
    except (DBAPIError, StatementError) as exc:
        reason = str(getattr(exc, "orig", exc) or exc).splitlines()[0][:200]
        raise BackupInvalid(f"{source}: a row breaks a database constraint ({reason}); nothing was restored") from exc
    return BackupSummary(path=str(source), revision=str(revision), dialect=str(parsed.header.get("dialect")), counts=counts,
                         checksum=checksum, signed=signed, warnings=warnings)


def _insert(conn: Any, rows: list[tuple[Table, dict[str, Any]]]) -> None:
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
