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
    sections = {"registration", "dispatch", "import", "concurrency", "scale", "loop", "targets"}
    assert sections <= report.keys()
    assert report["targets"], "the targets table is empty"
    loop_rows = {row["label"] for row in report["loop"]["rows"]}
    assert {"toolreg Conversation, tools", "toolreg Conversation, responses"} <= loop_rows
    assert {"export", "rebuild", "resume overhead"} <= report["loop"]["state"]["rows"].keys()
