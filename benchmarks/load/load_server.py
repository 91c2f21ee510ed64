"""The system under test: a fresh PostgreSQL database, ``anchorgpu serve --workers 2`` on it, and the faults.

Everything here stays on loopback: the database is on 127.0.0.1:5432 (trust auth, user ``postgres``) and
the server binds 127.0.0.1 on a free port. Every process started here is stopped by :meth:`Server.stop`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

DEFAULT_ADMIN_URL = os.environ.get("ANCHORGPU_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")


def _psycopg_dsn(sqlalchemy_url: str) -> str:
    """``postgresql+psycopg://…`` → the libpq URL psycopg itself takes."""
    return sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://", 1)


def url_for(admin_url: str, database: str) -> str:
    """The SQLAlchemy URL of ``database`` on the server of ``admin_url``."""
    from sqlalchemy.engine import make_url

    return make_url(admin_url).set(database=database).render_as_string(hide_password=False)


def postgres_reachable(admin_url: str) -> str | None:
    """None when the server answers, else a one-line reason."""
    import psycopg

    try:
        with psycopg.connect(_psycopg_dsn(admin_url), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # refused, auth, DNS
        return f"PostgreSQL at {admin_url} is not reachable ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    return None


def create_database(admin_url: str) -> str:
    """Create an empty database with a fresh name; return the name."""
    import psycopg

    name = f"agpu_load_{secrets.token_hex(5)}"
    with psycopg.connect(_psycopg_dsn(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(_psycopg_dsn(admin_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def terminate_backends(admin_url: str, database: str) -> tuple[int, int]:
    """``pg_terminate_backend`` every connection to ``database`` (the API workers' pools) now.

    Returns (connections terminated, of which inside an open transaction at that moment).
    """
    import psycopg

    with psycopg.connect(_psycopg_dsn(admin_url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid), xact_start IS NOT NULL FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        ).fetchall()
    return sum(1 for ok, _ in rows if ok), sum(1 for ok, in_tx in rows if ok and in_tx)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def anchorgpu_executable() -> str:
    """The ``anchorgpu`` script beside this interpreter (the project's .venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "anchorgpu"
    if beside.exists():
        return str(beside)
    found = shutil.which("anchorgpu")
    if found is None:
        raise SystemExit("error: the anchorgpu command is not installed (run ./dev test once, or pip install -e .)")
    return found


def run_cli(args: list[str], env: dict[str, str], timeout_s: float = 120) -> str:
    """Run ``anchorgpu ARGS`` with ``env``; return stdout; raise with its stderr when it fails."""
    done = subprocess.run([anchorgpu_executable(), *args], env=env, capture_output=True, text=True, timeout=timeout_s)
    if done.returncode != 0:
        raise RuntimeError(f"anchorgpu {' '.join(args)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return done.stdout


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live child processes of ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            state = stat.rsplit(")", 1)[1].split()[0]
            if ppid != pid or state == "Z":
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        out.append((int(entry.name), cmdline))
    return out


@dataclass
class Server:
    """``anchorgpu serve --workers N`` on ``database_url`` and a free loopback port."""

    database_url: str
    workers: int = 2
    log_path: Path | None = None
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_timeout_s: float = 90) -> None:
        self.env = {**os.environ, "ANCHORGPU_DATABASE_URL": self.database_url, "ANCHORGPU_OFFLINE": "1",
                    "ANCHORGPU_SESSION_SECRET": secrets.token_urlsafe(24)}
        log: Any = open(self.log_path, "wb") if self.log_path else subprocess.DEVNULL  # noqa: SIM115
        self.process = subprocess.Popen(
            [anchorgpu_executable(), "serve", "--host", "127.0.0.1", "--port", str(self.port),
             "--workers", str(self.workers), "--log-level", "warning"],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        self.wait_healthy(ready_timeout_s, workers=self.workers)

    def worker_pids(self) -> list[int]:
        """The uvicorn worker processes (spawned children running ``spawn_main``), not the resource tracker."""
        assert self.process is not None
        return sorted(pid for pid, cmd in _children(self.process.pid) if "spawn_main" in cmd)

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/v1/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_healthy(self, timeout_s: float, *, workers: int) -> float:
        """Wait until ``workers`` workers run and /v1/healthz answers 200 twice in a row; return seconds waited."""
        began = time.monotonic()
        while time.monotonic() - began < timeout_s:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"anchorgpu serve exited with {self.process.returncode}; see {self.log_path}")
            if len(self.worker_pids()) >= workers and self.healthy() and self.healthy():
                return time.monotonic() - began
            time.sleep(0.1)
        raise RuntimeError(f"anchorgpu serve did not become healthy with {workers} workers in {timeout_s} s")

    def kill_one_worker(self) -> int:
        """SIGKILL one worker (as an out-of-memory kill would); return its pid."""
        pids = self.worker_pids()
        if not pids:
            raise RuntimeError("no worker to kill")
        victim = pids[0]
        os.kill(victim, signal.SIGKILL)
        return victim

    def wait_replaced(self, victim: int, timeout_s: float = 60) -> tuple[float, list[int]]:
        """Wait until the supervisor has replaced ``victim`` and the server answers again.

        Returns (seconds to recovery, the new worker pids). Raises when it does not recover.
        """
        began = time.monotonic()
        while time.monotonic() - began < timeout_s:
            pids = self.worker_pids()
            if victim not in pids and len(pids) >= self.workers and self.healthy():
                return time.monotonic() - began, pids
            time.sleep(0.05)
        raise RuntimeError(f"worker {victim} was not replaced within {timeout_s} s (workers now: {self.worker_pids()})")

    def stop(self) -> None:
        """SIGTERM the server's process group (supervisor and workers); SIGKILL what is left after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        pgid = os.getpgid(self.process.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.process.wait(timeout=5)
