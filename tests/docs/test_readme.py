"""The README is a landing page: every code example in it runs alone, its `toolreg` shell
lines run, its two commands are the ones CI runs, and every link into the site resolves.

What the README used to hold lives on the documentation site now (docs/); the site's
examples run in tests/docs/test_docs_examples.py and the site itself builds in
tests/docs/test_docs_site.py."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import types

import pytest
from _readme_blocks import README, ROOT, TOKENS, blocks

import toolreg


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
    assert len(rendered) >= 5


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


DOCS_COMMAND = "pip install -e '.[docs]' && python -m sphinx_autobuild docs docs/_build/html"


def test_ci_runs_the_readmes_docs_command_in_a_venv_with_only_the_docs_extra() -> None:
    # the suite builds the site from the dev extra; this is what a user who wants the site
    # does: the docs extra alone, then the server, whose pages .ci/site-served fetches
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    lines = [line.strip() for line in ci.splitlines()]
    install, serve = DOCS_COMMAND.split(" && ")
    assert 'python3 -m venv "$work/docs"' in lines
    assert install in lines
    started = [line for line in lines if line.startswith(f"{serve} --port 0 ")]
    assert len(started) == 1, "CI serves the site with the README's command, on a free port"
    assert 'python .ci/site-served "$work/autobuild.log" "$server" || status=$?' in lines
    assert (ROOT / ".ci" / "site-served").is_file()


def test_the_readme_stays_a_landing_page() -> None:
    assert len(README.splitlines()) <= 160, "the README is a first visit's page: move it to docs/"
    assert len(blocks("python")) == 1, "one short example end to end; the rest is on the site"


@pytest.mark.usefixtures("clean_default_registry")
@pytest.mark.parametrize("number", range(len(blocks("python"))))
def test_each_python_example_runs_alone(
    number: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a fresh module for each block (a real module: hints resolve in it); no endpoint set
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TOOLREG_MODEL", raising=False)
    module = types.ModuleType(f"readme_example_{number}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    code = blocks("python")[number]
    try:
        exec(compile(code, f"README.md python block {number + 1}", "exec"), module.__dict__)
    except Exception as exc:  # pragma: no cover - the message says which block
        raise AssertionError(f"README python block {number + 1} failed: {exc!r}") from exc
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == '{"city": "北京", "temperature": 18, "unit": "c"}'
    assert printed[1:4] == [
        "Invalid arguments for tool 'get_weather':",
        "- city: expected string, got integer",
        "- unit: 'k' is not one of 'c', 'f'",
    ]
    assert printed[4] == "It is 18 °C in Beijing. answer 2"
    # what the comments in the block say is what it prints
    for line in code.splitlines():
        said = re.search(r"print\(.*\)\s+# (.+)$", line)
        if said and "..." not in said.group(1):
            assert said.group(1) in printed, line


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_every_link_of_the_readme_resolves() -> None:
    targets = LINK.findall(README)
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links into the site"
    for target in local:
        path, _, anchor = target.partition("#")
        assert not anchor or path, f"{target}: the README has no sections to link to in-page"
        assert (ROOT / path).exists(), f"the README links to {target}, which does not exist"
    # every part of the site is one click away
    for part in ("tutorial/index.md", "guides/index.md", "reference/index.md", "contributing.md"):
        assert any(t.startswith(f"docs/{part.split('/')[0]}") for t in local), part
    for page in sorted((ROOT / "docs" / "explanation").glob("*.md")):
        if page.name != "index.md":
            assert f"docs/explanation/{page.name}" in local, page.name


def test_the_readme_says_how_to_build_the_site() -> None:
    # the command docs/contributing.md documents, and tests/docs/test_docs_site.py checks
    assert DOCS_COMMAND in "\n".join(blocks("bash")).splitlines()


def command_lines() -> list[str]:
    lines = []
    for body in blocks("bash"):
        for line in body.splitlines():
            # chat and serve run until stopped (serve: tests/mcp/test_mcp_serve.py starts it)
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
