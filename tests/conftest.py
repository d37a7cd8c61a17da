"""Shared fixtures. A test module may define its own `registry` fixture to override this one.

At the end of a run, the skipped tests are listed by reason with a count (not only under
`-rs`): some need third-party servers that `.ci/run` sets up (aimock, llama-server, a
redis-server, PostgreSQL), and a run without them must say so."""

from __future__ import annotations

import collections
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from toolreg import ToolRegistry
from toolreg.compat import chatglm3

# In CI (CI=true) the property tests draw the same examples every run, so a landing never
# fails on an example no earlier run saw; elsewhere they explore, and `print_blob` shows how
# to replay what they found (@reproduce_failure).
_RECURSION_LIMIT = sys.getrecursionlimit()  # before any test module is imported

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "explore")


@pytest.fixture(autouse=True)
def _recursion_limit() -> Any:
    """Each test starts at the recursion limit the run started with: a test (mypy or Sphinx
    in-process) or a module imported while collecting may raise it for good, and the
    deep-nesting tests read it."""
    sys.setrecursionlimit(_RECURSION_LIMIT)
    yield
    sys.setrecursionlimit(_RECURSION_LIMIT)


@pytest.fixture
def empty_chatglm3_registry() -> Iterator[None]:
    """ChatGLM3's registry is module-level (as in ChatGLM3): the test starts with it empty,
    whatever a test before it in this process registered there (a docs test loads
    samples/chatglm3_tools.py in-process), and leaves it as it was."""
    saved = chatglm3.registry.tools()
    for tool in saved:
        chatglm3.registry.unregister(tool.name, version=tool.version)
    yield
    for name in chatglm3.registry.names():
        for tool in chatglm3.registry.versions(name):
            chatglm3.registry.unregister(name, version=tool.version)
    for tool in saved:
        chatglm3.registry.add(tool)


@pytest.fixture
def registry() -> ToolRegistry:
    """A fresh registry with one tool: `get_weather(city)`."""
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather of a city."""
        return {"city": city, "temp": 18}

    return reg


@pytest.fixture
def adder() -> ToolRegistry:
    """A fresh registry with one tool: `add(a, b)` on integers."""
    reg = ToolRegistry()

    @reg.register_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return reg


def skip_reasons(reports: list[pytest.TestReport]) -> list[tuple[int, str, str]]:
    """(count, test files, reason) for the skipped tests in `reports`, the most first."""
    counts: collections.Counter[str] = collections.Counter()
    files: dict[str, set[str]] = collections.defaultdict(set)
    for report in reports:
        if isinstance(report.longrepr, tuple):  # (path, line, "Skipped: reason")
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        else:
            reason = str(report.longrepr)
        counts[reason] += 1
        files[reason].add(Path(report.nodeid.split("::")[0]).name)
    return [(n, ", ".join(sorted(files[r])), r) for r, n in counts.most_common()]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.skipped]
    if not skipped:
        return
    terminalreporter.write_sep("=", f"{len(skipped)} tests skipped, by reason")
    for count, files, reason in skip_reasons(skipped):
        terminalreporter.write_line(f"{count:5d}  {files}: {reason}")
    terminalreporter.write_line(
        "To run them, do what each reason says; .ci/run sets up aimock, llama-server, "
        "redis-server and PostgreSQL (docs/contributing.md, 'Quality gates')."
    )
