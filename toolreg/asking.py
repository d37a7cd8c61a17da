"""A tool that asks the user: `ctx.ask(question, schema)` / `await ctx.aask(...)`.

```python
NIGHT = {"type": "object", "properties": {"night": {"type": "string", "format": "date"}}}

@register_tool
def book(room: str, ctx: ToolContext) -> str:
    answer = ctx.ask("Which night?", NIGHT)
    if not answer.accepted:
        return "Not booked: the user did not say which night."
    return f"Booked {room} for {answer.data['night']}."
```

The question's schema is a form (MCP elicitation's form mode): a flat object whose
properties are primitives (string, number, integer, boolean, a single-select enum, a
multi-select array of enum strings). It is given as such a JSON Schema dict, or as a
TypedDict / dataclass of such fields, which toolreg's schema builder turns into one (an
optional `X | None` field becomes a property that is not required). Anything nested is a
usage error at the call. The answer is checked against the schema with toolreg's validator,
like a model's arguments: a tool never sees an answer that does not fit
(`InvalidAnswerError`).

Who asks is the call's channel (`AskChannel`), set by whoever runs the call: an MCP server
asks its client (`elicitation/create`), a conversation pauses its turn. Outside any channel
(a plain `dispatch_tool`) `ask` raises `CannotAskError`.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from .definition.conversion import converter_for
from .definition.schema import SchemaBuilder
from .errors import CannotAskError, InvalidAnswerError, ToolDefinitionError, UsageError
from .jsonvalues import copy_json
from .params import Answer, ToolContext
from .types import ConversionError, Converter, is_typeddict
from .validation import Validator

__all__ = [
    "MAX_QUESTION_CHARS",
    "AskChannel",
    "Asking",
    "NoChannel",
    "Question",
    "ask_channel",
    "asking_for",
    "form_question",
]

MAX_QUESTION_CHARS = 10_000
"""The longest question `ask` takes (characters)."""
_MAX_PROPERTIES = 64
_MAX_SCHEMA_CHARS = 64_000
_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_TOP_KEYS = frozenset(
    {"type", "properties", "required", "title", "description", "additionalProperties", "$schema"}
)
_USAGE = "ctx.ask(question, schema)"


@dataclass(frozen=True, slots=True)
class Question:
    """One question a tool asks: the `message`, the form's `schema` (what is sent, a flat
    JSON Schema object) and how an answer is checked and converted."""

    message: str
    schema: dict[str, Any]
    validator: Validator = field(repr=False, compare=False)
    converter: Converter | None = field(default=None, repr=False, compare=False)

    def answer(self, action: object, content: object) -> Answer:
        """The `Answer` for what the user sent: a known `action`; when "accept", `content`
        checked against the schema (an `InvalidAnswerError` when it does not fit)."""
        if action not in ("accept", "decline", "cancel"):
            raise InvalidAnswerError(
                f"The answer to the question has no valid action ({str(action)[:40]!r}): "
                "it must be accept, decline or cancel."
            )
        if action != "accept":
            return Answer(action)
        data = self._without_nulls(content if content is not None else {})
        problems = self.validator.validate(data)[:20]
        if problems:
            shown = [(p.location() if p.key is None else str(p.key), p.message) for p in problems]
            text = "; ".join(f"{where}: {message}" for where, message in shown)
            raise InvalidAnswerError(
                f"The user's answer does not fit the question's form: {text}", problems=shown
            )
        assert isinstance(data, dict)  # the schema is an object
        value: Any = data
        if self.converter is not None:
            try:
                value = self.converter(copy_json(data))
            except ConversionError as exc:
                where = ".".join(map(str, exc.path)) or "(root)"
                raise InvalidAnswerError(
                    f"The user's answer does not fit the question's form: {where}: {exc.message}",
                    problems=[(where, exc.message)],
                ) from None
        return Answer("accept", data, value)

    def _without_nulls(self, content: object) -> object:
        """A form's unanswered optional fields may come as `null`: dropped."""
        if not isinstance(content, Mapping):
            return content
        required = set(self.schema.get("required", ()))
        return {k: v for k, v in content.items() if v is not None or k in required}


def form_question(message: object, schema: object) -> Question:
    """The `Question` for `ctx.ask(message, schema)`, or a `UsageError` that says what to
    fix (a nested schema, a type that is not a form)."""
    if not isinstance(message, str) or not message.strip():
        raise UsageError(f"{_USAGE}: question must be a non-empty str (what the user is asked)")
    if len(message) > MAX_QUESTION_CHARS:
        raise UsageError(
            f"{_USAGE}: the question has {len(message)} characters; at most "
            f"{MAX_QUESTION_CHARS} are sent"
        )
    converter = None
    if isinstance(schema, Mapping):
        given = _plain(schema)
    elif isinstance(schema, type) and (is_typeddict(schema) or dataclasses.is_dataclass(schema)):
        given, converter = _from_type(schema)
    else:
        raise UsageError(
            f"{_USAGE}: schema must be a flat JSON Schema object (a dict) or a TypedDict or "
            f"dataclass of str, int, float, bool and Literal fields, not {_named(schema)}"
        )
    sent = _form(given)
    try:
        validator = Validator(given)
    except ValueError as exc:
        raise UsageError(f"{_USAGE}: the schema is not valid JSON Schema ({exc})") from None
    return Question(message, sent, validator, converter)


def _named(value: object) -> str:
    return getattr(value, "__name__", None) or type(value).__name__


def _plain(schema: Mapping[str, Any]) -> dict[str, Any]:
    try:
        given = copy_json(dict(schema))
    except (TypeError, ValueError, RecursionError):
        raise UsageError(
            f"{_USAGE}: the schema must be plain JSON (dicts, lists, str, numbers)"
        ) from None
    if not isinstance(given, dict) or len(repr(given)) > _MAX_SCHEMA_CHARS:
        raise UsageError(f"{_USAGE}: the schema is over {_MAX_SCHEMA_CHARS} characters")
    return given


def _from_type(tp: type) -> tuple[dict[str, Any], Converter | None]:
    """A TypedDict or dataclass as a form schema (optional `X | None` fields flattened to
    `X`, not required), and the converter of an answer to it."""
    builder = SchemaBuilder(f"ctx.ask schema {tp.__name__}")
    try:
        root = builder.build(tp)
        converter = converter_for(tp, f"ctx.ask schema {tp.__name__}")
    except ToolDefinitionError as exc:
        raise UsageError(f"{_USAGE}: {tp.__name__} cannot be a form: {exc}") from None
    ref = root.get("$ref")
    schema = dict(builder.defs.get(ref.rsplit("/", 1)[-1], {})) if isinstance(ref, str) else root
    if len(builder.defs) > 1 or any(
        "$ref" in str(v) for v in schema.get("properties", {}).values()
    ):
        nested = [name for name in builder.defs if name != tp.__name__]
        raise UsageError(
            f"{_USAGE}: {tp.__name__} is not a flat form: it nests "
            f"{', '.join(nested) or 'another type'} (an elicitation form holds only "
            "str, int, float, bool, Literal and list[Literal] fields)"
        )
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        properties[name] = _flatten_optional(prop)
    schema["properties"] = properties
    return schema, converter


def _flatten_optional(prop: dict[str, Any]) -> dict[str, Any]:
    """`X | None` (anyOf X, null) as X: a form leaves an optional field out instead."""
    options = prop.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        (inner,) = [o for o in options if o != {"type": "null"}]
        rest = {k: v for k, v in prop.items() if k != "anyOf"}
        if rest.get("default", 0) is None:
            del rest["default"]
        return {**inner, **rest}
    return prop


def _form(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as sent (`requestedSchema`): checked flat, without `additionalProperties`."""
    if schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        raise UsageError(
            f'{_USAGE}: the schema must be {{"type": "object", "properties": {{...}}}} '
            "(an elicitation form), not another type"
        )
    extra = sorted(set(schema) - _TOP_KEYS)
    if extra:
        raise UsageError(
            f"{_USAGE}: the form schema may not use {', '.join(map(repr, extra))} (a flat form "
            "has type, properties, required, title and description only)"
        )
    properties: dict[str, Any] = schema["properties"]
    if len(properties) > _MAX_PROPERTIES:
        raise UsageError(f"{_USAGE}: the form has {len(properties)} fields; at most 64")
    for name, prop in properties.items():
        problem = _not_primitive(prop)
        if problem:
            raise UsageError(
                f"{_USAGE}: the field {name!r} is {problem}; an elicitation form is flat: "
                "each field a string, number, integer, boolean, an enum of strings, or an "
                "array of enum strings (multi-select). Ask for nested data in several "
                "questions, or as a string."
            )
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        raise UsageError(f"{_USAGE}: the schema's required must list names of its properties")
    return {k: v for k, v in schema.items() if k not in ("additionalProperties", "$schema")}


def _not_primitive(prop: object) -> str | None:
    """What makes a property not a form field (None: it is one)."""
    if not isinstance(prop, dict):
        return "not a schema object"
    kind = prop.get("type")
    if "$ref" in prop or kind == "object":
        return "a nested object"
    if kind in _PRIMITIVES:
        return None
    if kind == "array":
        items = prop.get("items")
        if isinstance(items, dict) and (
            (items.get("type") == "string" and isinstance(items.get("enum"), list))
            or isinstance(items.get("anyOf"), list)
        ):
            return None
        return "an array other than a multi-select of enum strings"
    if kind is None and ("anyOf" in prop or "oneOf" in prop):
        return "a union (give a single type; an optional field is one not required)"
    return f"of type {str(kind)[:40]!r}"


class AskChannel(Protocol):
    """Who answers a call's questions: `ask` from a sync tool's thread, `aask` from an
    async tool; each returns the user's raw `(action, content)`, which `Asking` checks.
    Raise `CannotAskError` when the user cannot be reached."""

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]: ...

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]: ...


class Asking:
    """`ToolContext.asker` over a channel: builds the question, asks, checks the answer."""

    __slots__ = ("channel",)

    def __init__(self, channel: AskChannel) -> None:
        self.channel = channel

    def ask(self, ctx: ToolContext[Any], question: str, schema: Any) -> Answer:
        asked = form_question(question, schema)
        if _in_event_loop():
            raise UsageError(
                f"tool '{ctx.tool_name}': ctx.ask(...) blocks until the user answers; an async "
                "tool awaits it instead: answer = await ctx.aask(question, schema)"
            )
        action, content = self.channel.ask(ctx, asked)
        return asked.answer(action, content)

    async def aask(self, ctx: ToolContext[Any], question: str, schema: Any) -> Answer:
        asked = form_question(question, schema)
        action, content = await self.channel.aask(ctx, asked)
        return asked.answer(action, content)


def _in_event_loop() -> bool:
    """Whether this thread runs an event loop (asyncio is not imported for the question)."""
    aio = sys.modules.get("asyncio")
    return aio is not None and aio._get_running_loop() is not None


class NoChannel:
    """The channel of a call nobody can be asked in: `CannotAskError` (with `why`)."""

    __slots__ = ("why",)

    def __init__(self, why: str | None = None) -> None:
        self.why = why

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        raise CannotAskError(ctx.tool_name or "(unnamed)", self.why)

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        raise CannotAskError(ctx.tool_name or "(unnamed)", self.why)


NOT_ASKING = Asking(NoChannel())

ask_channel: ContextVar[AskChannel | None] = ContextVar("toolreg_ask_channel", default=None)
"""The channel of the calls dispatched in this context (a conversation sets it around each
call it runs); None: a call's `ToolContext` gets none unless its runner gave one."""


def asking_for() -> Asking:
    """The asker of a call dispatch runs without one of its own: over the context's
    channel, else one that raises `CannotAskError`."""
    channel = ask_channel.get()
    return NOT_ASKING if channel is None else Asking(channel)
