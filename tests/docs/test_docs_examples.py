"""Every example of the documentation runs, alone, and every page shows them from the files.

Each file under docs/examples/ is copied alone into an empty directory and run there as
`__main__` in a process of its own (a `test_*.py` file under pytest), with no endpoint
configured: a model is played by `toolreg.testing.ScriptedServer` on 127.0.0.1. So no
example can lean on another's names, on the checkout's files or on the network. The
processes are forked from a server that has imported the libraries and nothing else
(`multiprocessing`'s forkserver), which saves each example a second of imports. The
pages hold no Python code of their own: they include these files, and every file is
included somewhere.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest
from _mcp_support import HttpChild
from _store_support import RedisServer
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)
# examples that start MCP servers (HTTP or stdio subprocesses): a few seconds each
SLOW = {
    "durable.py",  # DBOS's start-up and migrations
    "test_durable_crashes.py",  # child processes killed and started again
    "mcp_auth.py",
    "mcp_mount_stdio.py",
    "mcp_oauth.py",
    "mcp_open_network.py",
    "mcp_pin.py",
    "mcp_serve_mount.py",
    "mcp_serve_toolset.py",
    "mcp_shared_limits.py",
    "mcp_shared_tasks.py",
    "mcp_tasks.py",
    "versions_serve.py",
}
INCLUDE = re.compile(r"^```\{literalinclude\}\s+(\S+)", re.MULTILINE)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "TOOLREG_MODEL")}
    return {**env, "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1"}


def _examples() -> list[object]:
    return [
        pytest.param(path, id=path.name, marks=[pytest.mark.slow] if path.name in SLOW else [])
        for path in sorted(EXAMPLES.glob("*.py"))
    ]


def _fences(page: Path) -> list[tuple[str, str]]:
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    return [(t.info.strip(), t.content) for t in tokens if t.type == "fence"]


def _run_example(folder: str, name: str) -> None:
    """In the forked process: run `name` in `folder` as `python name` would, output to a file."""
    os.chdir(folder)
    for key in ("OPENAI_BASE_URL", "TOOLREG_MODEL"):
        os.environ.pop(key, None)
    sys.path[0:0] = [folder]
    sys.argv = [name]
    with (
        open("output.txt", "w", encoding="utf-8") as out,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(out),
    ):
        runpy.run_path(name, run_name="__main__")


@pytest.fixture(scope="module")
def forkserver() -> multiprocessing.context.BaseContext:
    if "forkserver" not in multiprocessing.get_all_start_methods():  # Windows
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["openai", "toolreg", "toolreg.conversation", "toolreg.testing"])
    return context


@pytest.mark.slow
@pytest.mark.parametrize("example", _examples())
def test_each_example_runs_alone(
    example: Path, tmp_path: Path, forkserver: multiprocessing.context.BaseContext
) -> None:
    shutil.copy(example, tmp_path / example.name)
    if example.name.startswith("test_"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", example.name]
        done = subprocess.run(
            command,
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{example.name} failed:\n{done.stdout}\n{done.stderr}"
        return
    process = forkserver.Process(target=_run_example, args=(str(tmp_path), example.name))
    process.start()
    process.join(timeout=120)
    if process.exitcode is None:
        process.kill()
    output = (tmp_path / "output.txt").read_text(encoding="utf-8", errors="replace")
    assert process.exitcode == 0, f"{example.name} failed (exit {process.exitcode}):\n{output}"


def test_pages_include_examples_and_hold_no_python_of_their_own() -> None:
    included: set[Path] = set()
    for page in PAGES:
        for info, content in _fences(page):
            assert info != "python", f"{page.relative_to(ROOT)}: a python block; make it a file"
            match = INCLUDE.match(f"```{info}")
            if match:
                target = (page.parent / match.group(1)).resolve()
                assert target.is_file(), f"{page.relative_to(ROOT)} includes {match.group(1)}"
                included.add(target)
    examples = {p.resolve() for p in EXAMPLES.glob("*.py")}
    assert included <= examples, "pages include only files under docs/examples/"
    orphans = sorted(p.name for p in examples - included)
    assert not orphans, f"examples no page shows: {orphans}"


# what a reader has once toolreg is installed: the shell, Python, pip and the toolreg command
INSTALLED = {"export", "pip", "python", "toolreg"}


def test_a_page_says_how_to_install_each_command_it_runs() -> None:
    # tutorial 5 once ran `pytest` without a word on installing it (toolreg does not bring it)
    for page in PAGES:
        installed = set(INSTALLED)
        for info, content in _fences(page):
            if info != "bash":
                continue
            for line in content.splitlines():
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                if words[:2] == ["pip", "install"]:
                    installed.update(re.split(r"[\[<>=!~]", w)[0] for w in words[2:])
                name = page.relative_to(ROOT)
                assert words[0] in installed, f"{name} runs `{words[0]}`: say how to install it"


def _command_lines() -> list[object]:
    lines = []
    for page in PAGES:
        for info, content in _fences(page):
            if info != "bash":
                continue
            for line in content.splitlines():
                # chat and serve run until stopped (tests/mcp/test_mcp_serve.py starts serve)
                running = line.startswith(("toolreg chat", "toolreg serve"))
                if line.startswith("toolreg ") and not running:
                    lines.append(line)
    return [
        pytest.param(line, marks=[pytest.mark.slow] if "mcp:" in line else [])
        for line in sorted(set(lines))
    ]


@pytest.mark.slow
@pytest.mark.parametrize("line", _command_lines())
def test_each_command_of_the_pages_runs(line: str, tmp_path: Path) -> None:
    args = shlex.split(line)[1:]
    if "--lock" in args:  # `toolreg mcp pin` writes its pin file: not into the checkout
        named = ROOT / args[args.index("--lock") + 1]
        args[args.index("--lock") + 1] = str(tmp_path / "tools.lock")
        if named.is_file():  # a lock the checkout commits (`toolreg lint --lock`): read a copy
            shutil.copy(named, tmp_path / "tools.lock")
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", *args],
        cwd=ROOT,  # the pages' commands name the samples/ of the checkout
        env=_env(),
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, f"{line}\n{done.stderr}"


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


def _dependencies_of(requirements: list[str]) -> set[str]:
    """The distributions that these requirements install in turn: each one's own
    requirements, and those of the extras it asks for (`pyjwt[crypto]`: cryptography)."""
    import importlib.metadata as metadata

    found: set[str] = set()
    for requirement in requirements:
        match = re.match(r"\s*([\w.-]+)\s*(?:\[([\w,\s-]+)\])?", requirement)
        if match is None:
            continue
        wanted = {e.strip() for e in (match.group(2) or "").split(",") if e.strip()}
        try:
            requires = metadata.requires(match.group(1)) or []
        except metadata.PackageNotFoundError:
            continue
        for r in requires:
            extra = re.search(r"extra\s*==\s*['\"]([\w-]+)['\"]", r)
            if extra is None or extra.group(1) in wanted:
                found |= _requirement_names([r])
    return found


EXTRA = re.compile(r"pip install '?toolreg\[([\w,-]+)\]'?")


@pytest.mark.slow
def test_a_pages_documented_install_gives_what_its_examples_import() -> None:
    # `pip install 'toolreg[otel]'` on the tracing guide must be enough for its example to
    # run: every module an included example imports comes from toolreg, the standard
    # library, a runtime dependency or an extra the page (or its section's index) names.
    import ast
    import importlib.metadata as metadata

    requires = metadata.requires("toolreg") or []
    checked = 0
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        index = page.parent / "index.md"
        if index != page and index.is_file():
            text += index.read_text(encoding="utf-8")
        extras = [e for found in EXTRA.findall(text) for e in found.split(",")]
        if not extras:
            continue
        chosen = [r for r in requires if "extra ==" not in r]
        for extra in extras:
            marker = re.compile(rf"extra\s*==\s*['\"]{extra}['\"]")
            chosen += [r for r in requires if marker.search(r)]
        # what they install, and what those install in turn (`mcp`: httpx2)
        allowed = _requirement_names(chosen) | _dependencies_of(chosen)
        for info, _ in _fences(page):
            match = INCLUDE.match(f"```{info}")
            if not match:
                continue
            code = (page.parent / match.group(1)).read_text(encoding="utf-8")
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
                        f"{page.relative_to(ROOT)}: `{module}` is not installed by "
                        f"pip install 'toolreg[{','.join(extras)}]' (it comes from {dists})"
                    )
                    checked += 1
    assert checked


def _http_serve_lines() -> list[object]:
    lines = {
        line
        for page in PAGES
        for info, content in _fences(page)
        if info == "bash"
        for line in content.splitlines()
        if line.startswith("toolreg serve") and "--transport http" in line
    }
    return [pytest.param(line, marks=[pytest.mark.slow]) for line in sorted(lines)]


@pytest.mark.slow
@pytest.mark.parametrize("line", _http_serve_lines())
def test_each_http_serve_command_of_the_pages_serves(line: str, tmp_path: Path) -> None:
    """`toolreg serve ... --transport http` runs until stopped: started as the page writes
    it, but on a free port (`--port 0`) and with its `redis://` URL pointing at a
    redis-server of its own; it must answer `tools/list` for the Host it accepts."""
    args = shlex.split(line)[1:]
    if "--port" in args:
        args[args.index("--port") + 1] = "0"
    else:
        args += ["--port", "0"]
    redis = None
    if any(a.startswith("redis://") for a in args):
        redis = RedisServer(tmp_path)
        args = [redis.url if a.startswith("redis://") else a for a in args]
    hosts = [args[i + 1] for i, a in enumerate(args) if a == "--allowed-host"]
    host = hosts[0].removesuffix(":*") if hosts else "127.0.0.1"
    headers = {
        "host": host,
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2025-11-25",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    try:
        with HttpChild(sys.executable, "-m", "toolreg", *args) as child:
            answer = httpx2.post(child.url, json=body, headers=headers, timeout=30)
        assert answer.status_code == 200, f"{line}\n{answer.text}"
        assert answer.json()["result"]["tools"], line
    finally:
        if redis is not None:
            redis.stop()
