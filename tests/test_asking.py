"""`ToolContext.ask` / `aask`: the question's form, the answer's check, and a call that
nobody can be asked in (plain dispatch)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Literal, TypedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import (
    Answer,
    CannotAskError,
    InvalidAnswerError,
    ToolContext,
    ToolRegistry,
    UsageError,
)
from toolreg.asking import Asking, Question, ask_channel, form_question

NIGHT = {
    "type": "object",
    "properties": {
        "night": {"type": "string", "format": "date"},
        "guests": {"type": "integer", "minimum": 1, "maximum": 8},
    },
    "required": ["night"],
}


class Scripted:
    """A channel that answers every question with `(action, content)` and keeps them."""

    def __init__(self, action: str = "accept", content: Any = None) -> None:
        self.action = action
        self.content = content
        self.asked: list[tuple[str, Question]] = []

    def ask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        self.asked.append((ctx.tool_name, question))
        return self.action, self.content

    async def aask(self, ctx: ToolContext[Any], question: Question) -> tuple[str, Any]:
        return self.ask(ctx, question)


def asking_ctx(channel: Scripted) -> ToolContext[None]:
    return ToolContext(None, "book", asker=Asking(channel))


def booking_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.register_tool
    def book(room: str, ctx: ToolContext[None]) -> str:
        """Book a room."""
        answer = ctx.ask("Which night?", NIGHT)
        if not answer.accepted:
            return f"not booked ({answer.action})"
        assert answer.data is not None
        return f"booked {room} for {answer.data['night']}"

    @registry.register_tool
    async def abook(room: str, ctx: ToolContext[None]) -> str:
        """Book a room, asynchronously."""
        answer = await ctx.aask("Which night?", NIGHT)
        return f"{answer.action}: {answer.data}"

    return registry


# -- outside any channel ----------------------------------------------------------------


def test_a_plain_dispatch_cannot_ask_and_the_model_is_told_so() -> None:
    result = booking_registry().dispatch_tool("book", {"room": "12"}, context=None)
    assert not result.ok
    assert result.content.startswith("Tool 'book' needs to ask the user, which this caller cannot.")
    assert isinstance(result.error.__cause__, CannotAskError)


def test_an_async_tool_cannot_ask_in_a_plain_dispatch_either() -> None:
    result = asyncio.run(booking_registry().adispatch_tool("abook", {"room": "1"}, context=None))
    assert "needs to ask the user, which this caller cannot" in result.content


def test_a_tool_may_catch_the_error_and_carry_on() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def greet(ctx: ToolContext[None]) -> str:
        """Greet."""
        try:
            name = ctx.ask(
                "Your name?", {"type": "object", "properties": {"n": {"type": "string"}}}
            )
        except CannotAskError:
            return "hello, whoever you are"
        return f"hello {name.data}"

    assert registry.dispatch_tool("greet", {}, context=None).content == "hello, whoever you are"


def test_a_context_made_by_hand_without_an_asker_cannot_ask() -> None:
    with pytest.raises(CannotAskError, match="needs to ask the user"):
        ToolContext(None, "t").ask("?", NIGHT)


# -- through a channel -------------------------------------------------------------------


def test_an_accepted_answer_is_checked_and_given() -> None:
    channel = Scripted("accept", {"night": "2026-12-24", "guests": 2})
    answer = asking_ctx(channel).ask("Which night?", NIGHT)
    assert answer == Answer("accept", {"night": "2026-12-24", "guests": 2})
    assert answer.accepted
    assert answer.value == answer.data
    ((name, question),) = channel.asked
    assert name == "book"
    assert question.message == "Which night?"
    assert question.schema == NIGHT


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_carry_no_data(action: str) -> None:
    answer = asking_ctx(Scripted(action, {"night": "x"})).ask("Which night?", NIGHT)
    assert answer == Answer(action)  # type: ignore[arg-type]
    assert not answer.accepted
    assert answer.data is None


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({"guests": 2}, "night"),  # required, missing
        ({"night": "2026-12-24", "guests": 0}, "guests"),  # below its minimum
        ({"night": 5}, "night"),  # wrong type
        ({"night": "2026-12-24", "guests": "two"}, "guests"),
    ],
)
def test_an_answer_that_does_not_fit_is_an_error_naming_the_field(
    content: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidAnswerError, match="does not fit the question's form") as caught:
        asking_ctx(Scripted("accept", content)).ask("Which night?", NIGHT)
    assert field in [where for where, _ in caught.value.problems]


def test_an_unknown_action_is_an_invalid_answer() -> None:
    with pytest.raises(InvalidAnswerError, match="no valid action"):
        asking_ctx(Scripted("maybe")).ask("Which night?", NIGHT)


def test_a_bad_answer_let_through_reaches_the_model_as_written() -> None:
    registry = booking_registry()
    token = ask_channel.set(Scripted("accept", {"night": 3}))
    try:
        result = registry.dispatch_tool("book", {"room": "12"}, context=None)
    finally:
        ask_channel.reset(token)
    assert not result.ok
    assert result.content.startswith("The user's answer does not fit the question's form: night:")


def test_a_sync_and_an_async_tool_ask_through_the_contexts_channel() -> None:
    registry = booking_registry()
    channel = Scripted("accept", {"night": "2026-12-24"})
    token = ask_channel.set(channel)
    try:
        sync = registry.dispatch_tool("book", {"room": "12"}, context=None)
        async_ = asyncio.run(registry.adispatch_tool("abook", {"room": "3"}, context=None))
    finally:
        ask_channel.reset(token)
    assert sync.content == "booked 12 for 2026-12-24"
    assert async_.content == "accept: {'night': '2026-12-24'}"
    assert [name for name, _ in channel.asked] == ["book", "abook"]


def test_ask_inside_an_event_loop_says_to_await_aask() -> None:
    async def main() -> None:
        asking_ctx(Scripted()).ask("Which night?", NIGHT)

    with pytest.raises(UsageError, match=r"await ctx\.aask"):
        asyncio.run(main())


def test_a_null_for_an_optional_field_is_left_out() -> None:
    answer = asking_ctx(Scripted("accept", {"night": "2026-01-01", "guests": None})).ask("?", NIGHT)
    assert answer.data == {"night": "2026-01-01"}


# -- forms from types --------------------------------------------------------------------


class Guest(TypedDict):
    name: str
    age: int
    diet: Literal["any", "vegetarian", "vegan"]


@dataclasses.dataclass
class Stay:
    nights: int
    breakfast: bool = True
    note: str | None = None


def test_a_typeddict_is_a_form() -> None:
    question = form_question("Who?", Guest)
    assert question.schema["properties"]["diet"] == {
        "type": "string",
        "enum": ["any", "vegetarian", "vegan"],
    }
    assert set(question.schema["required"]) == {"name", "age", "diet"}
    assert "additionalProperties" not in question.schema  # not a form keyword
    channel = Scripted("accept", {"name": "Ann", "age": 40, "diet": "vegan"})
    assert asking_ctx(channel).ask("Who?", Guest).value == {
        "name": "Ann",
        "age": 40,
        "diet": "vegan",
    }


def test_a_dataclass_is_a_form_and_the_answer_becomes_one() -> None:
    question = form_question("How long?", Stay)
    assert question.schema["properties"]["note"] == {"type": "string"}  # X | None: optional
    assert question.schema["required"] == ["nights"]
    answer = asking_ctx(Scripted("accept", {"nights": 3, "note": None})).ask("How long?", Stay)
    assert answer.data == {"nights": 3}
    assert answer.value == Stay(3)


def test_extra_keys_are_refused_for_a_typed_form() -> None:
    with pytest.raises(InvalidAnswerError):
        asking_ctx(Scripted("accept", {"nights": 3, "pets": 2})).ask("How long?", Stay)


# -- usage errors at the call ---------------------------------------------------------------


@dataclasses.dataclass
class Address:
    street: str


@dataclasses.dataclass
class Order:
    to: Address


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        (
            {"type": "object", "properties": {"to": {"type": "object", "properties": {}}}},
            "the field 'to' is a nested object",
        ),
        ({"type": "object", "properties": {"tags": {"type": "array"}}}, "'tags' is an array"),
        ({"type": "string"}, '"type": "object"'),
        ({"type": "object", "properties": {}, "$defs": {}}, "'$defs'"),
        (Order, "Order is not a flat form: it nests Address"),
        (list, "not list"),
        ("night", "not str"),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            "required",
        ),
    ],
)
def test_a_schema_that_is_not_a_flat_form_is_a_usage_error(schema: Any, words: str) -> None:
    with pytest.raises(UsageError, match=r"ctx\.ask") as caught:
        asking_ctx(Scripted()).ask("?", schema)
    assert words in str(caught.value)


def test_a_usage_error_comes_first_even_where_nobody_can_be_asked() -> None:
    registry = ToolRegistry()
    seen: list[BaseException] = []

    @registry.register_tool
    def nested(ctx: ToolContext[None]) -> str:
        """Asks wrongly."""
        try:
            ctx.ask("?", Order)
        except Exception as exc:
            seen.append(exc)
        return "done"

    registry.dispatch_tool("nested", {}, context=None)
    assert isinstance(seen[0], UsageError)


@pytest.mark.parametrize("question", ["", "   ", 5, "x" * 10_001])
def test_the_question_must_be_text_of_a_bounded_length(question: Any) -> None:
    with pytest.raises(UsageError, match="question"):
        form_question(question, NIGHT)


def test_the_multi_select_and_titled_enum_forms_are_flat() -> None:
    schema = {
        "type": "object",
        "properties": {
            "colors": {"type": "array", "items": {"type": "string", "enum": ["r", "g"]}},
            "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}]},
            "legacy": {"type": "string", "enum": ["a"], "enumNames": ["A"]},
            "titled": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}},
        },
    }
    answer = asking_ctx(Scripted("accept", {"colors": ["r"], "size": "s"})).ask("?", schema)
    assert answer.data == {"colors": ["r"], "size": "s"}


# -- hostile answers ------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(
    content=json_values | st.dictionaries(st.sampled_from(["night", "guests", "x"]), json_values)
)
def test_no_answer_reaches_the_tool_unless_it_fits(content: Any) -> None:
    question = form_question("Which night?", NIGHT)
    try:
        answer = question.answer("accept", content)
    except InvalidAnswerError as exc:
        message = exc.message
    else:
        message = ""
    if message:
        assert message.startswith("The user's answer does not fit")
        return
    assert answer.data is not None
    assert isinstance(answer.data.get("night"), str)
    guests = answer.data.get("guests")
    assert guests is None or (isinstance(guests, int) and 1 <= guests <= 8)
