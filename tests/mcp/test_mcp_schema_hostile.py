"""Mounting a server whose `inputSchema`s are hostile: a `$ref` cycle, a schema too big to
compile, a `pattern` that backtracks for ever. Each such tool is refused alone (a warning and
`Mount.refused` name it); the rest of the mount and the registry work; nothing hangs."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import mcp_types as types
import pytest
from mcp.server.mcpserver import Context, MCPServer

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
    given for it (any JSON a server may send, hostile included); with `later`, a `learn`
    tool adds those tools mid-session (`notifications/tools/list_changed`)."""

    def __init__(
        self,
        schemas: Mapping[str, dict[str, Any]],
        later: Mapping[str, dict[str, Any]] | None = None,
    ) -> None:
        super().__init__("hostile-schemas", log_level="WARNING")
        self.schemas = dict(schemas)
        later = dict(later or {})

        def echo(text: str = "") -> str:
            """Echo a text."""
            return text

        for name in ("ok", *self.schemas):
            self.add_tool(echo, name=name)

        async def learn(ctx: Context) -> str:
            """Add the tools of `later`, and tell the clients."""
            for name, schema in later.items():
                self.schemas[name] = schema
                self.add_tool(echo, name=name)
            await ctx.notify_tools_changed()
            return "learned"

        if later:
            self.add_tool(learn, name="learn")

    async def list_tools(self) -> list[types.Tool]:
        listed = await super().list_tools()
        return [
            tool.model_copy(update={"input_schema": self.schemas.get(tool.name, tool.input_schema)})
            for tool in listed
        ]


def served(
    schemas: Mapping[str, dict[str, Any]], later: Mapping[str, dict[str, Any]] | None = None
) -> HttpServer:
    return HttpServer(SchemaServer(schemas, later).streamable_http_app(stateless_http=True))


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
    """Every tool left is offered in every format, and the local one and the remote `ok` run."""
    for fmt in ("openai", "anthropic", "gemini", "mcp", "responses"):
        assert len(registry.get_tools(fmt)) == len(registry)
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


def text_with(pattern: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"text": {"type": "string", "pattern": pattern}}}


PATTERNS = {
    "nested": text_with("^(a+)+$"),  # 80 s on 30 characters with re
    "adjacent": text_with(r"\w*\w*\w*\w*!"),  # 30 s on 250 characters with re
    "keys": {  # the same in a property name
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "string"}},
        "additionalProperties": False,
    },
    "lookahead": text_with("(?=a)b"),  # no linear-time engine runs it
    "backreference": text_with(r"(a)\1"),
    "plain": text_with(r"^[a-z]+\d$"),  # safe on either engine
}


@pytest.fixture
def patterns_url() -> Iterator[str]:
    with served(PATTERNS) as http:
        yield http.url + "/mcp"


def finishes(call: Any, *args: Any, **kwargs: Any) -> Any:
    """`call(...)`'s result; the test fails (instead of hanging the run) if it takes minutes."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(call, *args, **kwargs).result(timeout=120)
    finally:
        pool.shutdown(wait=False)  # a call still running is not waited for


def test_backtracking_patterns_run_on_re2_bounded(
    registry: ToolRegistry, patterns_url: str
) -> None:
    pytest.importorskip("re2")
    from toolreg.validation.untrusted import MAX_PATTERN_INPUT, MAX_PATTERN_TEXT

    with mount(registry, patterns_url) as handle:
        assert handle.names == ["ok", "nested", "adjacent", "keys", "plain"]
        assert set(handle.refused) == {"'lookahead'", "'backreference'"}
        assert "cannot run on RE2" in handle.refused["'lookahead'"]
        check = registry.dispatch_tool
        evil = finishes(check, "nested", {"text": "a" * 30 + "b"}, confirm=yes)
        assert (
            evil.content
            == "Invalid arguments for tool 'nested': text: must match pattern '^(a+)+$'."
        )
        assert finishes(check, "nested", {"text": "a" * 30}, confirm=yes).content == "a" * 30
        assert finishes(check, "adjacent", {"text": "a" * 250}, confirm=yes).error_kind == (
            "invalid_arguments"
        )
        keyed = finishes(check, "keys", {"a" * 30 + "b": "x"}, confirm=yes)
        assert "unexpected property" in keyed.content
        # a failed check is followed by coercion, which matches property names too: on the
        # same bounded engine (on `re`, 60 characters here would take longer than a lifetime)
        keyed = finishes(check, "keys", {"a" * 60 + "b": "42"}, confirm=yes)
        assert "unexpected property" in keyed.content
        keyed = finishes(check, "keys", {"a" * (MAX_PATTERN_INPUT + 1): "x"}, confirm=yes)
        assert "cannot be checked against pattern '^(a+)+$': longer than" in keyed.content
        long = finishes(check, "plain", {"text": "a" * (MAX_PATTERN_INPUT + 1)}, confirm=yes)
        assert long.content == (
            "Invalid arguments for tool 'plain': text: cannot be checked against pattern "
            f"'^[a-z]+\\\\d$': longer than {MAX_PATTERN_INPUT:,} characters."
        )
        check_the_rest_works(registry)
    # one call checks at most MAX_PATTERN_TEXT characters against such patterns
    registry.register_schema(
        "many",
        {
            "type": "object",
            "properties": {
                "texts": {"type": "array", "items": PATTERNS["plain"]["properties"]["text"]}
            },
        },
        lambda texts: "ran",
        untrusted=True,
    )
    texts = ["a" * 999 + "1"] * (MAX_PATTERN_TEXT // 1000 + 1)
    many = registry.dispatch_tool("many", {"texts": texts})
    assert many.error_kind == "invalid_arguments"
    budget = f"the call already had {MAX_PATTERN_TEXT:,} characters checked against"
    assert budget in many.content
    assert registry.dispatch_tool("many", {"texts": texts[:-1]}).content == "ran"


def test_a_schema_only_jsonschema_can_check_has_no_patterns_from_elsewhere(
    registry: ToolRegistry,
) -> None:
    """A schema with what toolreg's validator leaves to jsonschema (a `$ref` to another
    document, `if`/`then`): jsonschema runs patterns on `re`, unbounded, so such a schema
    from a mounted server is refused when it has any pattern, wherever it is."""
    backtracking = {"type": "string", "pattern": "^(a+)+$"}
    schemas = {
        "remote_ref": {
            "type": "object",
            "properties": {"text": {"$ref": "https://example.com/s.json"}, "other": backtracking},
        },
        "conditional": {
            "type": "object",
            "properties": {"text": backtracking},
            "if": {"required": ["text"]},
            "then": {"required": ["text"]},
        },
        "no_patterns": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "if": {"required": ["text"]},
            "then": {"required": ["text"]},
        },
    }
    with served(schemas) as http, mount(registry, http.url + "/mcp") as handle:
        assert handle.names == ["ok", "no_patterns"]
        assert set(handle.refused) == {"'remote_ref'", "'conditional'"}
        for reason in handle.refused.values():
            assert "whose patterns are not bounded in time" in reason
        assert registry.dispatch_tool("no_patterns", {"text": "hi"}, confirm=yes).content == "hi"


def test_without_re2_backtracking_patterns_are_refused_at_mount(
    registry: ToolRegistry,
    patterns_url: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "re2", None)  # as if google-re2 were not installed
    with caplog.at_level(logging.WARNING, "toolreg.mcp"), mount(registry, patterns_url) as handle:
        assert handle.names == ["ok", "plain"]
        refused = handle.refused
        assert set(refused) == {
            "'nested'",
            "'adjacent'",
            "'keys'",
            "'lookahead'",
            "'backreference'",
        }
        assert "nested quantifiers" in refused["'nested'"]
        assert "can match the same characters in a row" in refused["'adjacent'"]
        assert "nested quantifiers" in refused["'keys'"]
        assert "a lookaround" in refused["'lookahead'"]
        assert "a backreference" in refused["'backreference'"]
        assert "pip install 'toolreg[re2]'" in refused["'nested'"]
        plain = finishes(registry.dispatch_tool, "plain", {"text": "a" * 999 + "1"}, confirm=yes)
        assert plain.ok
        check_the_rest_works(registry)
    assert "refused the remote tool 'nested'" in caplog.text


def test_local_schemas_keep_pythons_re(registry: ToolRegistry) -> None:
    """Your own schema is yours: lookaround and backreferences work as `re` runs them."""
    registry.register_schema("own", PATTERNS["lookahead"], lambda text: "ran")
    assert registry.dispatch_tool("own", {"text": "b"}).error_kind == "invalid_arguments"
    registry.register_schema("twice", PATTERNS["backreference"], lambda text: "ran")
    assert registry.dispatch_tool("twice", {"text": "xaa"}).content == "ran"


def test_an_untrusted_schema_jsonschema_would_check_may_not_have_patterns(
    registry: ToolRegistry,
) -> None:
    """jsonschema runs patterns on `re`: a schema that needs it (`if`...) and has patterns
    is refused when untrusted; without patterns it is checked by jsonschema as usual."""
    from toolreg import ToolDefinitionError

    needs_jsonschema = {**PATTERNS["plain"], "if": {"required": ["text"]}}
    with pytest.raises(ToolDefinitionError, match="patterns are not bounded in time"):
        registry.register_schema("iffy", needs_jsonschema, print, untrusted=True)
    registry.register_schema("iffy", {"type": "object", "if": {}}, lambda: "ran", untrusted=True)
    assert registry.dispatch_tool("iffy", {}).content == "ran"


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (r"^\d{4}-\d{2}-\d{2}$", "2026-12-03", "2026-1-03"),
        (r"^[a-z0-9_-]+$", "get_time-2", "Get time"),
        (r"^(http|https)://", "https://x", "ftp://x"),
        (r"^\d+-\d+$", "12-345", "12-"),
        (r"[a-z]+\d", "ab1", "ab"),
        (r"^[a-z]+[0-9]+$", "ab12", "12ab"),
        # a decimal (what toolreg itself writes for a Decimal): the group must start with `.`
        (r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$", "-12.5e3", "12.5.3"),
        (r"^\d+(\.\d+)?$", "3.14", "3."),
    ],
)
def test_without_re2_the_usual_patterns_still_run(
    registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch, pattern: str, good: str, bad: str
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "re2", None)
    registry.register_schema("own", text_with(pattern), lambda text: "ran", untrusted=True)
    assert registry.dispatch_tool("own", {"text": good}).content == "ran"
    assert registry.dispatch_tool("own", {"text": bad}).error_kind == "invalid_arguments"


@pytest.mark.parametrize(
    "pattern",
    [
        ".*foo.*",
        "a?" * 20 + "a" * 20,
        "(a|ab)*c",
        r"^(\w+\s?)*$",
        r"^\d+(\d\.)?\d*$",  # the group may start with what the quantifier before takes
        r"^\d+(\.\d*)?\d+$",  # the group may be empty: \d+ then \d+
        r"^a*(x?a)b$",
    ],
)
def test_without_re2_other_backtracking_shapes_are_refused(
    registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    import sys

    from toolreg import ToolDefinitionError

    monkeypatch.setitem(sys.modules, "re2", None)
    with pytest.raises(ToolDefinitionError, match="could backtrack for a long time"):
        registry.register_schema("own", text_with(pattern), print, untrusted=True)


def test_a_hostile_schema_added_mid_session_is_refused_alone(registry: ToolRegistry) -> None:
    import time

    later = {"loop": LOOP, "deep": TOO_BIG["deep"], "fine": text_with("^[a-z]+$")}
    with served({}, later) as http, mount(registry, http.url + "/mcp") as handle:
        assert handle.names == ["ok", "learn"]
        assert registry.dispatch_tool("learn", {}, confirm=yes).content == "learned"
        deadline = time.monotonic() + 30  # the change notice refreshes the tools
        while "fine" not in registry and time.monotonic() < deadline:
            time.sleep(0.02)
        assert handle.names == ["ok", "learn", "fine"]
        assert set(handle.refused) == {"'loop'", "'deep'"}
        assert registry.dispatch_tool("fine", {"text": "abc"}, confirm=yes).content == "abc"
        check_the_rest_works(registry)
