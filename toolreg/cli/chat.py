"""`toolreg chat`: an interactive conversation with an OpenAI-compatible endpoint.

Exit status: 0 when the input ends (an empty line or end of input); 1 as soon as the
endpoint fails (refused, unreachable, an HTTP error, an unusable answer, after the SDK's own
retries): one line on stderr names the endpoint's URL and the error, and the chat ends
rather than waiting for more input that would fail the same way.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..conversation import Conversation, PendingCall
from ..errors import ConversationError, UsageError
from ..jsonvalues import safe_text
from ..registry import ToolRegistry
from .arguments import shown_arguments
from .demo import print_hooks

__all__ = ["ask_approval", "chat_loop", "endpoint_failed"]


def endpoint_failed(url: str, exc: ConversationError) -> int:
    """Say on one line of stderr which endpoint failed and how; the exit status (1).

    The URL once: the error names it already when the conversation knew it."""
    said = " ".join(str(exc).split())
    where = "" if exc.endpoint is not None else f"{url.rstrip('/')}: "
    print(f"toolreg: {where}{said}", file=sys.stderr)
    return 1


def ask_approval(pending: PendingCall) -> Any:
    """Ask at the terminal about one call that waits for approval: "y" runs it, "n" or
    nothing declines it, any other text declines it with that reason for the model."""
    shown = shown_arguments(pending.arguments)
    question = f"  ?? run {pending.tool_name}({shown})? [y/N, or why not] "
    try:
        answer = input(question).strip()
    except EOFError:
        print("(end of input: declined)")
        return False
    if answer.lower() in ("y", "yes"):
        return True
    if answer.lower() in ("", "n", "no"):
        return False
    return answer


def ask_answer(pending: PendingCall) -> Any:
    """Ask at the terminal a tool's question (`ctx.ask`): its form's fields one by one
    (an empty line leaves an optional field out; "n" or nothing at the first prompt
    declines), as the answer `resume` takes."""
    schema = pending.schema or {}
    print(safe_text(f"  ?? {pending.tool_name} asks: {pending.question}"))
    try:
        if input("  ?? answer? [y/N] ").strip().lower() not in ("y", "yes"):
            return False
        answer: dict[str, Any] = {}
        required = set(schema.get("required", ()))
        for name, field in schema.get("properties", {}).items():
            kind = field.get("type", "string") if isinstance(field, dict) else "string"
            mark = "" if name in required else ", optional"
            raw = input(f"  ?? {name} ({kind}{mark}): ").strip()
            if raw or name in required:
                answer[name] = _typed(raw, kind)
    except EOFError:
        print("(end of input: declined)")
        return False
    return answer


def _typed(raw: str, kind: object) -> Any:
    """A terminal line as the field's JSON type (left as text when it is not one: the
    answer is checked against the form, which names the field)."""
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        return raw
    if kind == "boolean":
        return raw.lower() in ("y", "yes", "true", "1")
    if kind == "array":
        return [item.strip() for item in raw.split(",") if item.strip()]
    return raw


def _decisions(pending: list[PendingCall]) -> dict[str, Any]:
    return {p.call_id: ask_answer(p) if p.question else ask_approval(p) for p in pending}


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
    each observation and each answer. A call that needs confirmation pauses the turn
    (`confirm="defer"`), and so does a tool's question (`ctx.ask`): the terminal is asked,
    and the turn resumes with the answer."""
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
        confirm="defer",
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
            while reply.stop_reason in ("approval_required", "input_required"):
                try:
                    reply = conversation.resume(_decisions(reply.pending))
                except UsageError as exc:  # an answer that does not fit: asked again
                    print(safe_text(f"  !! {exc}"))
        except ConversationError as exc:
            return endpoint_failed(str(client.base_url), exc)
        print(safe_text(f"assistant> {reply.text}"))
    return 0
