"""The load, race and fault harness at CI size, on PostgreSQL (``benchmarks/load/run.py --reduced``).

A real ``anchorgpu serve --workers 2`` on a fresh PostgreSQL database; 16 clients book, retry, race for
the last 3 servers of an offering, stop/start/extend and terminate, while one worker is killed with
SIGKILL, every database connection is terminated, and some clients hang up before their answers. The
harness then checks the database against the clients' record (every acknowledged booking exactly once,
no overselling at any instant, replays identical, no cross-account reads, no 500). The full run is
``.venv/bin/python benchmarks/load/run.py`` (64 clients, 30 s); see the README's reliability section.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

HARNESS = Path(__file__).resolve().parents[2] / "benchmarks" / "load" / "run.py"


def test_the_reduced_load_run_with_faults_loses_nothing_and_applies_nothing_twice(_postgres_admin: Any, tmp_path: Path) -> None:
    # _postgres_admin (root conftest) skips this test with a clear message when PostgreSQL is unreachable.
    admin_url = _postgres_admin.url.render_as_string(hide_password=False)
    out = tmp_path / "report.json"
    done = subprocess.run([sys.executable, str(HARNESS), "--reduced", "--postgres", admin_url, "--json-out", str(out)],
                          capture_output=True, text=True, timeout=420)
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(out.read_text())
    failed = {name: c["problems"] for name, c in report["checks"].items() if not c["ok"]}
    assert failed == {}, done.stdout[-3000:]
    assert done.returncode == 0 and report["ok"]

    # The run did what it claims: load, a race that was lost by someone, both faults, hang-ups, replays.
    traffic, faults = report["traffic"], {f["fault"]: f for f in report["faults"]}
    assert report["load"]["bookings"] > 0 and report["healthz"]["requests"] > 0
    assert traffic["race_wins"] >= 1 and traffic["race_refusals"] >= 1
    assert report["database"]["peak_servers"]["h100-sxm-8x-bm@eu-north"] <= report["database"]["race_stock"]
    assert traffic["hung_up_before_answer"] >= 1 and traffic["replayed_answers"] >= 1 and traffic["reuse_refusals"] >= 1
    killed = faults["kill -9 one API worker"]
    assert killed["victim_pid"] not in killed["workers_after"] and len(killed["workers_after"]) == 2
    assert faults["pg_terminate_backend on every connection"]["connections_terminated"] >= 1
