"""The chat-completions provider (`OpenAIChat`): requests, answers, plain or streamed.

Answers are read into one normalized shape (`Normalized`), then an `Answer`:

- `message`: what the model sent, as plain data: what `parse_calls` reads and hooks see;
- `entries`: what the model added to the history, as received (here: the one message);
- `text`: its answer text; `finish_reason`; `usage` (a dict or None); `id`; `model`.

The non-streaming `ChatCompletion` and a stream of `ChatCompletionChunk`s end up as the same
dict, so the loop never knows which one it got; `responses_api` reads the Responses API
into the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from ...dispatch.calling import call_hook
from ...errors import ConversationError, UsageError
from ...formats import Dialect, Format
from ...formats.base import is_json_object
from ...result import ToolCall, ToolResult
from .base import (
    Answer,
    Answers,
    Assembler,
    CallIds,
    IdRule,
    Message,
    ObjectEnd,
    Request,
    calls_since_user,
    complete_object,
    parts_text,
)
from .history import CALL_KEYS, HistoryReading, units

__all__ = ["Normalized", "OpenAIChat", "StreamAssembler", "normalize_completion", "plain"]

Normalized = dict[str, Any]


def plain(obj: Any) -> Any:
    """An SDK object as the plain data the server sent (unset fields left out)."""
    if obj is None or isinstance(obj, (str, int, float, bool, list, dict)):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise ConversationError(f"the endpoint answered an unusable {type(obj).__name__}")
    try:  # what the server sent, as it sent it: no warnings about the SDK's expectations
        return dump(exclude_unset=True, warnings=False)
    except TypeError:  # a model_dump without `warnings` (pydantic 1 style)
        return dump(exclude_unset=True)


def _clean_message(message: dict[str, Any]) -> dict[str, Any]:
    """Keep what the server sent; drop keys the server left null (except content). Content
    given as a list of parts becomes their text; any other content that is not a string is
    an unusable answer."""
    out = {k: v for k, v in message.items() if v is not None or k == "content"}
    out.setdefault("role", "assistant")
    out["content"] = _content_text(out.get("content"))
    return out


def _content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        texts = [p.get("text") for p in content if p.get("type") in ("text", "output_text")]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    raise ConversationError(
        f"the endpoint answered content that is not text ({type(content).__name__})"
    )


def normalize_completion(response: Any, ids: CallIds | None = None) -> Normalized:
    """A non-streaming chat completion (SDK object or dict) -> the plain shape; its calls
    get the ids `ids` gives their positions (None: as sent)."""
    data = plain(response)
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices[0], dict):
        raise ConversationError("the endpoint answered without any choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ConversationError("the endpoint answered a choice without a message")
    message = _clean_message(message)
    calls = message.get("tool_calls")
    if ids is not None and isinstance(calls, list):
        message["tool_calls"] = [_with_id(c, ids, n) for n, c in enumerate(calls)]
    return _normalized(
        message,
        choice.get("finish_reason"),
        data.get("usage"),
        data.get("id"),
        data.get("model"),
    )


def _normalized(
    message: dict[str, Any], finish: Any, usage: Any, rid: Any, model: Any
) -> Normalized:
    return {
        "message": message,
        "entries": [message],
        "text": message.get("content") or "",
        "finish_reason": finish,
        "usage": usage or None,
        "id": _text(rid),
        "model": _text(model),
    }


def _with_id(call: Any, ids: CallIds, slot: int) -> Any:
    """A call of `tool_calls` with the id `ids` gives its slot (anything else as it is: the
    format refuses it)."""
    if not isinstance(call, dict):
        return call
    return {**call, "id": ids.id_for(slot, call.get("id"))}


def _piece(value: Any) -> str:
    """A streamed piece of call arguments: text, or nothing."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ConversationError("the endpoint streamed call arguments that are not text")
    return value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


_SHORT = 1024  # arguments up to this long are decoded when a piece ends with "}"


class StreamAssembler:
    """Feeds on streamed chunks; `result()` is the same shape as `normalize_completion`, or
    a `ConversationError` when no chunk said why the answer ended (`finish_reason`: a
    stream cut short, e.g. by a proxy closing an idle stream, ends cleanly without it).

    Calls are read by their `index` (a server that numbers none: by their ids), in any
    interleaving; `ids` gives each call its id (None: as sent)."""

    def __init__(
        self, on_text: Callable[[str], None] | None = None, ids: CallIds | None = None
    ) -> None:
        self.on_text = on_text
        self.ids = ids
        self.parts: list[str] = []
        self.reasoning: list[str] = []  # `reasoning_content` deltas (DeepSeek, vLLM, Qwen)
        self.calls: dict[int, dict[str, Any]] = {}
        self.function_call: dict[str, str] | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.chunks = 0
        self.id: str | None = None
        self.model: str | None = None
        self.pieces: dict[int, list[str]] = {}  # each call's arguments, as they streamed
        self._touched: dict[int, None] = {}  # calls with news since `completed` last looked
        self._ends: dict[int, ObjectEnd] = {}  # where each call's arguments are (eager start)
        self._released: set[int] = set()  # the calls `completed` gave out
        self._changed = False  # the stream went on with a call after it was complete

    def feed(self, chunk: Any) -> None:
        self.chunks += 1
        try:
            texts = self._read(chunk)
        except ConversationError:
            raise
        except (AttributeError, TypeError, KeyError, ValueError) as exc:  # a chunk of junk
            raise ConversationError(
                f"the endpoint streamed a chunk of an unexpected shape ({type(exc).__name__})"
            ) from exc
        if self.on_text is not None:  # outside the try: on_text's errors are the app's own
            for text in texts:
                call_hook(self.on_text, text)

    def _read(self, chunk: Any) -> list[str]:
        data = plain(chunk)
        if not isinstance(data, dict):
            raise ConversationError("the endpoint streamed an unusable chunk")
        if data.get("usage"):
            if not isinstance(data["usage"], dict):
                raise ConversationError("the endpoint streamed a usage that is not an object")
            self.usage = data["usage"]
        self.id = self.id or _text(data.get("id"))
        self.model = self.model or _text(data.get("model"))
        texts: list[str] = []
        for choice in data.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            texts.extend(self._delta(choice.get("delta") or {}))
            if choice.get("finish_reason"):
                self.finish_reason = _text(choice["finish_reason"])
        return texts

    def _delta(self, delta: dict[str, Any]) -> list[str]:
        text = delta.get("content")
        if text is not None and not isinstance(text, str):
            raise ConversationError("the endpoint streamed content that is not text")
        if text:
            self.parts.append(text)
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            self.reasoning.append(reasoning)
        for fragment in delta.get("tool_calls") or ():
            self._tool_fragment(fragment)
        if delta.get("function_call"):
            fc = delta["function_call"]
            current = self.function_call or {"name": "", "arguments": ""}
            current["name"] = current["name"] or fc.get("name") or ""
            current["arguments"] += _piece(fc.get("arguments"))
            self.function_call = current
        return [text] if text else []

    def _tool_fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        if index is None:  # a server that numbers nothing: a new id starts a call
            last = max(self.calls, default=-1)
            new = fragment.get("id") and fragment["id"] != self.calls.get(last, {}).get("id")
            index = last + 1 if new or last < 0 else last
        function = fragment.get("function") or {}
        piece = _piece(function.get("arguments"))
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = {"id": None, "type": "function", "function": {"name": ""}}
            self.pieces[index] = []
        elif index in self._released and piece.strip():
            self._changed = True  # more than white space after it was complete
        if fragment.get("id"):
            call["id"] = call["id"] or fragment["id"]
        if function.get("name") and not call["function"]["name"]:
            call["function"]["name"] = function["name"]
        if piece:  # joined when read: a long stream of small pieces stays linear
            self.pieces[index].append(piece)
            self._touched[index] = None

    def _call(self, index: int) -> dict[str, Any]:
        """The call at `index` as read so far (its arguments joined), with its id."""
        call = self.calls[index]
        arguments = "".join(self.pieces[index])
        one = {**call, "function": {**call["function"], "arguments": arguments}}
        if self.ids is not None:
            one["id"] = self.ids.id_for(index, call["id"])
        return one

    def completed(self) -> list[dict[str, Any]]:
        """The calls whose arguments became a whole JSON object since the last time (never
        because another call began: providers interleave calls as they like), each as an
        assistant message that holds it alone. None more once the stream went on with a
        call it had completed (the whole answer decides then)."""
        if not self._touched:
            return []
        touched, self._touched = self._touched, {}
        if self._changed:
            return []
        out = []
        for index in touched:
            pieces = self.pieces[index]
            if index in self._released or not pieces[-1].rstrip().endswith("}"):
                continue  # an object closes with a "}" (no decoding before one)
            if len(pieces) > 1 and sum(map(len, pieces)) > _SHORT:  # read once, not per piece
                end = self._ends.get(index)
                if end is None:
                    end = self._ends[index] = ObjectEnd()
                if not end.read(pieces):
                    continue
            call = self._call(index)
            if complete_object(call["function"]["arguments"]):
                self._released.add(index)
                out.append({"role": "assistant", "tool_calls": [call]})
        return out

    def result(self) -> Normalized:
        if not self.chunks:
            raise ConversationError("the endpoint streamed no chunks (an empty or invalid stream)")
        if self.finish_reason is None:
            raise ConversationError(
                "the stream ended before the answer was complete (no finish_reason)"
            )
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(self.parts) if self.parts else None,
        }
        if self.reasoning:  # goes back as a plain answer's does
            message["reasoning_content"] = "".join(self.reasoning)
        if self.calls:
            message["tool_calls"] = [self._call(i) for i in sorted(self.calls)]
        if self.function_call is not None:
            message["function_call"] = self.function_call
        return _normalized(message, self.finish_reason, self.usage, self.id, self.model)


class OpenAIChat(HistoryReading):
    """Chat completions (`client.chat.completions.create`) in one of its dialects: `tools`,
    the legacy `functions`, or ChatGLM3's (see `formats`)."""

    name = "openai"
    keeps_history = False
    id_rule = IdRule("call_", 40)

    def __init__(
        self, fmt: Format, assistant_content: Literal["empty", "null", "omit"] = "empty"
    ) -> None:
        if fmt.dialect is None:  # the drivers only take formats from DIALECTS
            raise UsageError(f"the {fmt.name} format has no conversation dialect")
        self.fmt = fmt
        self.spoken: Dialect = fmt.dialect
        self.dialect = self.spoken.name
        self.assistant_content = assistant_content

    def check_choice(self, choice: str) -> None:
        self.spoken.choice(choice)

    def encode(self, request: Request) -> dict[str, Any]:
        return encode(self.spoken, request)

    def create(self, client: Any) -> Callable[..., Any]:
        return client.chat.completions.create  # type: ignore[no-any-return]

    def stream_options(self, request_options: Mapping[str, Any]) -> dict[str, Any]:
        if "stream_options" in request_options:
            return {"stream": True}
        return {"stream": True, "stream_options": {"include_usage": True}}

    def decode(self, response: Any, ids: CallIds | None = None) -> Answer:
        return Answer.of(normalize_completion(response, ids))

    def assembler(
        self, on_text: Callable[[str], None] | None, ids: CallIds | None = None
    ) -> Assembler:
        return Answers(StreamAssembler(on_text, ids))

    def calls(self, answer: Answer) -> list[ToolCall]:
        return self.fmt.parse_calls(answer.message)

    def took(self, answer: Answer, drop_calls: bool) -> tuple[list[Message], bool]:
        keys, content = self.spoken.call_keys, self.assistant_content
        return [echo(entry, drop_calls, keys, content) for entry in answer.entries], True

    def results(self, results: Sequence[ToolResult]) -> list[Message]:
        return [dict(self.fmt.observation(r)) for r in results]

    def user(self, text: str) -> Message:
        return {"role": "user", "content": text}

    def units(self, messages: Sequence[Message]) -> list[list[Message]]:
        return units(messages)

    def calls_in(self, history: Sequence[Mapping[str, Any]]) -> list[str]:
        return calls_since_user(history, self.user_text, self._calls_of)

    def _calls_of(self, entry: Mapping[str, Any]) -> list[ToolCall]:
        return self.fmt.parse_calls(dict(entry)) if entry.get("role") == "assistant" else []

    def user_text(self, entry: Mapping[str, Any]) -> str | None:
        if entry.get("role") != "user":
            return None
        return parts_text(entry.get("content"), ("text",))


def echo(
    message: Message,
    drop_calls: bool,
    call_keys: tuple[str, ...] = (),
    assistant_content: Literal["empty", "null", "omit"] = "empty",
) -> Message:
    """The assistant message as received; empty content normalised for picky servers (a
    message with calls under `call_keys` and no content gets `assistant_content`). An item
    of the Responses API (it has a `type`) goes back as received."""
    if "type" in message:
        return echo_item(message)
    out = dict(message)
    if drop_calls:  # every kind of call, not only the dialect's: none may stay unanswered
        for key in CALL_KEYS:
            out.pop(key, None)
    else:
        _repair_arguments(out)
    has_calls = any(out.get(k) for k in call_keys)
    if has_calls and not out.get("content"):
        if assistant_content == "empty":
            out["content"] = ""
        elif assistant_content == "null":
            out["content"] = None
        else:
            out.pop("content", None)
    elif out.get("content") is None:
        out["content"] = ""
    return out


def encode(dialect: Dialect, request: Request) -> dict[str, Any]:
    """The request in an OpenAI API's keys (chat completions or the Responses API)."""
    out: dict[str, Any] = {} if request.server_state else dict(dialect.client_state)
    out.update(request.options)
    out["model"] = request.model
    out[dialect.history_key] = request.history
    key = dialect.server_state_key
    if request.previous_id is not None and key is not None:
        out[key] = request.previous_id
    if request.tools:
        out[dialect.tools_key] = request.tools
        out[dialect.choice_key] = dialect.choice(request.choice)
    if request.output is not None:
        output = request.output
        asked = dialect.output_format(output.name, output.sent, output.strict)
        for name, value in asked.items():
            given = out.get(name)  # e.g. text={"verbosity": ...} keeps its other keys
            out[name] = {**given, **value} if isinstance(given, dict) else value
    return out


def echo_item(item: Message) -> Message:
    """An item of the Responses API (it has a `type`) goes back exactly as received, but a
    call whose arguments are not a JSON object goes back with `{}` (see `_repair_arguments`)."""
    if item.get("type") == "function_call" and not is_json_object(item.get("arguments")):
        return {**item, "arguments": "{}"}
    return item


def _repair_arguments(message: Message) -> None:
    """Calls whose arguments are not a JSON object (a local model cut off mid-call) are sent
    back with `{}`: servers such as llama.cpp's refuse the whole history otherwise, and the
    model would never read the observation that tells it what went wrong."""
    calls = message.get("tool_calls")
    if isinstance(calls, list) and any(not is_json_object(_arguments_of(c)) for c in calls):
        message["tool_calls"] = [
            c if is_json_object(_arguments_of(c)) else _with_arguments(c, "{}") for c in calls
        ]
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and not is_json_object(legacy.get("arguments")):
        message["function_call"] = {**legacy, "arguments": "{}"}


def _arguments_of(call: Any) -> Any:
    function = call.get("function") if isinstance(call, dict) else None
    return function.get("arguments") if isinstance(function, dict) else "{}"


def _with_arguments(call: dict[str, Any], arguments: str) -> dict[str, Any]:
    return {**call, "function": {**call["function"], "arguments": arguments}}
