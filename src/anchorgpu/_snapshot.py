"""Parsed snapshots of the shipped TOML data files (GPU specs, sources, model registry), so a cold start
skips the TOML parser. Pure; stdlib only; shared by ``hardware`` and ``architectures``.

The TOML files stay the one source of truth. Next to each one (``X.toml``) ships ``X.parsed.json``: the
document ``tomllib`` gives for that text, plus a fingerprint (length and CRC-32) of the text it was made
from. :func:`loads` returns the snapshot only when the fingerprint matches the TOML text read now, and
otherwise parses the TOML (so an edited file is never read stale; a test flags the stale snapshot).
Regenerate after editing a data file: ``.venv/bin/python -m anchorgpu._snapshot``.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

__all__ = ["SNAPSHOT_FILES", "fingerprint", "loads", "read_snapshot", "render", "snapshot_name"]

SNAPSHOT_FILES: dict[str, tuple[str, ...]] = {  # package -> TOML files under its data/
    "anchorgpu.hardware": ("gpus.toml", "sources.toml"),
    "anchorgpu.architectures": ("registry.toml",),
}


def snapshot_name(toml_file: str) -> str:
    """``gpus.toml`` → ``gpus.parsed.json``.

    >>> snapshot_name("registry.toml")
    'registry.parsed.json'
    """
    return toml_file.removesuffix(".toml") + ".parsed.json"


def fingerprint(text: str) -> str:
    """Length and CRC-32 of the UTF-8 text: changes with any edit (collisions by accident are negligible).

    >>> fingerprint("a = 1\\n")
    '6:af2fda68'
    """
    data = text.encode("utf-8")
    return f"{len(data)}:{zlib.crc32(data):08x}"


def loads(text: str, snapshot_text: str | None) -> dict[str, Any]:
    """``tomllib.loads(text)``, read from ``snapshot_text`` when that snapshot was made from this very text.

    Raises ``tomllib.TOMLDecodeError`` exactly as ``tomllib.loads`` does when the text is not valid TOML.
    """
    if snapshot_text:
        try:
            snap = json.loads(snapshot_text)
        except ValueError:
            snap = None
        if isinstance(snap, dict) and snap.get("fingerprint") == fingerprint(text) and isinstance(snap.get("data"), dict):
            data: dict[str, Any] = snap["data"]
            return data
    import tomllib

    return tomllib.loads(text)


def render(text: str) -> str:
    """The snapshot file for a TOML text (keys in file order; refuses values JSON cannot carry, e.g. dates)."""
    import tomllib

    doc = {"fingerprint": fingerprint(text), "data": tomllib.loads(text)}
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"


def read_snapshot(package: str, toml_file: str) -> str | None:
    """The shipped snapshot text of ``<package>/data/<toml_file>``, or None when there is none."""
    from importlib import resources  # here: importing it costs ~10 ms that a run which reads no data file saves

    try:
        return resources.files(package).joinpath("data", snapshot_name(toml_file)).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None


def main() -> None:  # pragma: no cover - a maintenance command
    """Rewrite every snapshot from its TOML file."""
    from importlib import resources

    for package, names in SNAPSHOT_FILES.items():
        folder = resources.files(package).joinpath("data")
        for name in names:
            text = folder.joinpath(name).read_text(encoding="utf-8")
            with resources.as_file(folder.joinpath(snapshot_name(name))) as path:
                path.write_text(render(text), encoding="utf-8")
            print(f"wrote {package}/data/{snapshot_name(name)}")


if __name__ == "__main__":  # pragma: no cover
    main()
