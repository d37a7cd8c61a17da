"""Every code example in the README runs: Python blocks in order, `toolreg` shell lines too."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest

import toolreg
from toolreg.testing import ScriptedServer, text, tool_call

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in BLOCK.findall(README) if lang == language]


@pytest.fixture
def clean_default_registry() -> object:
    before = set(toolreg.default_registry.names())
    yield
    for name in set(toolreg.default_registry.names()) - before:
        toolreg.default_registry.unregister(name)


def test_readme_has_the_two_quickstart_commands() -> None:
    shell = "\n".join(blocks("bash"))
    assert "pip install . && toolreg demo" in shell
    assert "pip install -e '.[dev]' && pytest" in shell
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[dev]'" in ci
    assert re.search(r"^pytest$", ci, re.MULTILINE), "CI must run the README's test command"


@pytest.mark.usefixtures("clean_default_registry")
def test_python_examples_run_in_order(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [
        tool_call("get_weather", city="Beijing"),
        text("It is 18 °C in Beijing."),
        text('{"city": "Beijing", "temperature": 18}'),
    ]
    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("TOOLREG_MODEL", "scripted-model")
        module = types.ModuleType("readme_examples")  # a real module: hints resolve in it
        monkeypatch.setitem(sys.modules, module.__name__, module)
        namespace = module.__dict__
        for number, code in enumerate(blocks("python"), 1):
            try:
                exec(compile(code, f"README.md python block {number}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message says which block
                raise AssertionError(f"README python block {number} failed: {exc!r}") from exc
        server.assert_all_consumed()
        server.assert_request(1, contains_tool_result="call_1")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == '{"city": "北京", "temperature": 18, "unit": "c"}'
    assert "It is 18 °C in Beijing." in printed
    assert "Forecast(city='Beijing', temperature=18.0)" in printed
    assert "3 mugs left." in printed  # the Responses API section
    assert "Done. refunded 20.00 on A1" in printed  # the approvals section


def command_lines() -> list[str]:
    lines = []
    for body in blocks("bash"):
        for line in body.splitlines():
            # chat and serve run until stopped (serve: tests/test_mcp_serve.py starts it)
            running = line.startswith(("toolreg chat", "toolreg serve"))
            if line.startswith("toolreg ") and not running:
                lines.append(line)
    return lines


@pytest.mark.parametrize("line", command_lines())
def test_shell_examples_run(line: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    args = shlex.split(line)[1:]
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**env, "PYTHONIOENCODING": "utf-8"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
