"""The benchmark script still runs (a smoke run: no timing is asserted, ever)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_runs_and_reports_every_section() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/run.py", "--quick", "--peers", "none", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    text = json.dumps(report)
    for section in ("registration", "dispatch", "import", "concurrency", "scale"):
        assert section in text
