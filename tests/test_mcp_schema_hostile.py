"""Mounting a server whose `inputSchema`s are hostile: a `$ref` cycle, a schema too big to
compile, a `pattern` that backtracks for ever. Each such tool is refused alone (a warning and
`Mount.refused` name it); the rest of the mount and the registry work; nothing hangs."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, mount

LOOP = {
    "type": "object",
    "properties": {"text": {"$ref": "#/$defs/a"}},
    "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
}
DANGLING = {"type": "object", "properties": {"text": {"$ref": "#/$defs/gone"}}}


class SchemaServer(MCPServer):
    """A real MCP server whose tools all echo `text`, each listed with the `inputSchema`
    given for it (any JSON a server may send, hostile included)."""

    def __init__(self, schemas: Mapping[str, dict[str, Any]]) -> None:
        super().__init__("hostile-schemas", log_level="WARNING")
        self.schemas = dict(schemas)

        def echo(text: str = "") -> str:
            """Echo a text."""
            return text

        for name in ("ok", *self.schemas):
            self.add_tool(echo, name=name)

    async def list_tools(self) -> list[types.Tool]:
        listed = await super().list_tools()
        return [
            tool.model_copy(update={"input_schema": self.schemas.get(tool.name, tool.input_schema)})
            for tool in listed
        ]


def served(schemas: Mapping[str, dict[str, Any]]) -> HttpServer:
    return HttpServer(SchemaServer(schemas).streamable_http_app(stateless_http=True))


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def local(a: int) -> int:
        """A local tool."""
        return a

    return reg


def yes(tool: Any, arguments: dict[str, Any]) -> bool:
    return True


def check_the_rest_works(registry: ToolRegistry) -> None:
    """The local tool and the remote `ok` are offered and run; nothing else is offered."""
    for fmt in ("openai", "anthropic", "gemini", "mcp", "responses"):
        assert len(registry.get_tools(fmt)) == 2
    assert registry.dispatch_tool("local", {"a": 1}).content == "1"
    assert registry.dispatch_tool("ok", {"text": "hi"}, confirm=yes).content == "hi"


@pytest.fixture
def loop_url() -> Iterator[str]:
    with served({"loop": LOOP, "dangling": DANGLING}) as http:
        yield http.url + "/mcp"


def test_a_ref_cycle_or_a_ref_to_nothing_refuses_that_tool_only(
    registry: ToolRegistry, loop_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, loop_url) as handle:
        assert handle.names == ["ok"]
        assert list(handle.refused) == ["'loop'", "'dangling'"]
        cycle = "$ref cycle #/$defs/a -> #/$defs/b -> #/$defs/b/allOf/0 -> #/$defs/a"
        assert cycle in handle.refused["'loop'"]
        nothing = "'#/$defs/gone' at #/properties/text/$ref points to nothing"
        assert nothing in handle.refused["'dangling'"]
        check_the_rest_works(registry)
        assert registry.dispatch_tool("loop", {"text": "x"}).error_kind == "unknown_tool"
    assert "refused the remote tool 'loop'" in caplog.text


def test_a_ref_cycle_is_refused_on_the_async_path_too(
    registry: ToolRegistry, loop_url: str
) -> None:
    import asyncio

    async def run() -> tuple[list[str], str]:
        async with mount(registry, loop_url) as handle:
            result = await registry.adispatch_tool("ok", {"text": "hi"}, confirm=yes)
            return handle.names, result.content

    assert asyncio.run(run()) == (["ok"], "hi")


def nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


TOO_BIG = {
    "wide": {  # 2 values a property: past 5,000 values
        "type": "object",
        "properties": {f"p{i}": {"type": "string"} for i in range(3_000)},
    },
    "deep": nested(20),  # an object and its properties: 2 levels each, past 32
    "long": {"type": "object", "properties": {"text": {"description": "x" * 250_000}}},
}


@pytest.fixture
def too_big_url() -> Iterator[str]:
    with served(TOO_BIG) as http:
        yield http.url + "/mcp"


def test_schemas_past_the_documented_limits_refuse_that_tool_only(
    registry: ToolRegistry, too_big_url: str
) -> None:
    from toolreg.validation.untrusted import (
        MAX_SCHEMA_CHARS,
        MAX_SCHEMA_DEPTH,
        MAX_SCHEMA_VALUES,
    )

    with mount(registry, too_big_url) as handle:
        assert handle.names == ["ok"]
        assert list(handle.refused) == ["'wide'", "'deep'", "'long'"]
        assert f"more than {MAX_SCHEMA_VALUES:,} values" in handle.refused["'wide'"]
        assert f"deeper than {MAX_SCHEMA_DEPTH} levels" in handle.refused["'deep'"]
        assert f"limit for an untrusted schema: {MAX_SCHEMA_CHARS:,}" in handle.refused["'long'"]
        check_the_rest_works(registry)


def test_remote_schemas_are_checked_off_the_callers_event_loop(
    registry: ToolRegistry, too_big_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Under `async with`, the server's schemas are checked and compiled in a worker thread:
    the warning about each refused one comes from there, not from the caller's loop."""
    import asyncio
    import threading

    async def run() -> list[str]:
        async with mount(registry, too_big_url) as handle:
            return handle.names

    with caplog.at_level(logging.WARNING, "toolreg.mcp"):
        assert asyncio.run(run()) == ["ok"]
    refusals = [r for r in caplog.records if r.getMessage().startswith("refused")]
    assert len(refusals) == 3
    assert {r.thread for r in refusals}.isdisjoint({threading.get_ident()})


def test_register_schema_applies_the_same_limits_when_asked(registry: ToolRegistry) -> None:
    from toolreg import ToolDefinitionError

    with pytest.raises(ToolDefinitionError, match="tool 'deep' is refused: the schema nests"):
        registry.register_schema("deep", TOO_BIG["deep"], print, untrusted=True)
    registry.register_schema("deep", TOO_BIG["deep"], print)  # your own schema: yours to judge
