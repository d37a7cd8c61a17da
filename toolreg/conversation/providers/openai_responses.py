"""The Responses API provider (`OpenAIResponses`); its answers, plain or streamed, are read
into the normalized shape of `openai_chat`, then an `Answer`.

`message` is the response as plain data (the format's `parse_calls` reads its `output`);
`entries` are its output items exactly as received (messages, function calls, reasoning
and any other item), to be passed back unchanged; `text` joins the `output_text` parts of
its messages; an incomplete response finishes with "length" or "content_filter".

A stream is read from its events: `response.output_text.delta` (each piece goes to
`on_text`), `response.function_call_arguments.delta` and the output item events build the
items; the final `response.completed` or `response.incomplete` event completes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...dispatch.calling import call_hook
from ...errors import ConversationError, UsageError
from ...formats import Dialect, Format
from ...result import ToolCall, ToolResult
from .base import (
    Answer,
    Answers,
    Assembler,
    CallIds,
    IdRule,
    Message,
    Request,
    calls_since_user,
    complete_object,
    parts_text,
)
from .history import HistoryReading, answer_tail, client_call, units
from .openai_chat import Normalized, echo, encode, plain

__all__ = ["OpenAIResponses", "ResponseStreamAssembler", "normalize_response"]

_FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}
_DONE_EVENTS = ("response.completed", "response.incomplete", "response.failed")
_MAX_MESSAGE = 300


def normalize_response(
    response: Any, ids: CallIds | None = None, renamed: bool = False
) -> Normalized:
    """A Responses API `response` (SDK object or dict) -> the plain shape; its calls get
    the ids `ids` gives their positions in `output` (None: as sent; `renamed`: some were
    given other ids already)."""
    data = plain(response)
    if not isinstance(data, dict):
        raise ConversationError("the endpoint answered something that is not a response")
    status = data.get("status")
    if status == "failed" or data.get("error"):
        raise ConversationError(f"the endpoint's response failed: {_error_text(data.get('error'))}")
    if status not in (None, "completed", "incomplete"):
        raise ConversationError(
            f"the endpoint answered a response that is not finished (status {_short(status)})"
        )
    items = data.get("output")
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise ConversationError("the endpoint answered a response without a list of output items")
    if ids is not None and any(client_call(item) for item in items):
        named = [with_id(item, ids, n) for n, item in enumerate(items)]
        renamed = renamed or named != items
        items = named
        data = {**data, "output": items}
    finish = "stop"
    if status == "incomplete":
        details = data.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        finish = _FINISH.get(reason, "length") if isinstance(reason, str) else "length"
    rid, model = data.get("id"), data.get("model")
    return {
        "message": data,
        "entries": items,
        "text": "".join(_texts(items)),
        "finish_reason": finish,
        "usage": data.get("usage") or None,
        "id": rid if isinstance(rid, str) else None,
        "model": model if isinstance(model, str) else None,
        "renamed": renamed,
    }


def with_id(item: dict[str, Any], ids: CallIds, slot: int) -> dict[str, Any]:
    """An output item; a call the client answers with the `call_id` `ids` gives its slot."""
    if not client_call(item):
        return item
    return {**item, "call_id": ids.id_for(slot, item.get("call_id"))}


def _texts(items: list[dict[str, Any]]) -> list[str]:
    return [
        part["text"]
        for item in items
        if item.get("type") == "message" and isinstance(item.get("content"), list)
        for part in item["content"]
        if isinstance(part, dict)
        and part.get("type") == "output_text"
        and isinstance(part.get("text"), str)
    ]


def _short(value: Any) -> str:
    return repr(value)[:40]


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code")
        text = message if isinstance(message, str) else "no message"
        return (f"{code}: {text}" if isinstance(code, str) else text)[:_MAX_MESSAGE]
    return "no message"


class ResponseStreamAssembler:
    """Feeds on streamed events; `result()` is the same shape as `normalize_response`, or a
    `ConversationError` for a stream that ended before its final event.

    The final event normally carries every item; when it does not, the items are built
    from the item events and the deltas (an item whose `output_item.done` came is whole).
    Items are read by `output_index` (by `item_id` in an event without one), in any
    interleaving; `ids` gives each call its `call_id` (None: as sent).
    """

    def __init__(
        self, on_text: Callable[[str], None] | None = None, ids: CallIds | None = None
    ) -> None:
        self.on_text = on_text
        self.ids = ids
        self.items: dict[int, dict[str, Any]] = {}
        self.where: dict[str, int] = {}  # item id -> its output index
        self.done: set[int] = set()
        self._released: set[int] = set()
        self.texts: dict[int, dict[int, list[str]]] = {}
        self.arguments: dict[int, list[str]] = {}
        self.response: dict[str, Any] | None = None
        self.events = 0

    def feed(self, event: Any) -> None:
        self.events += 1
        data = plain(event)
        if not isinstance(data, dict):
            raise ConversationError("the endpoint streamed an unusable event")
        kind = data.get("type")
        if kind == "error":
            raise ConversationError(f"the endpoint streamed an error: {_error_text(data)}")
        if kind in _DONE_EVENTS:
            response = data.get("response")
            if not isinstance(response, dict):
                raise ConversationError(f"the endpoint streamed {kind} without a response")
            self.response = response
            return
        index, delta = data.get("output_index"), data.get("delta")
        if not isinstance(index, int):
            index = self.where.get(data.get("item_id"))  # type: ignore[arg-type]
            if index is None:
                return
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = data.get("item")
            if isinstance(item, dict) and index not in self.done:  # a done item stays done
                self.items[index] = item
                if isinstance(item.get("id"), str):
                    self.where[item["id"]] = index
                if kind == "response.output_item.done":
                    self.done.add(index)
        elif kind == "response.output_text.delta" and isinstance(delta, str) and delta:
            if self.on_text is not None:
                call_hook(self.on_text, delta)
            part = data.get("content_index")
            part = part if isinstance(part, int) else 0
            self.texts.setdefault(index, {}).setdefault(part, []).append(delta)
        elif kind == "response.function_call_arguments.delta" and isinstance(delta, str):
            self.arguments.setdefault(index, []).append(delta)

    def _item(self, index: int) -> dict[str, Any]:
        item = dict(self.items.get(index) or {})
        if index in self.done:
            return item
        if index in self.arguments:
            item.setdefault("type", "function_call")
            item["arguments"] = "".join(self.arguments[index])
        if index in self.texts:
            item.setdefault("type", "message")
            item.setdefault("role", "assistant")
            texts = self.texts[index]
            item["content"] = [
                {"type": "output_text", "text": "".join(texts[part]), "annotations": []}
                for part in sorted(texts)
            ]
        return item

    def completed(self) -> list[dict[str, Any]]:
        """The function calls whose item is done since the last time and whose arguments
        are a whole JSON object, in order, each as a response whose `output` holds it
        alone."""
        fresh = self.done - self._released
        if not fresh:
            return []
        self._released.update(fresh)
        ready = [
            i
            for i in sorted(fresh)
            if self.items[i].get("type") == "function_call"
            and complete_object(self.items[i].get("arguments"))
        ]
        ids = self.ids
        return [
            {"output": [dict(self.items[i]) if ids is None else with_id(self.items[i], ids, i)]}
            for i in ready
        ]

    def result(self) -> Normalized:
        if not self.events:
            raise ConversationError("the endpoint streamed no events (an empty or invalid stream)")
        if self.response is None:
            raise ConversationError("the stream ended before the response was complete")
        response = self.response
        ids = self.ids
        built = sorted({*self.items, *self.texts, *self.arguments})
        if not response.get("output") and built:  # a final event without the items
            items = [self._item(i) for i in built]
            if ids is None:
                return normalize_response({**response, "output": items})
            named = [with_id(item, ids, i) for i, item in zip(built, items)]  # as `completed`
            return normalize_response({**response, "output": named}, renamed=named != items)
        return normalize_response(response, ids)


class OpenAIResponses(HistoryReading):
    """The Responses API (`client.responses.create`): the history is input items, sent
    with `store: false`, or kept by the server (`previous_response_id`)."""

    name = "openai"
    keeps_history = True
    id_rule = IdRule("call_", 64)

    def __init__(self, fmt: Format) -> None:
        if fmt.dialect is None:
            raise UsageError(f"the {fmt.name} format has no conversation dialect")
        self.fmt = fmt
        self.spoken: Dialect = fmt.dialect
        self.dialect = self.spoken.name

    def check_choice(self, choice: str) -> None:
        self.spoken.choice(choice)

    def encode(self, request: Request) -> dict[str, Any]:
        return encode(self.spoken, request)

    def create(self, client: Any) -> Callable[..., Any]:
        return client.responses.create  # type: ignore[no-any-return]

    def stream_options(self, request_options: Mapping[str, Any]) -> dict[str, Any]:
        return {"stream": True}  # a stream reports usage unasked

    def decode(self, response: Any, ids: CallIds | None = None) -> Answer:
        return Answer.of(normalize_response(response, ids))

    def assembler(
        self, on_text: Callable[[str], None] | None, ids: CallIds | None = None
    ) -> Assembler:
        return Answers(ResponseStreamAssembler(on_text, ids))

    def calls(self, answer: Answer) -> list[ToolCall]:
        return self.fmt.parse_calls(answer.message)

    def took(self, answer: Answer, drop_calls: bool) -> tuple[list[Message], bool]:
        entries = answer.entries
        if drop_calls and any(client_call(e) for e in entries):
            # a final answer keeps no call items, nor the reasoning that led to them
            kept = [e for e in entries if not client_call(e) and e.get("type") != "reasoning"]
        else:
            kept = list(entries)
        # a server that keeps the history holds the ids it sent: with one renamed, the next
        # request sends the whole history instead
        whole = len(kept) == len(entries) and not answer.renamed
        return [echo(e, drop_calls) for e in kept], whole

    def results(self, results: Sequence[ToolResult]) -> list[Message]:
        return [dict(self.fmt.observation(r)) for r in results]

    def user(self, text: str) -> Message:
        return {"role": "user", "content": text}

    def units(self, messages: Sequence[Message]) -> list[list[Message]]:
        return units(messages)

    def calls_in(self, history: Sequence[Mapping[str, Any]]) -> list[str]:
        return calls_since_user(history, self.user_text, self._calls_of)

    def _calls_of(self, entry: Mapping[str, Any]) -> list[ToolCall]:
        return self.fmt.parse_calls([dict(entry)])  # one input item: a call, or none

    def user_text(self, entry: Mapping[str, Any]) -> str | None:
        if entry.get("role") != "user" or entry.get("type", "message") != "message":
            return None
        return parts_text(entry.get("content"), ("input_text", "text"))

    def last_calls(self, history: Sequence[Message]) -> list[ToolCall] | None:
        tail = answer_tail(history)
        return None if tail is None else self.fmt.parse_calls({"output": tail})
