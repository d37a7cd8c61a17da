"""Scripted assistant turns: what a `ScriptedServer` answers.

Each builder returns an immutable `Turn`. A turn says *what* the model answers; the
wire shape (Chat Completions, streamed chunks, Responses API) is chosen per request by
`toolreg.testing.wire`. Everything is JSON-encoded when the turn is built, so a
value that cannot go on the wire fails at the line that scripted it.

    text("Sunny, 18 °C")
    tool_call("get_weather", city="Paris")                   # auto id: call_1, call_2, ...
    tool_calls(call("a", {"x": 1}), call("b", id="call_b"))  # parallel calls, one message
    tool_call("get_weather", '{"city": "Par')                # a str is sent verbatim
    function_call("get_weather", city="Paris")               # legacy `functions` dialect
    raw({"role": "assistant", "content": None})              # any message, verbatim
    error(429, "Slow down")                                  # an HTTP error answer
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from ..errors import UsageError

Usage = Union[tuple[int, int], Mapping[str, Any], Literal[False], None]
"""``(prompt_tokens, completion_tokens)``, a usage dict sent verbatim, ``None`` for the
default ``(10, 5)``, or ``False`` to send no usage at all."""

DEFAULT_USAGE = (10, 5)


@dataclass(frozen=True, repr=False)
class Call:
    """One function call of an assistant turn; ``id=None`` lets the server number it."""

    name: str
    arguments: str
    id: str | None = None

    def __repr__(self) -> str:
        suffix = "" if self.id is None else f", id={self.id!r}"
        return f"call({self.name!r}, {self.arguments!r}{suffix})"


@dataclass(frozen=True, repr=False)
class Turn:
    """One scripted answer. Build it with the module's functions, not directly."""

    kind: Literal["message", "function_call", "raw", "error"]
    content: str | None = None
    calls: tuple[Call, ...] = ()
    raw_json: str | None = None
    finish_reason: str | None = "stop"
    usage: tuple[int, int] | str | None = DEFAULT_USAGE
    status: int = 200
    error_type: str = ""
    error_code: str | None = None
    label: str = field(default="", compare=False)

    def __repr__(self) -> str:
        return self.label or f"Turn({self.kind!r})"


DynamicTurn = Callable[[dict[str, Any]], Turn]
"""A function of the request body that returns the turn to answer, e.g. an echo."""

TurnLike = Union[Turn, DynamicTurn]
"""One entry of a `ScriptedServer` script: a `Turn` (built with `text`, `tool_call`, ...)
or a `DynamicTurn`, a function of the request that returns one."""


def _arguments(arguments: Mapping[str, Any] | str | None, kwargs: dict[str, Any]) -> str:
    if isinstance(arguments, str):
        if kwargs:
            raise UsageError("give the arguments either as one string or as keywords, not both")
        return arguments
    return json.dumps({**(arguments or {}), **kwargs}, ensure_ascii=False)


def _usage(usage: Usage) -> tuple[int, int] | str | None:
    if usage is None:
        return DEFAULT_USAGE
    if usage is False:
        return None
    if isinstance(usage, tuple):
        prompt, completion = usage
        return (int(prompt), int(completion))
    return json.dumps(dict(usage))


def call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None, **kw: Any
) -> Call:
    """One call for `tool_calls`; keywords are arguments, a str is sent verbatim.

    Args:
        name: the tool the model calls.
        arguments: the arguments as a mapping, or a str sent as it is (to script malformed
            JSON); keywords add to them.
        id: the call's id; None lets the server number it (`call_1`, `call_2`, ...).
    """
    return Call(name, _arguments(arguments, kw), id)


def text(content: str, *, finish_reason: str = "stop", usage: Usage = None) -> Turn:
    """The assistant answers `content` (a str: for JSON, `text(json.dumps(value))`).

    Args:
        content: the answer's text.
        finish_reason: the finish reason the answer carries (`"length"` to script a cut-off).
        usage: the token usage reported, `(prompt, completion)`.

    Raises:
        UsageError: `content` or `finish_reason` is not a str.
    """
    given: object = content  # checked: callers may not be type-checked
    if not isinstance(given, str):
        hint = (
            "text(json.dumps(value)) sends it as JSON text"
            if isinstance(given, (dict, list, int, float, bool))
            else "pass the assistant's answer as a str"
        )
        raise UsageError(
            f"text() takes the assistant's answer as a str, not {type(given).__name__}: "
            f"{hint} (empty() is an answer with no text)"
        )
    reason: object = finish_reason
    if not isinstance(reason, str):
        raise UsageError(f"text(): finish_reason must be a str, not {type(reason).__name__}")
    return Turn(
        "message", content, (), None, finish_reason, _usage(usage), label=f"text({content!r})"
    )


def empty(content: Literal["", None] = "", *, usage: Usage = None) -> Turn:
    """An answer with no text and no tool calls (content `""` or `None`).

    Args:
        content: `""` or None, as the endpoint would send it.
        usage: the token usage reported, `(prompt, completion)`.
    """
    return Turn("message", content, (), None, "stop", _usage(usage), label=f"empty({content!r})")


def tool_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None, **kw: Any
) -> Turn:
    """The assistant calls one tool. `tool_call("get_weather", city="Paris")`.

    Args:
        name: the tool the model calls.
        arguments: the arguments as a mapping, or a str sent as it is; keywords add to them.
        id: the call's id; None lets the server number it (`call_1`, `call_2`, ...).
    """
    return tool_calls(call(name, arguments, id=id, **kw))


def tool_calls(
    *calls: Call, content: str | None = None, finish_reason: str = "tool_calls", usage: Usage = None
) -> Turn:
    """Several tool calls in one assistant message (parallel calls), built with `call`.

    Args:
        calls: the calls, `call(name, ...)` each.
        content: text the assistant sends beside its calls.
        finish_reason: `"tool_calls"` by default.
        usage: the token usage reported, `(prompt, completion)`.

    Raises:
        UsageError: no calls, or one that is not a `call(...)`.

    Example:
        tool_calls(call("stock", item="mug"), call("stock", item="cup"))
    """
    if not calls or not all(isinstance(c, Call) for c in calls):
        raise UsageError("tool_calls() takes one or more call(name, arguments) values")
    label = "tool_calls(" + ", ".join(map(repr, calls)) + ")"
    return Turn("message", content, calls, None, finish_reason, _usage(usage), label=label)


def function_call(
    name: str, arguments: Mapping[str, Any] | str | None = None, *, usage: Usage = None, **kw: Any
) -> Turn:
    """A legacy `function_call` answer (finish_reason `"function_call"`).

    Args:
        name: the function the model calls.
        arguments: the arguments as a mapping, or a str sent as it is; keywords add to them.
        usage: the token usage reported, `(prompt, completion)`.
    """
    one = Call(name, _arguments(arguments, kw))
    label = f"function_call({name!r}, {one.arguments!r})"
    return Turn("function_call", None, (one,), None, "function_call", _usage(usage), label=label)


def raw(
    message: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    finish_reason: str | None = "stop",
    usage: Usage = None,
) -> Turn:
    """Any assistant message dict, sent verbatim on /v1/chat/completions.

    On /v1/responses a chat-shaped message is converted to output items, a dict with a
    `"type"` key is sent as the single output item, and a list of such dicts is sent as
    the output items (e.g. a `reasoning` item, then a `function_call`): a list answers
    /v1/responses only.

    Args:
        message: the message dict, or a list of output items.
        finish_reason: the finish reason the answer carries.
        usage: the token usage reported, `(prompt, completion)`.
    """
    if isinstance(message, Mapping):
        encoded = json.dumps(dict(message), ensure_ascii=False)
    else:
        encoded = json.dumps([dict(item) for item in message], ensure_ascii=False)
    return Turn("raw", None, (), encoded, finish_reason, _usage(usage), label=f"raw({encoded})")


def tool_search_call(
    arguments: Mapping[str, Any] | None = None, *, id: str = "search_1", **kw: Any
) -> Turn:
    """(/v1/responses) The model asks the client to search its tools: a `tool_search_call`
    item with `"execution": "client"`. `tool_search_call(query="calendar")`.

    Args:
        arguments: the search's arguments; keywords add to them.
        id: the call's id (`call_id`), `"search_1"` by default.
    """
    item = {
        "type": "tool_search_call",
        "id": f"ts_{id}",
        "call_id": id,
        "execution": "client",
        "status": "completed",
        "arguments": {**(arguments or {}), **kw},
    }
    return raw([item])


def error(
    status: int,
    message: str = "Scripted error",
    *,
    error_type: str | None = None,
    code: str | None = None,
) -> Turn:
    """Answer HTTP `status` with an OpenAI-style `{"error": {...}}` body.

    Args:
        status: the HTTP status, 400 to 599.
        message: the error's message.
        error_type: its `type`; by default `"server_error"` for 5xx, else
            `"invalid_request_error"`.
        code: its `code`.

    Raises:
        UsageError: `status` is not an HTTP error status.
    """
    if not 400 <= status <= 599:
        raise UsageError(f"error() needs an HTTP error status (400-599), got {status}")
    kind = error_type or ("server_error" if status >= 500 else "invalid_request_error")
    label = f"error({status}, {message!r})"
    return Turn("error", message, status=status, error_type=kind, error_code=code, label=label)


def last_tool_result(request: Mapping[str, Any]) -> Any:
    """The newest tool observation in a recorded request, JSON-decoded when it is JSON.

    Chat ``tool`` / ``function`` / ``observation`` messages and Responses API
    ``function_call_output`` items are read. For dynamic turns that answer from what a tool
    returned::

        lambda request: text(f"It is {last_tool_result(request)['temperature']} °C")
    """
    found = request.get("messages") or request.get("input")
    entries: list[Any] = found if isinstance(found, list) else []
    for message in reversed(entries):
        if not isinstance(message, dict):
            continue
        if message.get("type") == "function_call_output":
            content = message.get("output")
        elif message.get("role") in ("tool", "function", "observation"):
            content = message.get("content")
        else:
            continue
        try:
            return json.loads(content) if isinstance(content, str) else content
        except ValueError:
            return content
    return None
