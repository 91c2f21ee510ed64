"""``python -m anchorgpu`` runs the same command line as the console script (a new user's first try when the script
is not on PATH; it said "No module named anchorgpu.__main__")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def test_python_dash_m_runs_the_cli() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC), "ANCHORGPU_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "anchorgpu", "plan", "llama-3.1-8b", "--gpu", "h100", "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert '"fits": true' in done.stdout
    bad = subprocess.run([sys.executable, "-m", "anchorgpu", "plan", "llama-3.1-8b", "--gpu", "h100", "--tp", "0"],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1, bad.stderr
