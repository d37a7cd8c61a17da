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
person last wrote; `user_text`: what the person wrote in an entry; `call_ids`,
`answered_prefix`, `last_calls`): tool search and a toolset's `offer` read the history
through it (`StepContext.reader`), and so do the loop, the conversation and a resume's
checks. No module outside `providers/` and `formats/` reads a wire shape.

Every call of an answer gets an id of its own before anything runs (`CallIds`, by the
provider's `IdRule`): the model's where the endpoint takes it back and no other call of the
history has it, a new one otherwise; the history keeps that id, for the call and its answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...errors import ToolregError
from ...formats import Format
from ...jsonvalues import safe_json, strict_decoder
from ...result import ToolCall, ToolResult
from ..output import OutputSpec

__all__ = [
    "Answer",
    "Answers",
    "Assembler",
    "CallIds",
    "IdRule",
    "Message",
    "ObjectEnd",
    "Provider",
    "References",
    "Request",
    "calls_since_user",
    "complete_object",
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


class References(tuple[str, ...]):
    """The tools a client-executed tool search loads by reference, by name (a search
    result's `value` on Anthropic's Messages API: the provider writes it back as a
    `tool_result` of `tool_reference` blocks)."""


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
    renamed: bool = False  # a call's id is not the endpoint's (see `CallIds`)

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
            renamed=bool(data.get("renamed")),
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


class IdRule:
    """The call ids an endpoint takes back in a history: at most `longest` characters, all
    matching `chars` (a character class; by default printable ASCII, no space); `prefix`
    starts the ids toolreg makes."""

    __slots__ = ("longest", "prefix", "takes")

    def __init__(self, prefix: str, longest: int, chars: str = "\\x21-\\x7e") -> None:
        self.prefix, self.longest = prefix, longest
        self.takes: Callable[[str], object] = re.compile(f"[{chars}]{{1,{longest}}}").fullmatch


class CallIds:
    """The ids of one answer's calls, given before anything runs: the model's own id where
    the endpoint takes it back (`IdRule`) and no other call has it, in this answer or earlier
    in the history (`taken`, read when the first call needs it); a new one otherwise
    (`<prefix>tr<n>`). A call is named by its place in the answer (`slot`: a stream's
    index, a position) and keeps its id: a call started while the answer streams and the
    same call in the whole answer get the same one. The ids given are added to `taken`."""

    __slots__ = ("_taken", "given", "rule", "taken_of")

    def __init__(self, rule: IdRule, taken: Callable[[], set[str]] | None = None) -> None:
        self.rule = rule
        self.taken_of = taken
        self._taken: set[str] | None = None
        self.given: dict[Hashable, str] = {}

    def id_for(self, slot: Hashable, sent: Any) -> str:
        """The id of the call at `slot`, which the endpoint sent as `sent`."""
        found = self.given.get(slot)
        if found is not None:
            return found
        taken = self._taken
        if taken is None:
            taken = self._taken = set() if self.taken_of is None else self.taken_of()
        if isinstance(sent, str) and sent not in taken and self.rule.takes(sent) is not None:
            made = sent
        else:
            n = len(taken) + 1
            while (made := f"{self.rule.prefix}tr{n}") in taken:
                n += 1
        taken.add(made)
        self.given[slot] = made
        return made


def complete_object(arguments: Any) -> bool:
    """Whether streamed call arguments are complete: text that is a whole JSON object (a
    cheap look at its last character first: most pieces end elsewhere)."""
    if not isinstance(arguments, str):
        return False
    end = arguments[-1:]
    if end != "}" and not (end.isspace() and arguments.rstrip().endswith("}")):
        return False
    try:
        return isinstance(strict_decoder.decode(arguments), dict)
    except (ValueError, RecursionError):
        return False


_STRUCTURE = re.compile(r'[{}\[\]"\\]')


class ObjectEnd:
    """Where streamed JSON text stands, read piece by piece, each character once: whether it
    is one object closed (`read` is True: the text may be whole; `complete_object` decides),
    still open, or never one (text before its `{`, or after its `}`). Only brackets, quotes
    and backslashes are looked at (a regex skips the rest), so a stream of tiny pieces costs
    what its length costs, never a decoding per piece."""

    __slots__ = ("depth", "offset", "read_pieces", "skip", "state", "string")

    def __init__(self) -> None:
        self.depth = 0
        self.offset = 0  # characters read so far
        self.read_pieces = 0
        self.skip = -1  # the offset of a character a backslash escapes
        self.state = 0  # 0: not begun, 1: in the object, 2: closed, 3: never an object
        self.string = False

    def read(self, pieces: list[str]) -> bool:
        """Read the pieces not read yet; whether the text is one object, closed."""
        for piece in pieces[self.read_pieces :]:
            self._piece(piece)
        self.read_pieces = len(pieces)
        return self.state == 2

    def _piece(self, piece: str) -> None:
        start, self.offset = self.offset, self.offset + len(piece)
        if self.state >= 2:
            if self.state == 2 and not piece.isspace() and piece:
                self.state = 3  # more than white space after the object
            return
        at = 0
        if self.state == 0:
            body = piece.lstrip()
            if not body:
                return
            if body[0] != "{":
                self.state = 3
                return
            self.state, at = 1, len(piece) - len(body)
        for found in _STRUCTURE.finditer(piece, at):
            where = start + found.start()
            if where == self.skip:
                continue
            char = found.group()
            if self.string:
                if char == "\\":
                    self.skip = where + 1
                elif char == '"':
                    self.string = False
            elif char == '"':
                self.string = True
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    rest = piece[found.end() :]
                    self.state = 2 if not rest or rest.isspace() else 3
                    return


class Assembler(Protocol):
    """Reads a stream piece by piece; `result()` is the answer, or a `ConversationError` for
    a stream that ended before its terminal event; `completed()` the calls complete so far
    and not given out yet (eager start), each alone in a message that the format's
    `parse_calls` reads: a call is complete when the provider says its arguments are done
    and they are a whole JSON object (`complete_object`); never because another call
    began. Both give each call the id its `CallIds` gives its slot."""

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
    id_rule: IdRule  # the call ids the endpoint takes back

    def check_choice(self, choice: str) -> None:
        """Raise `UsageError` for a tool choice the API cannot express."""

    def encode(self, request: Request) -> dict[str, Any]:
        """The keyword arguments of the SDK's create method."""

    def create(self, client: Any) -> Callable[..., Any]:
        """The SDK's create method of `client`."""

    def stream_options(self, request_options: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments that make the call a stream."""

    def decode(self, response: Any, ids: CallIds | None = None) -> Answer:
        """A plain (not streamed) answer; its calls get the ids `ids` gives them (None:
        as sent)."""

    def assembler(
        self, on_text: Callable[[str], None] | None, ids: CallIds | None = None
    ) -> Assembler:
        """A reader of a streamed answer; `on_text` gets each piece of text; its calls get
        the ids `ids` gives them."""

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

    def call_ids(self, history: Sequence[Message]) -> set[str]:
        """The ids of every call in `history` (what a new call's id must not be)."""

    def answered_prefix(self, history: Sequence[Message]) -> int:
        """The length of the longest prefix of `history` in which every call is answered."""

    def last_calls(self, history: Sequence[Message]) -> list[ToolCall] | None:
        """The calls of the model's last answer in `history` (the entries after the last
        user message or tool answer); None when those entries are not the model's; a
        `ConversationError` when its calls are malformed."""
