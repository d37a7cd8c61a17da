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
from markdown_it import MarkdownIt

import toolreg
from toolreg.testing import ScriptedServer, text, tool_call

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOKENS = MarkdownIt("commonmark").parse(README)


def blocks(language: str) -> list[str]:
    """The README's code blocks in `language`, as a CommonMark renderer sees them."""
    return [t.content for t in TOKENS if t.type == "fence" and t.info.strip() == language]


def test_every_code_fence_closes_and_every_heading_renders() -> None:
    lines = README.splitlines()
    for token in TOKENS:
        if token.type != "fence":
            continue
        assert token.map is not None
        start, end = token.map
        closer = lines[end - 1].strip() if end - 1 > start else ""
        assert closer.startswith("```"), f"the code fence at README line {start + 1} never closes"
        swallowed = [line for line in token.content.splitlines() if line.startswith("## ")]
        assert not swallowed, f"headings inside the fence at line {start + 1}: {swallowed}"
    rendered = [TOKENS[i + 1].content for i, t in enumerate(TOKENS) if t.type == "heading_open"]
    fenced = {i for t in TOKENS if t.type == "fence" and t.map for i in range(*t.map)}
    written = [
        line.lstrip("#").strip()
        for number, line in enumerate(lines)
        if re.match(r"#{1,6} ", line) and number not in fenced
    ]
    assert rendered == written
    assert len(rendered) >= 20


@pytest.fixture
def clean_default_registry() -> object:
    before = set(toolreg.default_registry.names())
    yield
    for name in set(toolreg.default_registry.names()) - before:
        toolreg.default_registry.unregister(name)


TEST_COMMAND = "pip install -e '.[dev]' && pytest"


def test_readme_has_the_two_quickstart_commands() -> None:
    shell = "\n".join(blocks("bash"))
    assert "pip install . && toolreg demo" in shell
    assert TEST_COMMAND in shell.splitlines()


def test_ci_runs_exactly_the_readmes_test_command_in_a_fresh_venv() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines()]
    # the same string, on a line of its own (`|| exit $?`: a failing install stops the run,
    # which `set -e` alone does not do for the left side of `&&`)
    assert TEST_COMMAND + " || exit $?" in lines, "CI must run the README's test command"
    assert 'python3 -m venv "$work/dev"' in lines  # in a venv made for this run
    assert "--system-site-packages" not in ci  # nothing of the machine's interpreter
    assert 'python3 -m venv "$work/user"' in lines  # the main job in a venv of its own
    assert "toolreg demo" in lines


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
    assert "Refunded." in printed  # the state stores section
    assert any("'chat-42' has no call waiting for approval" in line for line in printed)


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
    try:
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
    finally:
        if "--lock" in args:  # `toolreg mcp pin` wrote its pin file: not into the checkout
            (ROOT / args[args.index("--lock") + 1]).unlink(missing_ok=True)
    assert done.returncode == 0, done.stderr


def _sections() -> list[tuple[str, str, list[str]]]:
    """Each `##` section: its title, its text and its python blocks."""
    lines = README.splitlines()
    heads = [
        (t.map[0], TOKENS[i + 1].content)
        for i, t in enumerate(TOKENS)
        if t.type == "heading_open" and t.tag == "h2" and t.map
    ]
    sections = []
    for (start, title), (end, _) in zip(heads, [*heads[1:], (len(lines), "")]):
        codes = [
            t.content
            for t in TOKENS
            if t.type == "fence"
            and t.info.strip() == "python"
            and t.map
            and start <= t.map[0] < end
        ]
        sections.append((title, "\n".join(lines[start:end]), codes))
    return sections


def _requirement_names(requirements: list[str]) -> set[str]:
    return {
        re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements
    }


def _distributions_of(module: str) -> set[str]:
    """The installed distributions that ship `module` (a namespace package such as
    `opentelemetry` is shared by several: the one with the module's own folder or file)."""
    import importlib.metadata as metadata

    parts = module.split(".")
    found = set()
    for dist in metadata.packages_distributions().get(parts[0], []):
        files = {str(f) for f in metadata.files(dist) or []}
        folder = "/".join(parts)
        if any(f.startswith(folder + "/") or f == folder + ".py" for f in files):
            found.add(dist.lower().replace("_", "-"))
    return found


def test_a_sections_documented_install_gives_what_its_examples_import() -> None:
    # `pip install 'toolreg[otel]'` must be enough for the Tracing example to run: every module
    # it imports comes from toolreg, a runtime dependency or that extra.
    import ast
    import importlib.metadata as metadata

    # toolreg's own metadata, as pip sees it: `extra == "otel"` marks the otel extra's entries
    requires = metadata.requires("toolreg") or []
    runtime = _requirement_names([r for r in requires if "extra ==" not in r])
    checked = 0
    for title, section, codes in _sections():
        extras = re.findall(r"pip install '?toolreg\[(\w+)\]'?", section)
        if not extras:
            continue
        allowed = set(runtime)
        for extra in extras:
            marker = re.compile(rf"extra\s*==\s*['\"]{extra}['\"]")
            allowed |= _requirement_names([r for r in requires if marker.search(r)])
        for code in codes:
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top == "toolreg" or top in sys.stdlib_module_names:
                        continue
                    dists = _distributions_of(module)
                    assert dists & allowed, (
                        f"README section {title!r}: `{module}` is not installed by "
                        f"pip install 'toolreg[{','.join(extras)}]' (it comes from {dists})"
                    )
                    checked += 1
    assert checked
