"""A mounted server that lies in its results: structured content against its own output
schema, failure texts full of secrets. Each bad answer fails its own call; the mount lives."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from test_mcp_untrusted import yes

from toolreg import ToolRegistry
from toolreg.mcp import HttpServer, mount

COUNTED = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
ARGS = {"type": "object", "properties": {"lie": {"type": "boolean"}}}
TOKEN = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a"
LEAK = (
    "Traceback (most recent call last):\n"
    '  File "/srv/billing/app/handlers.py", line 88, in refund\n'
    f"ConnectionError: postgres://admin:hunter2@db.internal/billing refused (key {TOKEN})"
)


def text_of(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}


def liar() -> Server[Any]:
    """`count` answers {"n": 3}, or {"n": "lots"} when asked to lie; `bare` never sends the
    structured content its schema requires; `broken` has an output schema that is no schema."""
    listed = [
        types.Tool(name="count", input_schema=ARGS, output_schema=COUNTED),
        types.Tool(name="bare", input_schema=ARGS, output_schema=COUNTED),
        types.Tool(name="broken", input_schema=ARGS, output_schema={"type": 5}),
        types.Tool(name="crash", input_schema=ARGS),
        types.Tool(name="reject", input_schema=ARGS),
        types.Tool(name="ramble", input_schema=ARGS),
        types.Tool(name="flood", input_schema=ARGS),
        types.Tool(name="stall", input_schema=ARGS, output_schema=text_of("^(a+)+$")),
        types.Tool(name="tidy", input_schema=ARGS, output_schema=text_of("^[a-z]+$")),
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name == "crash":  # a server that sends its traceback as the error text
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=LEAK)], is_error=True
            )
        if params.name == "reject":  # a JSON-RPC error whose message leaks the same
            raise MCPError(code=types.INTERNAL_ERROR, message=LEAK.replace("\n", " "))
        if params.name == "flood":  # a result far longer than any model should read
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="z" * 300_000)]
            )
        if params.name == "ramble":
            text = [types.TextContent(type="text", text="no " * 5000)]
            return types.CallToolResult(content=text, is_error=True)
        if params.name in ("stall", "tidy"):  # a text its own pattern takes ages to refuse
            said = {"s": "a" * 60 + "!"}
            return types.CallToolResult(content=[], structured_content=said)
        lie = bool((params.arguments or {}).get("lie"))
        structured = {"n": "lots" if lie else 3}
        block = [types.TextContent(type="text", text=str(structured))]
        if params.name == "bare":
            return types.CallToolResult(content=block)
        return types.CallToolResult(content=block, structured_content=structured)

    return Server("liar", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture
def liar_url() -> Iterator[str]:
    with HttpServer(liar().streamable_http_app(stateless_http=True)) as http:
        yield http.url + "/mcp"


def test_a_result_against_its_output_schema_fails_that_call_alone(
    liar_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    registry = ToolRegistry()
    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, liar_url) as handle:
        assert registry.dispatch_tool("count", {}, confirm=yes).value.structured == {"n": 3}
        lied = registry.dispatch_tool("count", {"lie": True}, confirm=yes)
        assert (lied.ok, lied.error_kind) == (False, "execution_error")
        assert lied.content == (
            "Tool 'count' failed: its result does not match the tool's output schema "
            "at $.n (type: 'integer')."
        )
        assert "lots" not in lied.content  # the server's value is not repeated
        assert "answered 'count': its result does not match" in caplog.text
        assert handle.connected
        assert registry.dispatch_tool("count", {}, confirm=yes).value.structured == {"n": 3}


def test_missing_structured_content_and_a_broken_output_schema_fail_alone(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url) as handle:
        bare = registry.dispatch_tool("bare", {}, confirm=yes)
        assert bare.content == (
            "Tool 'bare' failed: its result has no structuredContent, which the tool's "
            "output schema requires."
        )
        broken = registry.dispatch_tool("broken", {}, confirm=yes)
        assert broken.content == (
            "Tool 'broken' failed: its output schema is not a valid JSON Schema, so no result "
            "of it can be checked."
        )
        assert handle.connected
        assert registry.dispatch_tool("count", {}, confirm=yes).ok


@pytest.mark.parametrize("errors", ["redact", "mask", "full"])
def test_remote_failure_texts_follow_the_registrys_error_policy(liar_url: str, errors: Any) -> None:
    registry = ToolRegistry(errors=errors)
    with mount(registry, liar_url):
        crash = registry.dispatch_tool("crash", {}, confirm=yes)
        reject = registry.dispatch_tool("reject", {}, confirm=yes)
    assert (crash.error_kind, reject.error_kind) == ("execution_error", "execution_error")
    if errors == "mask":
        assert crash.content == "Tool 'crash' failed."
        assert reject.content == "Tool 'reject' failed."
    elif errors == "full":
        assert crash.content == LEAK
        assert reject.content.startswith("Tool 'reject' failed: Traceback (most recent")
        assert TOKEN in reject.content
        assert "hunter2" in reject.content
    else:
        assert crash.content == (
            "Traceback (most recent call last):\n"
            '  File "[redacted]", line 88, in refund\n'
            "ConnectionError: postgres://[redacted]@db.internal/billing refused (key [redacted])"
        )
        assert reject.content.startswith("Tool 'reject' failed: Traceback")
        for secret in (TOKEN, "hunter2", "/srv/billing"):
            assert secret not in crash.content
            assert secret not in reject.content


def test_remote_failure_texts_are_redacted_of_the_calls_context(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url):
        crash = registry.dispatch_tool("crash", {}, confirm=yes, context={"db": "db.internal"})
    assert "db.internal" not in crash.content
    assert "postgres://[redacted]@[redacted]/billing" in crash.content


def test_a_long_remote_failure_text_is_cut(liar_url: str) -> None:
    registry = ToolRegistry(errors="full")
    with mount(registry, liar_url):
        ramble = registry.dispatch_tool("ramble", {}, confirm=yes)
    assert ramble.content == "no " * 666 + "no [cut: 13000 characters]"


def test_a_long_remote_result_is_cut(liar_url: str) -> None:
    registry = ToolRegistry()
    with mount(registry, liar_url):
        flood = registry.dispatch_tool("flood", {}, confirm=yes)
    assert flood.ok
    assert flood.content == "z" * 100_000 + "\n[truncated: 200000 of 300000 characters cut]"
    with mount(ToolRegistry(max_result_chars=50), liar_url) as shorter:  # a lower cut wins
        assert len(shorter.dispatcher.dispatch_tool("flood", {}, confirm=yes).content) < 200


def test_an_output_schema_the_sdk_would_backtrack_on_refuses_its_tool(liar_url: str) -> None:
    """The MCP SDK checks structured results against the tool's `outputSchema` with
    jsonschema, on `re`, in the mount's event loop: `^(a+)+$` against 61 characters would
    block it for longer than a lifetime. Such a tool is refused at mount (with RE2
    installed too: the SDK does not use it); one with a safe pattern is mounted, and its
    result checked as usual."""
    registry = ToolRegistry()
    with mount(registry, liar_url) as handle:
        assert "'stall'" in handle.refused
        reason = handle.refused["'stall'"]
        assert reason.startswith("its output schema cannot be checked safely: the pattern ")
        assert "could backtrack for a long time" in reason
        assert "tidy" in handle.names
        tidy = registry.dispatch_tool("tidy", {}, confirm=yes)
    assert not tidy.ok
    assert "does not match the tool's output schema" in tidy.content
