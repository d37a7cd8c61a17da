"""Run a sample conversation end to end: the real SDK, real HTTP, real dispatch.

With `OPENAI_BASE_URL` and `TOOLREG_MODEL` set, the model is real (`OPENAI_API_KEY` is read
by the SDK; local servers accept any key). Otherwise a `ScriptedServer` on 127.0.0.1 plays
the model from the sample's script, and the first line printed says so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..conversation import Conversation
from ..conversation.reply import Hooks, Reply, ToolCallEvent, ToolResultEvent
from ..errors import UsageError
from ..jsonvalues import safe_text
from ..registry import ToolRegistry
from ..testing.server import ScriptedServer
from ..testing.turns import TurnLike
from .arguments import shown_arguments

__all__ = ["SCRIPTED_NOTICE", "Demo", "print_hooks", "run_demo", "terminal_confirm"]

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

    def before(event: ToolCallEvent) -> None:
        shown = shown_arguments(event.call.arguments)
        print(safe_text(f"  -> {event.call.name}({shown})"), file=out)

    def after(event: ToolResultEvent) -> None:
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
