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
