"""`trim_history`: shorten a chat history without breaking tool-call pairs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["CALL_KEYS", "trim_history"]

CALL_KEYS = ("tool_calls", "function_call")
"""The keys of an assistant message that carry calls, in every dialect."""

_ANSWER_ROLES = {"tool", "function", "observation"}
Message = dict[str, Any]


def _opens_calls(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(any(message.get(key) for key in CALL_KEYS))


def _units(messages: Sequence[Message]) -> list[list[Message]]:
    """Group an assistant message that makes calls with the answers that follow it."""
    units: list[list[Message]] = []
    for message in messages:
        if message.get("role") in _ANSWER_ROLES and units and _opens_calls(units[-1][0]):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _size(unit: list[Message]) -> int:
    total = 0
    for message in unit:
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif content is not None:  # a list of content parts
            total += len(json.dumps(content, ensure_ascii=False))
        for key in CALL_KEYS:
            if message.get(key):
                total += len(json.dumps(message[key], ensure_ascii=False))
    return total


def trim_history(
    messages: Sequence[Message],
    max_messages: int | None = None,
    max_chars: int | None = None,
) -> list[Message]:
    """The newest messages that fit `max_messages` and `max_chars`.

    Both limits count the whole result, system messages included. Characters are those of
    each message's content (a list of content parts counts as its JSON) plus the JSON of
    its `tool_calls` / `function_call`.

    Leading system messages are always kept. An assistant message with tool calls and the
    tool messages that answer it are kept or dropped together, and the history never starts
    with orphaned tool answers. The newest unit (e.g. the last user message) is always kept,
    even when it alone exceeds a limit.
    """
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    head, units = list(messages[:start]), _units(messages[start:])
    count = sum(len(u) for u in units) + len(head)
    chars = sum(_size(u) for u in units) + _size(head)
    kept_from = 0
    while kept_from < len(units) - 1 and _over(count, chars, max_messages, max_chars):
        count -= len(units[kept_from])
        chars -= _size(units[kept_from])
        kept_from += 1
    tail = units[kept_from:]
    while len(tail) > 1 and tail[0][0].get("role") in _ANSWER_ROLES:
        tail = tail[1:]  # an answer whose call was trimmed earlier
    return head + [m for unit in tail for m in unit]


def _over(count: int, chars: int, max_messages: int | None, max_chars: int | None) -> bool:
    return (max_messages is not None and count > max_messages) or (
        max_chars is not None and chars > max_chars
    )
