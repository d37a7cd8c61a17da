"""Anthropic's Messages API (`client.messages.create` of the `anthropic` SDK), natively.

The history is Messages API messages: the leading system messages go out as `system=`; an
assistant message's content is its blocks as received (`text`, `tool_use`, `thinking`...);
all the results of a round go back in one user message of `tool_result` blocks, in the
order of the calls. `max_tokens`, which the API requires, defaults to `MAX_TOKENS` (give
`max_tokens=` to the conversation to change it). Structured output is the API's own JSON
output (`output_config={"format": {"type": "json_schema", ...}}`). Tool search is the API's
own with `deferred_search="client"|"hosted"` (see `offer`): a client search's result is a
`tool_result` of `tool_reference` blocks; the server's `server_tool_use` and
`tool_search_tool_result` blocks go back as received.

A stream is read from its events: `message_start` (id, model, input usage),
`content_block_start` / `content_block_delta` (`text_delta` to `on_text`,
`input_json_delta` pieces of a call's input) / `content_block_stop`, `message_delta`
(stop reason, output usage) and `message_stop`; an `error` event is a `ConversationError`.
The SDK is never imported here: the client brings it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...dispatch.calling import call_hook
from ...errors import ConversationError
from ...formats import FORMATS
from ...formats.anthropic import tool_references
from ...formats.base import is_json_object
from ...jsonvalues import strict_decoder
from ...result import ToolCall, ToolResult
from .base import (
    Answer,
    CallIds,
    IdRule,
    Message,
    References,
    Request,
    calls_since_user,
    complete_object,
    parts_text,
)
from .history import HistoryReading, units
from .openai_chat import plain

__all__ = ["MAX_TOKENS", "AnthropicMessages", "MessageStreamAssembler", "decode_message"]

MAX_TOKENS = 4096
"""The `max_tokens` sent when the conversation was given none (the API requires one)."""

_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_SYSTEM_ROLES = ("system", "developer")
_MAX_MESSAGE = 300


class AnthropicMessages(HistoryReading):
    """The provider of the Messages API (see the module docstring)."""

    name = "anthropic"
    dialect = "anthropic"
    keeps_history = False
    id_rule = IdRule("toolu_", 64, "a-zA-Z0-9_-")  # the API's pattern for tool_use ids

    def __init__(self) -> None:
        self.fmt = FORMATS["anthropic"]

    def check_choice(self, choice: str) -> None:
        """Every choice has a Messages API form (`auto`, `none`, `any`, a tool)."""

    def encode(self, request: Request) -> dict[str, Any]:
        history = request.history
        start = 0
        while start < len(history) and history[start].get("role") in _SYSTEM_ROLES:
            start += 1
        out: dict[str, Any] = {"max_tokens": MAX_TOKENS, **request.options}
        out["model"] = request.model
        system = [m.get("content") for m in history[:start]]
        if system:
            out["system"] = "\n\n".join(c for c in system if isinstance(c, str))
        out["messages"] = history[start:]
        if request.tools:
            out["tools"] = request.tools
            out["tool_choice"] = _choice(request.choice)
        if request.output is not None:
            given = out.get("output_config")
            asked = {"format": {"type": "json_schema", "schema": request.output.sent}}
            out["output_config"] = {**given, **asked} if isinstance(given, dict) else asked
        return out

    def create(self, client: Any) -> Callable[..., Any]:
        return client.messages.create  # type: ignore[no-any-return]

    def stream_options(self, request_options: Mapping[str, Any]) -> dict[str, Any]:
        return {"stream": True}  # the events carry the usage unasked

    def decode(self, response: Any, ids: CallIds | None = None) -> Answer:
        return decode_message(plain(response), ids)

    def assembler(
        self, on_text: Callable[[str], None] | None, ids: CallIds | None = None
    ) -> MessageStreamAssembler:
        return MessageStreamAssembler(on_text, ids)

    def calls(self, answer: Answer) -> list[ToolCall]:
        return self.fmt.parse_calls(answer.message)

    def took(self, answer: Answer, drop_calls: bool) -> tuple[list[Message], bool]:
        blocks = [_echo_block(b) for b in answer.message.get("content") or ()]
        if drop_calls:  # a final answer keeps no call, nor the thinking that led to it
            blocks = [b for b in blocks if b.get("type") not in ("tool_use", "thinking")]
        blocks = [b for b in blocks if b.get("type") != "text" or b.get("text")]
        if not blocks:  # the API refuses an empty assistant message
            return [], False
        return [{"role": "assistant", "content": blocks}], True

    def results(self, results: Sequence[ToolResult]) -> list[Message]:
        if not results:
            return []
        return [{"role": "user", "content": [self._result_block(r) for r in results]}]

    def _result_block(self, result: ToolResult) -> dict[str, Any]:
        """A result's `tool_result` block; a client-executed tool search that found tools
        answers with their `tool_reference` blocks, which load them (see `offer`)."""
        if result.ok and isinstance(result.value, References) and result.value:
            return dict(tool_references(result.call_id or "", result.value))
        return dict(self.fmt.observation(result))

    def user(self, text: str) -> Message:
        return {"role": "user", "content": text}

    def units(self, messages: Sequence[Message]) -> list[list[Message]]:
        """A user's message with every round that answers it: the API takes a history
        only when it starts with a user's message (not one of tool results)."""
        out: list[list[Message]] = []
        for unit in units(messages):
            first = unit[0]
            question = first.get("role") == "user" and not _results_only(first)
            if out and not question:
                out[-1].extend(unit)
            else:
                out.append(list(unit))
        return out

    def calls_in(self, history: Sequence[Mapping[str, Any]]) -> list[str]:
        return calls_since_user(history, self.user_text, self._calls_of)

    def _calls_of(self, entry: Mapping[str, Any]) -> list[ToolCall]:
        return self.fmt.parse_calls(dict(entry)) if entry.get("role") == "assistant" else []

    def user_text(self, entry: Mapping[str, Any]) -> str | None:
        """A user message's text; a message of `tool_result` blocks is the tools', not
        the person's (the API sends both as role "user")."""
        if entry.get("role") != "user" or _results_only(dict(entry)):
            return None
        return parts_text(entry.get("content"), ("text",))


def _results_only(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


def _echo_block(block: Any) -> dict[str, Any]:
    """A content block to send back: a `tool_use` with the keys a request takes and an
    input that is an object (`{}` for one cut off or malformed: the result says why); a
    text block without the nulls the API answers with; any other block as received."""
    if not isinstance(block, dict):
        raise ConversationError("the endpoint answered a content block that is not an object")
    kind = block.get("type")
    if kind == "tool_use":
        given = block.get("input")
        sent = given if isinstance(given, dict) else {}
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": sent}
    if kind == "text":
        return {k: v for k, v in block.items() if v is not None}
    return block


def decode_message(data: Any, ids: CallIds | None = None) -> Answer:
    """A Messages API `message` (plain data) -> an `Answer`; its `tool_use` blocks get the
    ids `ids` gives their positions (None: as sent)."""
    if not isinstance(data, dict) or data.get("type", "message") != "message":
        if isinstance(data, dict) and data.get("type") == "error":
            raise ConversationError(f"the endpoint answered an error: {_error_text(data)}")
        raise ConversationError("the endpoint answered something that is not a message")
    content = data.get("content")
    if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
        raise ConversationError("the endpoint answered a message without a list of content blocks")
    if ids is not None:
        content = [with_id(block, ids, n) for n, block in enumerate(content)]
    texts = []
    for block in content:
        if block.get("type") == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise ConversationError("the endpoint answered a text block without text")
            texts.append(text)
    stop = data.get("stop_reason")
    message = {"role": "assistant", "content": content}
    rid, model = data.get("id"), data.get("model")
    return Answer.of(
        {
            "message": message,
            "entries": [message],
            "text": "".join(texts),
            "finish_reason": _FINISH.get(stop, stop) if isinstance(stop, str) else None,
            "usage": _usage(data.get("usage")),
            "id": rid if isinstance(rid, str) else None,
            "model": model if isinstance(model, str) else None,
        }
    )


def with_id(block: dict[str, Any], ids: CallIds, slot: int) -> dict[str, Any]:
    """A content block; a `tool_use` block with the id `ids` gives its slot."""
    if block.get("type") != "tool_use":
        return block
    return {**block, "id": ids.id_for(slot, block.get("id"))}


def _usage(usage: Any) -> dict[str, Any] | None:
    """The Messages API's usage with `input_tokens` counting the cached input too."""
    if usage is None:
        return None
    if not isinstance(usage, dict):
        raise ConversationError("the endpoint answered a usage that is not an object")
    out = {k: v for k, v in usage.items() if v is not None}
    cached = [out.get(k) for k in ("cache_creation_input_tokens", "cache_read_input_tokens")]
    counts = [c for c in cached if isinstance(c, int) and not isinstance(c, bool) and c > 0]
    if counts and isinstance(out.get("input_tokens"), int):
        out["input_tokens"] += sum(counts)
    return out or None


def _error_text(data: dict[str, Any]) -> str:
    error = data.get("error")
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type")
        text = message if isinstance(message, str) else "no message"
        return (f"{kind}: {text}" if isinstance(kind, str) else text)[:_MAX_MESSAGE]
    return "no message"


class MessageStreamAssembler:
    """Feeds on streamed events; `result()` is the same `Answer` as `decode_message`, or a
    `ConversationError` for a stream that ended before `message_stop`.

    Blocks are read by their `index`, in any interleaving; `ids` gives each `tool_use`
    block its id (None: as sent)."""

    def __init__(
        self, on_text: Callable[[str], None] | None = None, ids: CallIds | None = None
    ) -> None:
        self.on_text = on_text
        self.ids = ids
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.inputs: dict[int, list[str]] = {}
        self.usage: dict[str, Any] = {}
        self.stop_reason: Any = None
        self.stopped = False
        self.events = 0
        self.closed: list[int] = []  # blocks stopped since `completed` last looked
        self._released: set[int] = set()  # the blocks `completed` looked at

    def completed(self) -> list[dict[str, Any]]:
        """The `tool_use` blocks complete so far (`content_block_stop`, and streamed input
        that is a whole JSON object: the `{}` of `content_block_start` is a placeholder,
        not the model's), each once, alone in an assistant message (eager start; see
        `Assembler`)."""
        closed, self.closed = self.closed, []
        done = []
        for index in closed:
            if index in self._released or self.blocks.get(index, {}).get("type") != "tool_use":
                continue
            self._released.add(index)
            if complete_object("".join(self.inputs.get(index, ()))):
                done.append({"role": "assistant", "content": [self._block(index)]})
        return done

    def _block(self, index: int) -> dict[str, Any]:
        """A block with its streamed input read (a call whose input is not a JSON object
        keeps it as text: dispatch says why; none: the input of content_block_start), and
        a `tool_use` block with the id its index gets."""
        block = dict(self.blocks[index])
        text = "".join(self.inputs.get(index, ()))
        if text.strip():
            block["input"] = strict_decoder.decode(text) if is_json_object(text) else text
        if self.ids is not None and block.get("type") == "tool_use":
            block["id"] = self.ids.id_for(index, block.get("id"))
        return block

    def feed(self, event: Any) -> None:
        self.events += 1
        data = plain(event)
        if not isinstance(data, dict):
            raise ConversationError("the endpoint streamed an unusable event")
        try:
            text = self._read(data)
        except ConversationError:
            raise
        except (AttributeError, TypeError, KeyError, ValueError) as exc:  # an event of junk
            raise ConversationError(
                f"the endpoint streamed an event of an unexpected shape ({type(exc).__name__})"
            ) from exc
        if text and self.on_text is not None:  # outside the try: on_text's errors are its own
            call_hook(self.on_text, text)

    def _read(self, data: dict[str, Any]) -> str | None:
        kind = data.get("type")
        if kind == "error":
            raise ConversationError(f"the endpoint streamed an error: {_error_text(data)}")
        if kind == "message_start":
            message = data.get("message")
            if not isinstance(message, dict):
                raise ConversationError("the endpoint streamed message_start without a message")
            self.message = message
            self.usage.update(message.get("usage") or {})
            return None
        index = data.get("index")
        if kind == "content_block_start" and isinstance(index, int):
            block = data.get("content_block")
            if not isinstance(block, dict):
                raise ConversationError("the endpoint streamed a content block that is not one")
            self.blocks.setdefault(index, dict(block))  # a repeated start changes nothing
        elif kind == "content_block_delta" and isinstance(index, int):
            return self._delta(index, data.get("delta") or {})
        elif kind == "content_block_stop" and isinstance(index, int) and index in self.blocks:
            self.closed.append(index)
        elif kind == "message_delta":
            delta = data.get("delta") or {}
            self.stop_reason = delta.get("stop_reason", self.stop_reason)
            self.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
        elif kind == "message_stop":
            self.stopped = True
        return None

    def _delta(self, index: int, delta: dict[str, Any]) -> str | None:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if not isinstance(text, str):
                raise ConversationError("the endpoint streamed text that is not text")
            block["text"] = (block.get("text") or "") + text
            return text
        if kind == "input_json_delta":
            piece = delta.get("partial_json")
            if not isinstance(piece, str):
                raise ConversationError("the endpoint streamed call input that is not text")
            self.inputs.setdefault(index, []).append(piece)
        elif kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
            block["thinking"] = (block.get("thinking") or "") + delta["thinking"]
        elif kind == "signature_delta" and isinstance(delta.get("signature"), str):
            block["signature"] = (block.get("signature") or "") + delta["signature"]
        return None

    def result(self) -> Answer:
        if not self.events:
            raise ConversationError("the endpoint streamed no events (an empty or invalid stream)")
        if self.message is None or not self.stopped:
            raise ConversationError("the stream ended before the message was complete")
        content = [self._block(index) for index in sorted(self.blocks)]
        message = {**self.message, "content": content, "stop_reason": self.stop_reason}
        return decode_message({**message, "usage": self.usage or None})
