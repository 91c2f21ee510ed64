"""The backup file's format, shared by writing, verifying and restoring (see :mod:`anchorgpu.store.backup`).

The header's format name and version, the canonical form of a line (what the checksum and HMAC cover), the
tables in dependency order, the two refusals, and the summary every operation returns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import IO, Any

from sqlalchemy import Engine, Table

from anchorgpu.errors import Conflict, InvalidInput
from anchorgpu.store.tables import metadata

__all__ = ["BACKUP_FORMAT", "BACKUP_VERSION", "BackupInvalid", "BackupSummary", "RestoreRefused", "write_canonical"]

BACKUP_FORMAT = "anchorgpu-backup"
BACKUP_VERSION = 2
_UNVERIFIED_VERSION = 1
_LEGACY_REVISION = "0001_initial"


class BackupInvalid(InvalidInput):
    """The file is not a complete, unedited, valid AnchorGPU backup; nothing was written."""

    code = "backup_invalid"


class RestoreRefused(Conflict):
    """The target database is not empty, not migrated, or at another schema revision than the backup."""

    code = "restore_refused"


@dataclass(frozen=True, slots=True, kw_only=True)
class BackupSummary:
    """What a backup, check or restore covered: schema revision, source dialect, rows per table, how it was checked."""

    path: str
    revision: str
    dialect: str
    counts: dict[str, int]
    checksum: str = "sha256"  # "sha256", or "none" for an old unverified file
    signed: bool = False  # an HMAC under ANCHORGPU_BACKUP_KEY was written / checked
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"file": self.path, "revision": self.revision, "dialect": self.dialect, "counts": dict(self.counts),
                "rows": sum(self.counts.values()), "checksum": self.checksum, "signed": self.signed,
                "warnings": list(self.warnings)}


def _tables() -> list[Table]:
    return list(metadata.sorted_tables)


def _canonical(item: dict[str, Any]) -> bytes:
    return (json.dumps(item, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")


def _revision(engine: Engine) -> str | None:
    from anchorgpu.store.migrate import current_revision

    return current_revision(engine)


def write_canonical(out: IO[bytes], item: dict[str, Any]) -> None:
    """Write one line as the backup does (for tools and tests that build backups by hand)."""
    out.write(_canonical(item))
