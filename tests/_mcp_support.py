"""What the MCP tests share: how to start `toolreg serve`, and calls of every outcome."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp import StdioServerParameters

from toolreg import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
TOOLS = "tests/_mcp_tools.py:registry"
PROCESS_TOOLS = "tests/_mcp_tools.py:process"

# (tool, arguments): every kind of outcome a model can meet, sent as a model would send them
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "北京"}),
    ("get_weather", {"city": "Paris", "unit": "f"}),
    ("get_weather", {"city": "Paris", "unit": "k"}),  # not one of the enum
    ("get_weather", {"unit": None, "city": "Oslo"}),  # null: use the default
    ("add", {"a": 2, "b": 3}),
    ("add", {"a": "2", "b": "3"}),  # coerced
    ("add", {"a": "two"}),  # two problems
    ("add", {"a": 1, "b": 2, "c": 3}),  # an unknown key
    ("create_task", {"title": "Buy milk", "priority": "high", "tags": ["home"]}),
    ("create_task", {"title": ""}),  # too short
    ("create_task", {"title": "x", "priority": "urgent"}),
    ("delete_file", {"path": "/tmp/x"}),  # needs a confirmation nobody gives
    ("fail", {"message": "No such order."}),  # a ToolError: its text as written
    ("fail", {"message": "boom", "chosen": False}),  # a crash
    ("slow", {"seconds": 0.5}),  # past its 0.2 s limit
    ("slow", {"seconds": 0}),
    ("count_down", {"steps": 2}),
    ("whoami", {}),
    ("whoami", {"ctx": {"user": "mallory"}}),  # the model cannot set the context
]


def child_env() -> dict[str, str]:
    """This checkout first on the path of a child process (it imports toolreg from here),
    then tests/ (a test module served as a target imports the helper modules there)."""
    ours = f"{ROOT}{os.pathsep}{ROOT / 'tests'}"
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": ours if not path else f"{ours}{os.pathsep}{path}"}


def serve_command(target: str = TOOLS, *options: str) -> list[str]:
    return [sys.executable, "-m", "toolreg", "serve", target, *options]


def stdio_server(target: str = TOOLS) -> StdioServerParameters:
    command = serve_command(target)
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env(), cwd=ROOT)


def local_outcomes(registry: ToolRegistry) -> list[tuple[bool, str]]:
    return [
        (result.ok, result.content)
        for result in (registry.dispatch_tool(name, dict(args)) for name, args in CALLS)
    ]


def text_of(result: types.CallToolResult) -> str:
    assert [block.type for block in result.content] == ["text"]
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def dumped(tool: types.Tool) -> dict[str, Any]:
    return tool.model_dump(by_alias=True, mode="json", exclude_none=True)


class HttpChild:
    """`toolreg serve ... --transport http --port 0` in a child process; `url` once it listens."""

    def __init__(self, *command: str) -> None:
        env = {**os.environ, **child_env()}
        self.process = subprocess.Popen(
            list(command), cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
        )
        self.url = ""
        self.log: list[str] = []  # what the server wrote on stderr
        deadline = time.monotonic() + 60
        assert self.process.stderr is not None
        while time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            self.log.append(line)
            found = re.search(r"serving MCP at (\S+)", line)
            if found:
                self.url = found.group(1)
                stream = self.process.stderr
                threading.Thread(target=self.log.extend, args=(stream,), daemon=True).start()
                return
        self.close()
        raise AssertionError("the server did not start:\n" + "".join(self.log))

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()

    def __enter__(self) -> HttpChild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
