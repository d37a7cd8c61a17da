"""The history readers the providers share: the wire shapes of a history, read.

A history is chat messages (chat completions), input items (the Responses API, where a
call is a `function_call` item answered by a `function_call_output` item) or Messages API
messages (Anthropic: an assistant message's `tool_use` blocks are answered by the
`tool_result` blocks of the user message after it); the rules read each shape from the
entries themselves: `units` (what trimming keeps or drops whole), `call_ids`,
`answered_prefix`, `answer_tail` (the model's last answer), `entry_problem` (what a saved
state's entry must look like), and `trim_history` (public: `toolreg.conversation`).
Outside `providers/` (and `formats/`) no module reads a wire shape: the loop and the
conversation ask their provider.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...formats import Format
    from ...result import ToolCall

__all__ = [
    "CALL_ITEMS",
    "CALL_KEYS",
    "HistoryReading",
    "answer_tail",
    "answered_prefix",
    "call_ids",
    "client_call",
    "entry_problem",
    "trim_history",
    "trim_to_limits",
    "units",
]

CALL_KEYS = ("tool_calls", "function_call")
"""The keys of an assistant message that carry calls, in every chat dialect."""

CALL_ITEMS = ("function_call", "tool_search_call")
"""The types of the Responses API items that are calls (a tool search executed by the
server is answered by the server's `tool_search_output`, in the same response)."""

_ANSWER_ROLES = {"tool", "function", "observation"}
_ANSWER_ITEMS = {"function_call_output", "tool_search_output"}
Message = dict[str, Any]


def _is_answer(entry: Message) -> bool:
    return (
        entry.get("role") in _ANSWER_ROLES
        or entry.get("type") in _ANSWER_ITEMS
        or _blocks(entry, "tool_result") > 0
    )


def _answers(entry: Message) -> int:
    """How many calls `entry` answers (a user message of `tool_result` blocks: each)."""
    return _blocks(entry, "tool_result") or (1 if _is_answer(entry) else 0)


def _blocks(entry: Message, kind: str) -> int:
    """The number of content blocks of type `kind` (Anthropic's `tool_use`, `tool_result`)."""
    content = entry.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for block in content if isinstance(block, dict) and block.get("type") == kind)


def client_call(entry: Message) -> bool:
    """Whether `entry` is a Responses API call item the client must answer: a function
    call, or a tool search the client executes."""
    kind = entry.get("type")
    return kind == "function_call" or (
        kind == "tool_search_call" and entry.get("execution") == "client"
    )


def _calls_opened(entry: Message) -> int:
    """How many calls `entry` makes: the calls of an assistant message, or one call item."""
    if entry.get("type") in CALL_ITEMS:
        return 1
    if entry.get("role") != "assistant":
        return 0
    calls = entry.get("tool_calls")
    count = len(calls) if isinstance(calls, list) else 0
    return count + (1 if entry.get("function_call") else 0) + _blocks(entry, "tool_use")


def call_ids(history: Sequence[Message]) -> set[str]:
    """The ids of every call in a history, whatever its shape: chat `tool_calls`, Responses
    API call items, Messages API `tool_use` (and `server_tool_use`) blocks."""
    found: set[str] = set()
    for entry in history:
        if entry.get("type") in CALL_ITEMS:
            found.add(str(entry.get("call_id")))
        elif entry.get("role") == "assistant":
            calls = entry.get("tool_calls")
            if isinstance(calls, list):
                found.update(str(c.get("id")) for c in calls if isinstance(c, dict))
            content = entry.get("content")
            if isinstance(content, list):
                found.update(
                    str(b.get("id"))
                    for b in content
                    if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
                )
    return found


def _joins(unit: list[Message], entry: Message) -> bool:
    """Whether `entry` must stay with the unit before it: an answer stays with its calls,
    the calls of one response stay together, a reasoning item stays with what follows."""
    if _is_answer(entry):
        return any(_calls_opened(m) for m in unit)
    last = unit[-1].get("type")
    return last == "reasoning" or (last in CALL_ITEMS and entry.get("type") in CALL_ITEMS)


def units(messages: Sequence[Message]) -> list[list[Message]]:
    """Group the entries that make calls with the answers that follow them."""
    units: list[list[Message]] = []
    for message in messages:
        if units and _joins(units[-1], message):
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _size(unit: list[Message]) -> int:
    total = 0
    for message in unit:
        if "role" not in message:  # an item of the Responses API: call, output, reasoning
            total += len(json.dumps(message, ensure_ascii=False))
            continue
        content = message.get("content")
        if isinstance(content, str):
            total += len(content)
        elif content is not None:  # a list of content parts
            total += len(json.dumps(content, ensure_ascii=False))
        for key in CALL_KEYS:
            if message.get(key):
                total += len(json.dumps(message[key], ensure_ascii=False))
    return total


def answered_prefix(messages: Sequence[Message]) -> int:
    """The length of the longest prefix of `messages` in which every call is answered."""
    open_calls = end = 0
    for index, message in enumerate(messages, 1):
        if _is_answer(message):
            open_calls = max(0, open_calls - _answers(message))
        else:
            open_calls += _calls_opened(message)
        if open_calls == 0:
            end = index
    return end


def trim_history(
    messages: Sequence[Message],
    max_messages: int | None = None,
    max_chars: int | None = None,
) -> list[Message]:
    """The newest messages that fit `max_messages` and `max_chars`.

    Both limits count the whole result, system messages included. Characters are those of
    each message's content (a list of content parts counts as its JSON) plus the JSON of
    its `tool_calls` / `function_call`; a Responses API item without a role (a call, its
    output, a reasoning item) counts as its JSON.

    Leading system messages are always kept, and so are the newest user message (the
    question of the turn in progress) and the newest unit after it. An assistant message
    with tool calls and the tool messages that answer it are kept or dropped together (in
    the Responses API: the `function_call` items of one response, the reasoning item before
    them and their `function_call_output` items), and the history never starts with
    orphaned answers. What cannot be dropped is kept even when it exceeds a limit (see
    `trim_to_limits`).
    """
    return trim_to_limits(messages, max_messages, max_chars)[0]


def trim_to_limits(
    messages: Sequence[Message],
    max_messages: int | None,
    max_chars: int | None,
    split: Callable[[Sequence[Message]], list[list[Message]]] | None = None,
) -> tuple[list[Message], bool]:
    """`trim_history`, and whether the result is within the limits (False when what is
    always kept exceeds them); `split` divides the history into units (a provider's
    `units`; by default `units`)."""
    start = 0
    while start < len(messages) and messages[start].get("role") in ("system", "developer"):
        start += 1
    head, parts = list(messages[:start]), (split or units)(messages[start:])
    count = sum(len(u) for u in parts) + len(head)
    chars = sum(_size(u) for u in parts) + _size(head)
    questions = (i for i, u in enumerate(parts) if u[0].get("role") == "user")
    question = max((i for i in questions if not _is_answer(parts[i][0])), default=-1)
    keep = [True] * len(parts)
    for i in range(len(parts) - 1):  # oldest first; never the question nor the newest unit
        if not _over(count, chars, max_messages, max_chars):
            break
        if i == question:
            continue
        keep[i] = False
        count -= len(parts[i])
        chars -= _size(parts[i])
    tail = [unit for unit, kept in zip(parts, keep) if kept]
    while len(tail) > 1 and _is_answer(tail[0][0]):
        count -= len(tail[0])
        chars -= _size(tail[0])
        tail = tail[1:]  # an answer whose call was trimmed earlier
    fits = not _over(count, chars, max_messages, max_chars)
    return head + [m for unit in tail for m in unit], fits


def _over(count: int, chars: int, max_messages: int | None, max_chars: int | None) -> bool:
    return (max_messages is not None and count > max_messages) or (
        max_chars is not None and chars > max_chars
    )


_ENDS_A_ROUND = frozenset({"user", "system", "developer", "tool", "function", "observation"})


def answer_tail(history: Sequence[Message]) -> list[Message] | None:
    """The model's last answer: the entries after the last user message or tool answer (one
    assistant message, or the Responses API's output items); None when they are not all the
    model's."""
    start = len(history)
    while start > 0 and not _ends_a_round(history[start - 1]):
        start -= 1
    tail = list(history[start:])
    if any(entry.get("role", "assistant") != "assistant" for entry in tail):
        return None
    return tail


def _ends_a_round(entry: Message) -> bool:
    return entry.get("role") in _ENDS_A_ROUND or entry.get("type") == "function_call_output"


_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function", "observation"})


def entry_problem(message: Any) -> str | None:
    """What is wrong with a history entry read from outside (a saved state), as the loop and
    the providers read one: a message with a text `role` or an item with a text `type`, its
    content text, parts or null, its calls lists of objects. None: nothing."""
    if not isinstance(message, dict):
        return "a message is not an object"
    role, kind = message.get("role"), message.get("type")
    if (role is None and kind is None) or not all(
        v is None or isinstance(v, str) for v in (role, kind)
    ):
        return "a message has no text 'role' nor 'type'"
    if role is not None and role not in _ROLES:
        return f"a message has the role {role[:40]!r}"
    for key in ("content", "name", "call_id", "tool_call_id", "arguments", "output"):
        value = message.get(key)
        kinds: Any = (str, list) if key in ("content", "output") else str
        if key == "arguments" and kind == "tool_search_call":
            kinds = (str, dict)  # the Responses API's tool search sends an object
        if value is not None and not isinstance(value, kinds):
            return f"a message's {key!r} is neither text nor null"
    calls = message.get("tool_calls")
    if calls is not None and (
        not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls)
    ):
        return "a message's 'tool_calls' are not a list of objects"
    for call in [*(calls or ()), message]:
        function = call.get("function_call" if call is message else "function")
        if function is not None and not isinstance(function, dict):
            return "a message has a function call that is not an object"
    return None


class HistoryReading:
    """What every provider reads of its history the same way (its `fmt` parses the calls):
    the call ids in it, the prefix whose calls are all answered, the last answer's calls."""

    fmt: Format

    def call_ids(self, history: Sequence[Message]) -> set[str]:
        return call_ids(history)

    def answered_prefix(self, history: Sequence[Message]) -> int:
        return answered_prefix(history)

    def last_calls(self, history: Sequence[Message]) -> list[ToolCall] | None:
        tail = answer_tail(history)
        return None if tail is None else [c for e in tail for c in self.fmt.parse_calls(e)]
