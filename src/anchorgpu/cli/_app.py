"""The Typer application every command module registers on, and the helpers they share.

Command modules import ``app`` from here and decorate their commands; they import heavy libraries
(SQLAlchemy, FastAPI, numpy) inside the command functions so that ``anchorgpu plan`` starts fast.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from enum import Enum
from typing import Any

import typer

app = typer.Typer(
    name="anchorgpu",
    help="Will this ML workload fit, on which GPUs, how fast, at what cost - and book it exactly once.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """AnchorGPU: plan GPU workloads, compare offerings, quote and book capacity."""


def to_jsonable(value: Any) -> Any:
    """Plain JSON types from our values: Decimal → string (exact money), datetimes → ISO 8601."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return to_jsonable(value.model_dump(mode="json"))
    return value


def emit_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (the contract for ``--json``)."""
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")


def console() -> Any:
    """A Rich console on stdout (imported lazily)."""
    from rich.console import Console

    return Console(highlight=False)


@app.command("version")
def version_command() -> None:
    """Print the AnchorGPU version."""
    from anchorgpu import __version__

    typer.echo(__version__)
