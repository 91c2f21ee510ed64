"""``anchorgpu serve``: the main job — the JSON API and the web page in one process (or N workers).

On start it migrates the database of ``ANCHORGPU_DATABASE_URL`` (the embedded SQLite file by default)
and seeds the catalog's stock, prints where to point a browser and how to get an API key, then runs
uvicorn. ``--workers N`` (N > 1) runs N processes and needs PostgreSQL: the embedded SQLite file is
for one process on one machine.
"""

from __future__ import annotations

import typer

from anchorgpu.cli._app import app

__all__ = ["serve_command"]


def _browser_host(host: str) -> str:
    """The host to print in the URL: a wildcard bind address is reached through loopback."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", help="Address to listen on (0.0.0.0 for every interface)"),
    port: int = typer.Option(8000, min=0, max=65535, help="TCP port"),
    workers: int = typer.Option(1, min=1, max=64, help="Worker processes; more than 1 needs PostgreSQL (ANCHORGPU_DATABASE_URL)"),
    log_level: str = typer.Option("info", help="uvicorn log level: critical, error, warning, info, debug"),
) -> None:
    """Serve the API (/v1, docs at /docs) and the web page; create and seed the database on first start."""
    import os
    import secrets

    import uvicorn

    from anchorgpu import bootstrap
    from anchorgpu.api.server import uvicorn_options
    from anchorgpu.config import get_settings
    from anchorgpu.errors import InvalidInput
    from anchorgpu.web.session import SESSION_SECRET_ENV

    settings = get_settings()
    embedded = settings.database_url.startswith("sqlite")
    if workers > 1 and embedded:
        raise InvalidInput(
            f"--workers {workers} needs PostgreSQL: set ANCHORGPU_DATABASE_URL=postgresql+psycopg://USER@HOST/DB "
            "(the embedded SQLite file serves one process)"
        )
    if log_level not in ("critical", "error", "warning", "info", "debug", "trace"):
        raise InvalidInput(f"--log-level {log_level!r}: use critical, error, warning, info or debug")

    store = bootstrap.bootstrap(settings)  # migrates (creating the schema on first start) and seeds stock
    database = store.engine.url.render_as_string(hide_password=True)
    # One secret for every worker, so a page session signed by one is accepted by the others.
    os.environ.setdefault(SESSION_SECRET_ENV, secrets.token_urlsafe(32))

    url = f"http://{_browser_host(host)}:{port}"
    typer.echo(f"AnchorGPU is ready on {database}")
    typer.echo(f"  page:     {url}/")
    typer.echo(f"  API:      {url}/v1   (OpenAPI {url}/openapi.json, docs {url}/docs)")
    if embedded:
        typer.echo(f"  API key:  open {url}/signin and press 'Create account', or run: anchorgpu accounts create NAME")
    else:
        typer.echo("  API key:  anchorgpu accounts create NAME   (with the same ANCHORGPU_DATABASE_URL)")
    typer.echo(f"  workers:  {workers}")

    if workers > 1:
        store.dispose()  # each worker builds its own connection pool
        uvicorn.run("anchorgpu.api.asgi:app", host=host, port=port, workers=workers, log_level=log_level, proxy_headers=False,
                    **uvicorn_options())
    else:
        from anchorgpu.api.app import create_app

        uvicorn.run(create_app(settings, store=store, rate_limit=True), host=host, port=port, log_level=log_level, proxy_headers=False,
                    **uvicorn_options())
