"""The installed entry point in a real process: one line on stderr and the exit code, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    code = "import sys; from anchorgpu.cli import entry; sys.argv[0] = 'anchorgpu'; entry()"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60, env=env)


def test_a_truncated_config_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama", "hidden_size": 40')
    done = run("model", str(path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"error: {path}: not valid JSON") and done.stderr.count("\n") == 1


def test_an_unknown_model_exits_3_and_a_good_one_prints_json() -> None:
    done = run("model", "mistral-8b")
    assert done.returncode == 3 and "did you mean" in done.stderr and "Traceback" not in done.stderr
    done = run("model", "qwen3-8b", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["params_total"] == 8190735360  # transformers_counts.json
