"""`toolreg chat`: an interactive conversation with an OpenAI-compatible endpoint."""

from __future__ import annotations

import os
import sys

from ..conversation import Conversation
from ..errors import ConversationError
from ..registry import ToolRegistry
from .demo import print_hooks, terminal_confirm

__all__ = ["chat_loop"]


def chat_loop(
    registry: ToolRegistry,
    model: str,
    base_url: str | None,
    *,
    system: str | None = None,
    max_rounds: int = 8,
    dialect: str = "tools",
) -> int:
    """Read user lines from stdin until an empty line or end of input; print each tool call,
    each observation and each answer. Destructive tools ask on the terminal first."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "none"))
    conversation = Conversation(
        client,
        model,
        registry=registry,
        system=system,
        max_rounds=max_rounds,
        dialect=dialect,
        hooks=print_hooks(sys.stdout),
        confirm=terminal_confirm(None, sys.stdout),
    )
    print(f"toolreg chat: {len(registry)} tools, model {model}; an empty line ends the chat")
    while True:
        try:
            line = input("you> ")
        except EOFError:
            break
        if not line.strip():
            break
        try:
            reply = conversation.send(line)
        except ConversationError as exc:
            print(f"toolreg: {exc}", file=sys.stderr)
            continue
        print(f"assistant> {reply.text}")
    return 0
