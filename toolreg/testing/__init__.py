"""Helpers for testing tools and conversations (yours and ours).

- `ScriptedServer`: a real OpenAI-compatible HTTP server on 127.0.0.1 that answers from a
  script of turns (`text`, `tool_call`, `tool_calls`, `function_call`, `raw`, `error`,
  `empty`, `tool_search_call`) and records every request; `server.client()` is an
  `openai.OpenAI` bound to it.
- `call_tool`: call a registered tool by name exactly as a model would.
- `assert_schema` / `schema_snapshot`: check what a model is told about your tools;
- `history_problems`: what OpenAI would refuse in a history (a call left unanswered, an
  answer to no call, a call answered twice); `ScriptedServer` refuses such requests too.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import Any

from ..registry import ToolRegistry, default_registry
from ..result import ToolResult
from .inspection import history_problems
from .server import ScriptedServer
from .turns import (
    Call,
    DynamicTurn,
    Turn,
    TurnLike,
    Usage,
    call,
    empty,
    error,
    function_call,
    last_tool_result,
    raw,
    text,
    tool_call,
    tool_calls,
    tool_search_call,
)

__all__ = [
    "Call",
    "DynamicTurn",
    "ScriptedServer",
    "Turn",
    "TurnLike",
    "Usage",
    "assert_schema",
    "call",
    "call_tool",
    "empty",
    "error",
    "function_call",
    "history_problems",
    "last_tool_result",
    "raw",
    "schema_snapshot",
    "text",
    "tool_call",
    "tool_calls",
    "tool_search_call",
]


def call_tool(
    name: str,
    arguments: str | Mapping[str, Any] | None = None,
    *,
    registry: ToolRegistry | None = None,
    context: Any = None,
    confirm: Any = None,
) -> ToolResult:
    """Dispatch `name` the way a model's call is dispatched.

    A mapping is sent as JSON text, like a model would send it, so decoding, validation,
    coercion and conversion all run; the call id is `"test"`.

    Args:
        name: the tool's name.
        arguments: a mapping (sent as JSON text), JSON text, or None.
        registry: the registry to dispatch on (else `toolreg.default_registry`).
        context: the value a `ToolContext` parameter receives.
        confirm: the confirmation callback, for a tool that needs one.

    Returns the `ToolResult`; like `dispatch_tool`, it never raises for the call's problems.

    Example:
        assert call_tool("add", {"a": 2, "b": "3"}, registry=tools).content == "5"
    """
    reg = registry if registry is not None else default_registry
    payload = (
        arguments
        if arguments is None or isinstance(arguments, str)
        else json.dumps(dict(arguments), ensure_ascii=False)
    )
    return reg.dispatch_tool(name, payload, context=context, confirm=confirm, call_id="test")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def assert_schema(
    name: str,
    expected: Mapping[str, Any],
    *,
    registry: ToolRegistry | None = None,
    format: str | None = None,
) -> None:
    """Assert the parameters schema of tool `name` (or its whole export in `format`).

    Args:
        name: the tool's name.
        expected: the JSON Schema of its parameters, or with `format` the whole definition.
        registry: the registry (else `toolreg.default_registry`).
        format: compare the tool's export in this format instead (`"anthropic"`, ...).

    Raises:
        AssertionError: no such tool, or the schema differs; the message shows a unified diff.
    """
    reg = registry if registry is not None else default_registry
    if name not in reg:
        raise AssertionError(f"no tool named {name!r}; registered: {', '.join(reg.names())}")
    if format is None:
        actual: Any = reg[name].parameters
    else:
        actual = reg.get_tools(format, names=[name])[0]
    if actual != expected:
        diff = "\n".join(
            difflib.unified_diff(
                _pretty(expected).splitlines(),
                _pretty(actual).splitlines(),
                "expected",
                "actual",
                lineterm="",
            )
        )
        raise AssertionError(f"schema of {name!r} differs:\n{diff}")


def schema_snapshot(registry: ToolRegistry | None = None, format: str = "openai") -> str:
    """Every tool definition of a registry as stable, pretty JSON: commit it, diff it.

    Keys are sorted and the text ends with a newline, so a snapshot file changes only when
    a definition does.

    Args:
        registry: the registry (else `toolreg.default_registry`).
        format: the export format, `"openai"` by default.

    Example:
        assert schema_snapshot(tools) == Path("tools.snapshot.json").read_text()
    """
    reg = registry if registry is not None else default_registry
    return _pretty(reg.get_tools(format)) + "\n"
