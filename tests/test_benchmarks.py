"""The benchmark script still runs (a smoke run: no timing is asserted, ever)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow
def test_serve_load_runs_every_configuration() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/serve_load.py",
            "--quick",
            "--calls",
            "40",
            "--clients",
            "2",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    configs = ["none", "auth", "rate limit", "auth + rate limit", "cache"]
    if shutil.which("redis-server") is not None:  # buckets shared in a redis-server of its own
        configs.append("rate limit (redis)")
    assert [row["config"] for row in report["rows"]] == configs
    assert [row["errors"] for row in report["rows"]] == [0] * len(configs)
    assert [row["config"] for row in report["in_process"]] == configs
    peer = ["fastmcp none", "fastmcp auth + rate limit"]
    assert [row["config"] for row in report["peer"]] == peer
    assert [row["errors"] for row in report["peer"]] == [0, 0]
    assert [row["config"] for row in report["vs_peer"]] == ["none", "auth + rate limit"]
    assert [row["server"] for row in report["policy_cost"]] == ["toolreg", "FastMCP"]
    assert all(row["p95_ms"] >= row["p50_ms"] > 0 for row in report["rows"] + report["peer"])
