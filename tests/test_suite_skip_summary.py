"""A test run ends with its skipped tests listed by reason, with counts (tests/conftest.py),
without `-rs`: some tests need servers `.ci/run` sets up, and a run without them says so."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

SKIPPING = """
import pytest

@pytest.mark.parametrize("n", range(3))
def test_needs_a_server(n):
    pytest.skip("SERVER is not set: build it with make-server")

@pytest.mark.skip(reason="not on this platform")
def test_platform():
    pass

def test_runs():
    pass
"""


def run(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.slow
def test_a_run_lists_its_skipped_tests_by_reason_with_counts(tmp_path: Path) -> None:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_some.py").write_text(SKIPPING, encoding="utf-8")
    lines = run(tmp_path, "-q").splitlines()
    start = next(i for i, line in enumerate(lines) if "4 tests skipped, by reason" in line)
    assert lines[start + 1 : start + 3] == [
        "    3  test_some.py: SERVER is not set: build it with make-server",
        "    1  test_some.py: not on this platform",
    ]
    assert ".ci/run sets up aimock, llama-server, redis-server and PostgreSQL" in lines[start + 3]


@pytest.mark.slow
def test_a_run_without_skips_says_nothing_of_them(tmp_path: Path) -> None:
    shutil.copy(HERE / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_some.py").write_text("def test_runs():\n    pass\n", encoding="utf-8")
    assert "skipped" not in run(tmp_path, "-q")
