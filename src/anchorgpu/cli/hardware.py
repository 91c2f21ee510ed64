"""CLI commands of this area (filled in by the area's work)."""

from __future__ import annotations

from anchorgpu.cli._app import app  # noqa: F401
