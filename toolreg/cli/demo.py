"""Run a sample conversation end to end: the real SDK, real HTTP, real dispatch.

With `OPENAI_BASE_URL` and `TOOLREG_MODEL` set, the model is real (`OPENAI_API_KEY` is read
by the SDK; local servers accept any key). Otherwise a `ScriptedServer` on 127.0.0.1 plays
the model from the sample's script, and the first line printed says so.

`toolreg demo FILE.py` plays the file's own `DEMO` when it has one; otherwise (and always
with `--call` or `--prompt`) `tool_demo` writes one: the scripted model calls one tool once
(`--call NAME [ARGS...]`, else the first tool that is not destructive, else the first),
with the ARGS given or with `example_arguments` made from the tool's schema, then answers
with the tool's observation.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..conversation import Conversation
from ..conversation.events import Hooks, ToolCallReady, ToolFinished
from ..conversation.reply import Reply
from ..errors import UsageError
from ..jsonvalues import safe_text
from ..registry import ToolRegistry
from ..testing.server import ScriptedServer
from ..testing.turns import TurnLike, last_tool_result, text, tool_calls
from ..testing.turns import call as scripted_call
from ..tool import Tool
from .arguments import read_arguments, shown_arguments

__all__ = [
    "SCRIPTED_NOTICE",
    "Demo",
    "example_arguments",
    "print_hooks",
    "run_demo",
    "terminal_confirm",
    "tool_demo",
]

SCRIPTED_NOTICE = "scripted model; set OPENAI_BASE_URL and TOOLREG_MODEL to use a real one"


@dataclass(frozen=True)
class Demo:
    """One sample conversation: the tools, the user's prompts, and a script for each prompt."""

    registry: ToolRegistry
    prompts: Sequence[str]
    script: Sequence[TurnLike]
    system: str = "You are a helpful assistant. Use the tools; never invent facts or numbers."
    context: Any = None
    options: dict[str, Any] = field(default_factory=dict)


def print_hooks(out: TextIO) -> Hooks:
    """Hooks that print each tool call and its observation as they happen."""

    def before(event: ToolCallReady) -> None:
        shown = shown_arguments(event.call.arguments)
        print(safe_text(f"  -> {event.call.name}({shown})"), file=out)

    def after(event: ToolFinished) -> None:
        mark = "ok" if event.result.ok else event.result.error_kind
        print(safe_text(f"  <- [{mark}] {event.result.content}"), file=out)

    return Hooks(before_tool_call=before, after_tool_call=after)


def terminal_confirm(answer: str | None, out: TextIO) -> Callable[[Any, dict[str, Any]], bool]:
    """A confirm callback: `answer` ("y"/"n") if given, else ask the terminal (none: no)."""

    def confirm(tool: Any, arguments: dict[str, Any]) -> bool:
        shown = shown_arguments(arguments)
        question = f"  ?? run {tool.name}({shown})? [y/N] "
        if answer is not None:
            print(question + answer, file=out)
            return answer.lower().startswith("y")
        if not sys.stdin.isatty():
            print(question + "(no terminal: declined)", file=out)
            return False
        return input(question).strip().lower().startswith("y")

    return confirm


def run_demo(demo: Demo, *, out: TextIO | None = None, confirm: str | None = None) -> Reply:
    """Play `demo` and print every user prompt, tool call, observation and answer.

    `confirm` answers confirmation questions ("y"/"n"); by default the terminal is asked,
    and without a terminal destructive tools are declined.
    """
    stream = out or sys.stdout
    base_url, model = os.environ.get("OPENAI_BASE_URL"), os.environ.get("TOOLREG_MODEL")
    if base_url and model:
        import openai

        print(f"model {model} at {base_url}", file=stream)
        client = openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
        return _play(demo, client, model, stream, confirm)
    print(SCRIPTED_NOTICE, file=stream)
    with ScriptedServer(demo.script) as server:
        return _play(demo, server.client(), server.model, stream, confirm)


def _play(demo: Demo, client: Any, model: str, out: TextIO, confirm: str | None) -> Reply:
    conversation = Conversation(
        client,
        model,
        registry=demo.registry,
        system=demo.system,
        context=demo.context,
        confirm=terminal_confirm(confirm, out),
        hooks=print_hooks(out),
        **demo.options,
    )
    reply: Reply | None = None
    for prompt in demo.prompts:
        print(f"user: {prompt}", file=out)
        reply = conversation.send(prompt)
        print(f"assistant: {reply.text}", file=out)
    if reply is None:
        raise UsageError("a demo needs at least one prompt")
    return reply


def tool_demo(
    registry: ToolRegistry,
    call: Sequence[str] | None = None,
    *,
    prompt: str | None = None,
    context: Any = None,
) -> Demo:
    """A demo of `registry`'s tools: the scripted model calls one tool once, then answers
    with what it returned.

    `call` is `[NAME, *ARGS]` (ARGS as `toolreg call` reads them; none: example arguments);
    without it the first tool that is not destructive is called (else the first).
    `prompt` is the user's line (default: asks for that call, so a real model makes it too).
    """
    tools = registry.tools()
    if not tools:
        raise UsageError("no tools to demo")
    if call:
        tool = registry.get(call[0])
        if tool is None:
            have = ", ".join(registry.names())
            raise UsageError(f"--call: no tool named '{call[0]}' (have: {have})")
        words = list(call[1:])
        arguments: str | dict[str, Any] | None = (
            read_arguments(words, tool, sys.stdin) if words else None
        )
    else:
        tool = next((t for t in tools if not t.destructive), tools[0])
        arguments = None
    if context is None and tool.plan.needs_context:
        needed = tool.plan.needs_context[0]
        raise UsageError(
            f"tool '{tool.name}' needs a context for its parameter '{needed}'; pass --context JSON"
        )
    if arguments is None:
        arguments = example_arguments(tool)
    shown = shown_arguments(arguments)
    line = prompt or f"Call the tool {tool.name} with {shown} and tell me what it answers."
    return Demo(
        registry=registry,
        prompts=[line],
        script=[tool_calls(scripted_call(tool.name, arguments)), _answer(tool.name)],
        context=context,
    )


def _answer(name: str) -> Callable[[Mapping[str, Any]], Any]:
    """The scripted model's answer: the tool's observation, as it read it."""

    def answer(request: Mapping[str, Any]) -> Any:
        observation = last_tool_result(request)
        if not isinstance(observation, str):
            observation = json.dumps(observation, ensure_ascii=False)
        return text(f"{name} answered: {observation}")

    return answer


_MAX_EXAMPLE_DEPTH = 8
_EXAMPLE_HINT = re.compile(r"\be\.g\.,?\s+[\"'`]?([^\s,;:)\"'`]+)")
_FORMAT_EXAMPLES = {
    "date": "2025-01-31",
    "date-time": "2025-01-31T12:00:00Z",
    "time": "12:00:00",
    "duration": "PT1H",
    "email": "ada@example.com",
    "uri": "https://example.com",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
}


def example_arguments(tool: Tool) -> dict[str, Any]:
    """Arguments for `tool` made from its schema: each required parameter's default, its
    `examples[0]`, the word after "e.g." in its description, an enum's first value, else a
    value of its type (within its bounds); optional parameters are left to their defaults."""
    schema = tool.parameters
    defs = schema.get("$defs", {})
    return _example_object(schema, defs if isinstance(defs, dict) else {}, 0)


def _example_object(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> dict[str, Any]:
    properties = schema.get("properties", {})
    required = schema.get("required", ())
    return {
        name: _example(properties.get(name, {}), defs, depth + 1)
        for name in required
        if isinstance(name, str)
    }


def _example(schema: Any, defs: dict[str, Any], depth: int, hint: str | None = None) -> Any:
    if not isinstance(schema, dict) or depth > _MAX_EXAMPLE_DEPTH:
        return None
    hint = _hint(schema.get("description")) or hint  # also for the options of an anyOf
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _example(defs.get(ref[len("#/$defs/") :]), defs, depth + 1, hint)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        values = schema.get(key)
        if isinstance(values, list) and values:
            return next((v for v in values if v is not None), values[0])
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options and "type" not in schema:
        usable = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
        return _example((usable or options)[0], defs, depth + 1, hint)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        return _example_string(schema, hint)
    if kind in ("integer", "number"):
        return _example_number(schema, hint, integer=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        return _example_array(schema, defs, depth)
    if kind == "object":
        return _example_object(schema, defs, depth)
    return hint or "example"


def _hint(description: Any) -> str | None:
    """The example a description gives: "City name, e.g. Beijing" -> "Beijing"."""
    found = _EXAMPLE_HINT.search(description) if isinstance(description, str) else None
    if found is None:
        return None
    return found[1].rstrip(".") or None


def _example_string(schema: dict[str, Any], hint: str | None) -> str:
    value = _FORMAT_EXAMPLES.get(str(schema.get("format")), hint or "example")
    low, high = schema.get("minLength"), schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        value = (value * (low // max(len(value), 1) + 1))[:low]
    if isinstance(high, int) and len(value) > high:
        value = value[: max(high, 0)]
    return value


def _example_number(schema: dict[str, Any], hint: str | None, *, integer: bool) -> int | float:
    value: float = 1
    if hint is not None:
        with contextlib.suppress(ValueError):
            parsed = float(hint)
            value = parsed if math.isfinite(parsed) else value
    low, high = (
        _bound(schema, "minimum", "exclusiveMinimum"),
        _bound(schema, "maximum", "exclusiveMaximum"),
    )
    if integer:
        return _example_integer(value, low, high, schema.get("multipleOf"))
    inside = (low is None or value > low[0] or (value == low[0] and not low[1])) and (
        high is None or value < high[0] or (value == high[0] and not high[1])
    )
    if not inside:
        if low is not None and high is not None:
            value = (low[0] + high[0]) / 2
        elif low is not None:
            value = low[0] + 1 if low[1] else low[0]
        elif high is not None:
            value = high[0] - 1 if high[1] else high[0]
    return int(value) if value == int(value) else value


def _example_integer(
    value: float, low: tuple[float, bool] | None, high: tuple[float, bool] | None, step: Any
) -> int:
    chosen = math.ceil(value)
    if low is not None:
        chosen = max(chosen, math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
    if high is not None:
        chosen = min(chosen, math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
    if isinstance(step, int) and step > 0 and chosen % step:
        chosen += step - chosen % step
    return chosen


def _bound(schema: dict[str, Any], inclusive: str, exclusive: str) -> tuple[float, bool] | None:
    """A bound of a number and whether it is exclusive (the tighter of the two keywords)."""
    found = [
        (float(schema[key]), key == exclusive)
        for key in (inclusive, exclusive)
        if isinstance(schema.get(key), (int, float)) and not isinstance(schema.get(key), bool)
    ]
    if not found:
        return None
    if inclusive == "maximum":  # the lowest; an exclusive one first on a tie
        return min(found, key=lambda bound: (bound[0], not bound[1]))
    return max(found)


def _example_array(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> list[Any]:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return [_example(item, defs, depth + 1) for item in prefix]
    low = schema.get("minItems")
    count = low if isinstance(low, int) and 0 < low <= 8 else 1 if depth <= 4 else 0  # a tree ends
    return [_example(schema.get("items", {}), defs, depth + 1) for _ in range(count)]
