"""The one way tests run the CLI in-process: ``anchorgpu.cli.main(argv)`` with pytest's ``capsys``.

Importable from any test folder (``pythonpath = ["tests"]`` in pyproject.toml).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from anchorgpu.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of ``anchorgpu ARGV``."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """The parsed ``--json`` answer of ``anchorgpu ARGV --json``; fails the test on a non-zero exit."""
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def store_cli(
    database_url: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Any:
    """``run(*argv, code=0) -> (output, stderr)`` against ``database_url`` with a fresh config folder and no API key
    in the environment; ``--json`` output comes back parsed. Fails the test when the exit code is not ``code``."""
    monkeypatch.setenv("ANCHORGPU_DATABASE_URL", database_url)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ANCHORGPU_API_KEY", raising=False)

    def run_cli(*argv: str, code: int = 0) -> Any:
        result = main(list(argv))
        out, err = capsys.readouterr()
        assert result == code, f"exit {result}; stdout: {out}; stderr: {err}"
        return (json.loads(out) if "--json" in argv and code == 0 else out), err

    return run_cli
