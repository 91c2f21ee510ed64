"""``anchorgpu`` command line: thin face over the same services as the API and the web page.

Exit codes: 0 ok, 2 bad input (one-line reason), 3 not found, 4 conflict.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def _register_commands() -> None:
    # Each module adds its commands to ``_app.app`` when imported.
    from anchorgpu.cli import (  # noqa: F401
        commerce,
        db,
        glossary,
        hardware,
        models,
        plan,
        recommend,
        serve,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code instead of raising ``SystemExit``."""
    import click.exceptions as click_exc
    import typer

    from anchorgpu.cli._app import app
    from anchorgpu.errors import AnchorError

    _register_commands()
    command = typer.main.get_command(app)
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
        sys.stderr.write(f"error: {' '.join(exc.format_message().split())}\n")
        return 2
    except click_exc.ClickException as exc:
        sys.stderr.write(f"error: {' '.join(exc.format_message().split())}\n")
        return 2
    except AnchorError as exc:
        sys.stderr.write(f"error: {exc.message}\n")
        return exc.exit_code
    return result if isinstance(result, int) else 0


def entry() -> None:  # pragma: no cover - console-script wrapper
    sys.exit(main())
