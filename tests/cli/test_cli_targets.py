"""Which registry a CLI target names: registries a file defines or imports, the shared ones it
fills without naming them (toolreg's `register_tool`, ChatGLM3's), and `file.py:attribute`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _mcp_support import child_env, serve_command
from mcp import Client, StdioServerParameters

from toolreg.cli.main import main
from toolreg.testing import ScriptedServer, call, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]

GLM = '''
from typing import Annotated
from toolreg.compat.chatglm3 import register_tool

@register_tool
def glm_weather(city_name: Annotated[str, "The name of the city", True]) -> str:
    """Get the weather of a city. Use it when the user asks about the weather."""
    return f"sunny in {city_name}"
'''

# `from toolreg.compat import chatglm3` and `@chatglm3.register_tool`: the module, not the name
GLM_MODULE = '''
from typing import Annotated
from toolreg.compat import chatglm3

@chatglm3.register_tool
def glm_time(city_name: Annotated[str, "The name of the city", True]) -> str:
    """Get the local time of a city. Use it when the user asks what time it is somewhere."""
    return f"noon in {city_name}"
'''

NAMED = '''
from toolreg import ToolRegistry

registry = ToolRegistry()
LIMIT = 3

@registry.register_tool
def ping() -> str:
    """Answer pong. Use it to check that the tools work."""
    return "pong"
'''


def write(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code, encoding="utf-8")
    return str(path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`toolreg ARGS` in this process: exit status, stdout, stderr."""
    try:
        status = main(list(args))
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def test_list_finds_tools_registered_with_the_chatglm3_register_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "glm_list.py", GLM)
    status, out, err = run(capsys, "list", target)
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "glm_weather(city_name: string)",
        "    Get the weather of a city.",
    ]


def test_schema_call_and_lint_see_the_chatglm3_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "glm_more.py", GLM)
    status, out, _ = run(capsys, "schema", target)
    assert status == 0
    assert [t["function"]["name"] for t in json.loads(out)] == ["glm_weather"]
    assert run(capsys, "call", target, "glm_weather", '{"city_name": "Oslo"}')[:2] == (
        0,
        "sunny in Oslo\n",
    )
    status, out, _ = run(capsys, "lint", target)
    assert status == 0
    assert out.splitlines()[-1].startswith("1 tools, 0 errors")


def test_the_chatglm3_module_used_by_its_module_name_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "glm_module.py", GLM_MODULE)
    status, out, err = run(capsys, "call", target, "glm_time", '{"city_name": "Lima"}')
    assert (status, out, err) == (0, "noon in Lima\n", "")


@pytest.mark.slow
def test_chat_offers_the_chatglm3_tools(tmp_path: Path) -> None:
    target = write(tmp_path, "glm_chat.py", GLM)
    turns = [tool_calls(call("glm_weather", {"city_name": "Rome"})), text("Sunny in Rome.")]
    with ScriptedServer(turns) as server:
        done = subprocess.run(
            [sys.executable, "-m", "toolreg", "chat", target, "--model", "m"],
            input="weather in Rome?\n",
            capture_output=True,
            text=True,
            encoding="utf-8",
            env={**os.environ, **child_env(), "OPENAI_BASE_URL": server.base_url},
            cwd=ROOT,
            timeout=60,
            check=False,
        )
        offered = [t["function"]["name"] for t in server.requests[0]["tools"]]
    assert done.returncode == 0, done.stderr
    assert offered == ["glm_weather"]
    assert "  <- [ok] sunny in Rome" in done.stdout


@pytest.mark.slow
def test_serve_serves_the_chatglm3_tools_to_the_sdk_client(tmp_path: Path) -> None:
    target = write(tmp_path, "glm_serve.py", GLM)
    command = serve_command(target)
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=child_env(), cwd=str(ROOT)
    )

    async def served() -> tuple[list[str], str]:
        async with Client(params) as client:
            listed = await client.list_tools()
            result = await client.call_tool("glm_weather", {"city_name": "Oslo"})
            block = result.content[0]
            return [t.name for t in listed.tools], getattr(block, "text", "")

    assert asyncio.run(served()) == (["glm_weather"], "sunny in Oslo")


def test_a_file_with_its_own_registry_and_chatglm3_tools_must_name_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "glm_both.py", NAMED + GLM)
    status, out, err = run(capsys, "list", target)
    assert (status, out) == (2, "")
    assert err == (
        f"toolreg: {target} has several registries ({target}:registry; the functions "
        "registered with toolreg.compat.chatglm3.register_tool); name the one to use as "
        f"{target}:ATTRIBUTE, an attribute of the module that holds it\n"
    )
    assert run(capsys, "list", f"{target}:registry")[:2] == (
        0,
        "ping()\n    Answer pong.\n",
    )


def test_an_empty_registry_of_the_file_does_not_hide_the_chatglm3_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = "from toolreg import ToolRegistry\nunused = ToolRegistry()\n" + GLM
    target = write(tmp_path, "glm_unused.py", code)
    status, out, _ = run(capsys, "list", target)
    assert status == 0
    assert out.startswith("glm_weather(")


def test_a_missing_attribute_says_it_is_missing_and_lists_the_registries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "named.py", NAMED)
    status, out, err = run(capsys, "list", f"{target}:registy")
    assert (status, out) == (2, "")
    assert (
        err == f"toolreg: {target} has no attribute 'registy' (its registries: {target}:registry)\n"
    )


@pytest.mark.parametrize(
    ("attribute", "kind"),
    [("ping", "a function"), ("LIMIT", "an int"), ("ToolRegistry", "a class")],
)
def test_an_attribute_that_is_not_a_registry_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], attribute: str, kind: str
) -> None:
    target = write(tmp_path, "named_kinds.py", NAMED)
    status, _, err = run(capsys, "list", f"{target}:{attribute}")
    assert status == 2
    assert err == (
        f"toolreg: {target}:{attribute} is {kind}, not a ToolRegistry "
        f"(its registries: {target}:registry)\n"
    )


def test_a_missing_attribute_of_a_file_without_registries_says_what_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "glm_attr.py", GLM)
    status, _, err = run(capsys, "list", f"{target}:registry")
    assert status == 2
    assert err == (
        f"toolreg: {target} has no attribute 'registry' (it names no registry; pass {target} "
        "alone for the tools it registers)\n"
    )


def test_a_missing_attribute_as_the_user_sees_it(tmp_path: Path) -> None:
    """The real command: exit status 2 and one line on stderr, nothing on stdout."""
    target = write(tmp_path, "named_sub.py", NAMED)
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", "schema", f"{target}:tools"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, **child_env()},
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"toolreg: {target} has no attribute 'tools' (its registries: {target}:registry)"
    ]


# a registry built on first use (PEP 562): `app.py:registry` names it, as Python would
LAZY = '''
from toolreg import ToolRegistry

def _build():
    registry = ToolRegistry()

    @registry.register_tool
    def ping() -> str:
        """Answer pong. Use it to check that the tools work."""
        return "pong"

    return registry

def __getattr__(name):
    if name == "registry":
        globals()["registry"] = built = _build()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''


def test_a_registry_a_module_getattr_builds_on_first_use_is_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "lazy.py", LAZY)
    status, out, err = run(capsys, "list", f"{target}:registry")
    assert (status, err) == (0, "")
    assert out.startswith("ping(")


def test_a_missing_attribute_of_a_module_with_getattr_is_still_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = write(tmp_path, "lazy_missing.py", LAZY)
    status, out, err = run(capsys, "list", f"{target}:registy")
    assert (status, out) == (2, "")
    assert err == (
        f"toolreg: {target} has no attribute 'registy' (it names no registry; pass {target} "
        "alone for the tools it registers)\n"
    )


def test_the_chatglm3_sample_still_loads() -> None:
    """It imports `registry` by name too: one registry, not two. (A child process: the
    sample's module stays loaded, so this process's ChatGLM3 registry is left alone.)"""
    done = subprocess.run(
        [sys.executable, "-m", "toolreg", "list", "samples/chatglm3_tools.py"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, **child_env()},
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    names = [line.split("(")[0] for line in done.stdout.splitlines() if line[:1] != " "]
    assert names == ["random_number_generator", "get_weather"]
