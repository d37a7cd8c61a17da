"""The provider seam: what the loop asks of a wire API, and the neutral types it gets back.

A `Provider` is the only place that knows a wire format. The loop hands it a `Request`
(the model, the history to send, the tools and the choice, the output type) and gets the
keyword arguments of the SDK's create method back (`encode`); the driver performs or
streams the call (`create`, `stream_options`) and the provider reads what came back into
an `Answer` (`decode`, or `assembler` piece by piece). The provider also says what the
answer adds to the history (`took`), how tool results are written back (`results`: one
entry per result, or all of them in one message), what a user message looks like (`user`)
and how the history splits into units that trimming keeps or drops whole (`units`). It also
reads a history for what needs no wire format (`calls_in`: the tools called since the
person last wrote; `user_text`: what the person wrote in an entry): tool search and a
toolset's `offer` read the history through it (`StepContext.reader`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import ToolregError
from ...formats import Format
from ...jsonvalues import safe_json
from ...result import ToolCall, ToolResult
from ..output import OutputSpec

__all__ = [
    "Answer",
    "Answers",
    "Assembler",
    "Message",
    "Provider",
    "Request",
    "calls_since_user",
    "parts_text",
]

Message = dict[str, Any]

MAX_PARTS = 100  # content parts of one message read for its text


def parts_text(content: Any, kinds: tuple[str, ...]) -> str | None:
    """The text of a message's content: a str as it is, or the `text` of its parts whose
    `type` is one of `kinds` (the first `MAX_PARTS`), joined by spaces; None for anything
    else."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        p.get("text") for p in content[:MAX_PARTS] if isinstance(p, dict) and p.get("type") in kinds
    ]
    return " ".join(t for t in texts if isinstance(t, str))


def calls_since_user(
    history: Sequence[Any],  # entries are data: a restored state's, the application's
    user_text: Callable[[Mapping[str, Any]], str | None],
    parse: Callable[[Mapping[str, Any]], list[ToolCall]],
) -> list[str]:
    """The names of the calls `parse` reads from the entries after the last one the person
    wrote (`user_text` not None), in the history's order; an entry `parse` cannot read
    has none."""
    since = len(history)
    while since > 0:
        entry = history[since - 1]
        if isinstance(entry, Mapping) and user_text(entry) is not None:
            break
        since -= 1
    names: list[str] = []
    for entry in history[since:]:
        if not isinstance(entry, Mapping):
            continue
        try:
            calls = parse(entry)
        except ToolregError:  # not a message of calls
            continue
        names.extend(c.name for c in calls if isinstance(c.name, str))
    return names


@dataclass(frozen=True, slots=True)
class Answer:
    """One model answer, decoded: `message` is the answer as plain data (what the hooks see
    and the calls are read from), `entries` what it adds to the history as received,
    `text` its answer text, `finish_reason` why it ended ("stop", "length",
    "content_filter", "tool_calls" or the provider's own word), `usage` its token counts
    (a dict in the provider's own keys, or None)."""

    message: Message
    entries: tuple[Message, ...]
    text: str
    finish_reason: str | None = None
    usage: Mapping[str, Any] | None = None
    id: str | None = None
    model: str | None = None

    @classmethod
    def of(cls, normalized: Mapping[str, Any]) -> Answer:
        """From the normalized dict the OpenAI readers build (see `openai_chat`), made
        safe JSON (no lone surrogates)."""
        data = safe_json(dict(normalized))
        return cls(
            message=data["message"],
            entries=tuple(data["entries"]),
            text=data["text"],
            finish_reason=data.get("finish_reason"),
            usage=data.get("usage"),
            id=data.get("id"),
            model=data.get("model"),
        )

    def traced(self) -> dict[str, Any]:
        """What the observer reads (see `observe.ModelCallTrace.end`)."""
        return {
            "id": self.id,
            "model": self.model,
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class Request:
    """What the loop wants to send: `history` is what to send of it (trimmed already, or
    only what a server that keeps the history lacks, continuing `previous_id`); `tools`
    the definitions to offer (none: offer none) with `choice` ("auto", "none",
    "required" or a tool name)."""

    model: str
    history: list[Message]
    options: Mapping[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    choice: str = "auto"
    output: OutputSpec | None = None
    previous_id: str | None = None
    server_state: bool = False


class Assembler(Protocol):
    """Reads a stream piece by piece; `result()` is the answer; `completed()` the calls
    complete so far and not given out yet (eager start), each alone in a message that the
    format's `parse_calls` reads (none, for a provider that cannot tell)."""

    def feed(self, chunk: Any) -> None: ...

    def completed(self) -> list[dict[str, Any]]: ...

    def result(self) -> Answer: ...


class Answers:
    """An assembler of the normalized dicts the OpenAI readers build, giving `Answer`s."""

    __slots__ = ("inner",)

    def __init__(self, inner: Any) -> None:
        self.inner = inner  # a StreamAssembler or a ResponseStreamAssembler

    def feed(self, chunk: Any) -> None:
        self.inner.feed(chunk)

    def completed(self) -> list[dict[str, Any]]:
        done: list[dict[str, Any]] = self.inner.completed()
        return done

    def result(self) -> Answer:
        return Answer.of(self.inner.result())


class Provider(Protocol):
    """One wire API (see the module docstring). `name` is its `gen_ai.provider.name`;
    `fmt` the format of its tool definitions; `dialect` the name a saved state keeps."""

    name: str
    dialect: str
    fmt: Format
    keeps_history: bool  # the endpoint can keep the history (`previous_id`)

    def check_choice(self, choice: str) -> None:
        """Raise `UsageError` for a tool choice the API cannot express."""

    def encode(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of the SDK's create method."""

    def create(self, client: Any) -> Callable[..., Any]:
        """The SDK's create method of `client`."""

    def stream_options(self, request_options: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments that make the call a stream."""

    def decode(self, response: Any) -> Answer:
        """A plain (not streamed) answer."""

    def assembler(self, on_text: Callable[[str], None] | None) -> Assembler:
        """A reader of a streamed answer; `on_text` gets each piece of text."""

    def calls(self, answer: Answer) -> list[ToolCall]:
        """The calls the answer makes, in order."""

    def took(self, answer: Answer, drop_calls: bool) -> tuple[list[Message], bool]:
        """The entries the answer adds to the history (without its calls when
        `drop_calls`), and whether they are all it said (a server that keeps the history
        then holds the same)."""

    def results(self, results: Sequence[ToolResult]) -> list[Message]:
        """The history entries that answer a round's calls with `results`."""

    def user(self, text: str) -> Message:
        """A user message."""

    def units(self, messages: Sequence[Message]) -> list[list[Message]]:
        """The history in the units trimming keeps or drops whole (a call with its
        answers)."""

    def calls_in(self, history: Sequence[Mapping[str, Any]]) -> list[str]:
        """The names of the tools the model called since the last message the person
        wrote (not a message of tool results), in order."""

    def user_text(self, entry: Mapping[str, Any]) -> str | None:
        """The text of `entry` if it is a message the person wrote; None for any other
        entry (an assistant's, tool results, a call)."""
