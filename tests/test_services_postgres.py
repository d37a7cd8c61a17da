"""tests/_services.py: without PostgreSQL the tests that need it skip, saying how to get it,
except in CI (`CI=true`), where they fail. (With it: tests/durable/test_durable_crash.py.)"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

NEEDS = """
def test_needs_postgres(postgres):
    pass
"""


def run(folder: Path, **env: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(HERE / "_services.py", folder / "_services.py")
    (folder / "conftest.py").write_text("from _services import postgres\n", encoding="utf-8")
    (folder / "test_pg.py").write_text(NEEDS, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-rs"],
        cwd=folder,
        env={**environ, **env},
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_without_postgresql_its_tests_skip_outside_ci_and_fail_in_ci(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-bin")
    here = run(tmp_path, TOOLREG_PG_BIN=missing)
    assert here.returncode == 0, here.stdout + here.stderr
    assert "PostgreSQL is not installed (Debian: apt-get install postgresql)" in here.stdout
    ci = run(tmp_path, TOOLREG_PG_BIN=missing, CI="true")
    assert ci.returncode == 1, ci.stdout + ci.stderr
    assert "PostgreSQL is needed in CI: PostgreSQL is not installed" in ci.stdout
