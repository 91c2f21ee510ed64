"""``anchorgpu`` command line: thin face over the same services as the API and the web page.

Exit codes: 0 ok, 2 bad input (one-line reason), 3 not found, 4 conflict.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


# The module that defines each read command, so that ``anchorgpu plan`` imports (and Typer inspects) one
# module instead of all of them: the cold-start budget is 0.5 s. Any other name, or a name whose module
# turns out not to define it, loads every module as before.
_COMMAND_MODULES = {"plan": "plan", "model": "models", "models": "models", "gpus": "hardware",
                    "recommend": "recommend", "glossary": "glossary"}


def _register_commands(argv: list[str] | None = None) -> None:
    # Each module adds its commands to ``_app.app`` when imported.
    import importlib

    from anchorgpu.cli._app import app

    args = sys.argv[1:] if argv is None else argv
    name = args[0] if args else ""  # the root takes no options before the command but --help (→ load all)
    module = _COMMAND_MODULES.get(name)
    if module is not None:
        importlib.import_module(f"anchorgpu.cli.{module}")
        if any(info.name == name for info in app.registered_commands):
            return
    from anchorgpu.cli import (  # noqa: F401  (booking imports commerce first: its commands follow commerce's)
        booking,
        commerce,
        db,
        glossary,
        hardware,
        keys,
        models,
        plan,
        recommend,
        serve,
    )


def _one_line(message: str) -> str:
    """Click's message on one line, each sentence once (Click and Typer both append "Did you mean 'plan'?").

    >>> _one_line("No such command 'plna'.\\nDid you mean 'plan'? Did you mean 'plan'?")
    "No such command 'plna'. Did you mean 'plan'?"
    """
    import re

    sentences: list[str] = []
    for sentence in re.split(r"(?<=[.?!])\s+", " ".join(message.split())):
        if sentence not in sentences:
            sentences.append(sentence)
    return " ".join(sentences)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising ``SystemExit``."""
    import click.exceptions as click_exc
    import typer

    from anchorgpu.cli._app import app
    from anchorgpu.cli._ascii import ascii_numbers
    from anchorgpu.errors import AnchorError

    _register_commands(argv)
    command = ascii_numbers(typer.main.get_command(app))  # numbers in ASCII digits only, as in the API
    try:
        result = command.main(args=argv, prog_name="anchorgpu", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except click_exc.NoArgsIsHelpError as exc:
        exc.show()
        return 0
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        return 1
    except click_exc.UsageError as exc:
        sys.stderr.write(f"error: {_one_line(exc.format_message())}\n")
        return 2
    except click_exc.ClickException as exc:
        sys.stderr.write(f"error: {_one_line(exc.format_message())}\n")
        return 2
    except AnchorError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return exc.exit_code
    except Exception as exc:
        reason = _database_failure(exc)
        if reason is None:
            raise
        sys.stderr.write(f"error: {reason}\n")
        return 1
    return result if isinstance(result, int) else 0


def _database_failure(exc: BaseException) -> str | None:
    """One line for a database the CLI cannot use (a file that is not a database, a server that is down), or None
    when ``exc`` is not such an error: the driver's own first line, never the URL (it may hold a password)."""
    if not type(exc).__module__.startswith("sqlalchemy"):
        return None
    from sqlalchemy.exc import DBAPIError

    if not isinstance(exc, DBAPIError):
        return None
    lines = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
    return f"the database (ANCHORGPU_DATABASE_URL) cannot be used: {lines[0] if lines else type(exc.orig).__name__}"


def entry() -> None:  # pragma: no cover - console-script wrapper
    # One OpenBLAS thread unless the user says otherwise: the planner makes no BLAS call (its arrays are elementwise),
    # and the thread pool OpenBLAS starts when numpy is imported costs ~70 ms of CPU on a 2-CPU machine (~125 ms of a
    # 70B training recommend's process CPU), taken from whatever else runs there. Set before numpy is imported.
    import os

    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
