"""Conversation options a new user reaches for: advertise_required, force_tools, max_repeats,
and output_type as a JSON Schema."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import Conversation, ToolRegistry, UsageError
from toolreg.testing import ScriptedServer, text, tool_call


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def record_expense(amount: float, date: str) -> str:
        """Record an expense."""
        return f"{amount} on {date}"

    @reg.register_tool
    def job_status(job: str) -> str:
        """Poll a job."""
        return "running"

    @reg.register_tool(return_direct=True)
    def finish(summary: str) -> str:
        """End the turn with a summary."""
        return summary

    return reg


def test_advertise_required_false_lets_the_model_leave_a_value_out_and_be_told() -> None:
    script = [tool_call("record_expense", amount=12.5), text("Which day was it?")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), "m", registry=registry(), advertise_required=False)
        reply = chat.send("I spent 12.50")
        sent = server.requests[0]["tools"]
    assert all("required" not in t["function"]["parameters"] for t in sent)
    assert reply.tool_results[0].content == (
        "Invalid arguments for tool 'record_expense': missing required property 'date'."
    )
    assert reply.text == "Which day was it?"
    with pytest.raises(UsageError, match="advertise_required=False cannot be combined"):
        Conversation(object(), "m", registry=registry(), advertise_required=False, strict=True)


def test_force_tools_requires_a_call_every_round_and_return_direct_ends_the_turn() -> None:
    script = [tool_call("job_status", job="a"), tool_call("finish", summary="All done.")]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), "m", registry=registry(), force_tools=True)
        reply = chat.send("Check job a and finish.")
        choices = [r["tool_choice"] for r in server.requests]
    assert choices == ["required", "required"]
    assert reply.stop_reason == "return_direct"
    assert reply.text == "All done."
    with pytest.raises(UsageError, match="required"):
        Conversation(object(), "m", registry=registry(), force_tools=True, dialect="functions")


def polls(n: int) -> list[Any]:
    return [tool_call("job_status", job="a") for _ in range(n)]


def test_max_repeats_sets_when_a_repeated_call_is_refused() -> None:
    with ScriptedServer([*polls(2), text("Still running.")]) as server:
        reply = Conversation(server.client(), "m", registry=registry(), max_repeats=2).send("?")
    assert [r.error_kind for r in reply.tool_results] == [None, "repeated"]
    with ScriptedServer([*polls(3), text("Still running.")]) as server:
        reply = Conversation(server.client(), "m", registry=registry()).send("?")  # default 3
    assert [r.error_kind for r in reply.tool_results] == [None, None, "repeated"]


def test_max_repeats_none_allows_polling() -> None:
    with ScriptedServer([*polls(5), text("Done.")]) as server:
        reply = Conversation(server.client(), "m", registry=registry(), max_repeats=None).send("?")
    assert [r.error_kind for r in reply.tool_results] == [None] * 5
    assert reply.text == "Done."


@pytest.mark.parametrize("bad", [0, 1, -3, 2.5, True, "3"])
def test_max_repeats_must_be_a_number_of_rounds(bad: Any) -> None:
    with pytest.raises(UsageError, match="max_repeats"):
        Conversation(object(), "m", registry=registry(), max_repeats=bad)


SCHEMA = {
    "title": "Expense",
    "type": "object",
    "properties": {"amount": {"type": "number"}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
    "additionalProperties": False,
}


def test_output_type_may_be_a_json_schema() -> None:
    script = [text('{"amount": 12}'), text('{"amount": 12.5, "currency": "EUR"}')]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), "m", registry=registry())
        reply = chat.send("Extract the expense.", output_type=SCHEMA)
        first = server.requests[0]["response_format"]
    expected = {"name": "Expense", "schema": SCHEMA, "strict": True}  # strict as it is
    assert first == {"type": "json_schema", "json_schema": expected}
    assert reply.output == {"amount": 12.5, "currency": "EUR"}
    with pytest.raises(UsageError, match="not a valid JSON Schema"):
        chat.send("x", output_type={"type": "nope"})


def test_a_non_object_json_schema_output_is_wrapped() -> None:
    with ScriptedServer([text('{"result": ["a", "b"]}')]) as server:
        chat = Conversation(server.client(), "m", registry=registry())
        reply = chat.send("List.", output_type={"type": "array", "items": {"type": "string"}})
        sent = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert sent["properties"]["result"] == {"type": "array", "items": {"type": "string"}}
    assert reply.output == ["a", "b"]


def test_the_options_survive_an_exported_state() -> None:
    reg = registry()
    with ScriptedServer([]) as server:
        chat = Conversation(
            server.client(),
            "m",
            registry=reg,
            advertise_required=False,
            force_tools=True,
            max_repeats=None,
        )
        again = Conversation.from_state(chat.export_state(), server.client(), registry=reg)
    assert again.options.advertise_required is False
    assert again.options.force_tools is True
    assert again.options.max_repeats is None


# -- the options record: declared once -------------------------------------------------------


@pytest.mark.parametrize("driver", ["Conversation", "AsyncConversation"])
def test_the_constructor_takes_exactly_the_records_options(driver: str) -> None:
    """Every keyword of the constructor is a field of `ConversationOptions` (same default,
    same annotation) or one of its collaborators: nothing is declared twice by hand."""
    import dataclasses
    import inspect

    import toolreg
    from toolreg.conversation import ConversationOptions
    from toolreg.conversation.options import COLLABORATORS

    parameters = inspect.signature(getattr(toolreg, driver)).parameters
    keywords = {
        name: p
        for name, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in COLLABORATORS
    }
    fields = {f.name: f for f in dataclasses.fields(ConversationOptions)}
    assert list(keywords) == list(fields)
    for name, field in fields.items():
        assert keywords[name].default == field.default, name
        assert keywords[name].annotation == field.type, name
        assert field.metadata["doc"], f"{name} has no description"
    named = {n for n, p in parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD}
    assert named == {*COLLABORATORS, *fields}


def test_the_record_checks_itself() -> None:
    from toolreg.conversation import ConversationOptions

    with pytest.raises(UsageError, match="max_rounds must be >= 0"):
        ConversationOptions(max_rounds=-1)
    with pytest.raises(UsageError, match='final_call must be "tool_choice_none" or "drop_tools"'):
        ConversationOptions(final_call="never")
    with pytest.raises(UsageError, match="needs stream=True"):
        ConversationOptions(eager_tools=True)
    with pytest.raises(UsageError, match='with state="server"'):
        ConversationOptions(state="server", max_history_messages=4)
    with pytest.raises(UsageError, match="max_repeats=1"):
        ConversationOptions(max_repeats=1)


def test_options_given_as_a_record_build_the_same_conversation() -> None:
    from toolreg.conversation import ConversationOptions

    options = ConversationOptions(max_rounds=3, force_tools=True, name="shop")
    with ScriptedServer([text("hi")]) as server:
        chat = Conversation(server.client(), "m", registry=registry(), **options.given())
        chat.send("hello")
    assert chat.options == dataclasses_replace(options, dialect="tools")
    saved = chat.export_state()["options"]
    assert (saved["max_rounds"], saved["force_tools"], saved["name"]) == (3, True, "shop")
    assert set(saved) - {"model", "request_options"} == set(options.saved())


def dataclasses_replace(options: Any, **changes: Any) -> Any:
    import dataclasses

    return dataclasses.replace(options, **changes)


@pytest.mark.parametrize(
    ("attribute", "field"),
    [
        ("name", "name"),
        ("streaming", "stream"),
        ("parallel", "parallel"),
        ("strict", "strict"),
        ("output_strict", "output_strict"),
        ("advertise_required", "advertise_required"),
        ("assistant_content", "assistant_content"),
        ("confirm", "confirm"),
        ("deferred_search", "deferred_search"),
        ("eager_tools", "eager_tools"),
        ("on_text", "on_text"),
        ("on_event", "on_event"),
        ("tool_filter", "tools"),
        ("tool_search", "tool_search"),
        ("max_rounds", "max_rounds"),
    ],
)
def test_an_option_is_read_from_the_record_only(attribute: str, field: str) -> None:
    """One spelling per option: `chat.options.<field>`; the conversation's old copies are
    gone, and reading one says where the value is."""
    chat = Conversation(object(), "m", registry=registry(), dialect="tools", stream=True)
    assert getattr(chat.options, field) == getattr(chat.options, field)  # the record has it
    with pytest.raises(AttributeError, match=rf"chat\.options\.{field}\b") as raised:
        getattr(chat, attribute)
    assert raised.value.name == attribute
    assert not hasattr(chat, attribute)
    with pytest.raises(AttributeError, match="has no attribute 'colour'"):
        getattr(chat, "colour")


def test_the_constructor_keywords_are_the_record_and_the_documented_collaborators() -> None:
    """The constructor's typed keywords are exactly the fields of `ConversationOptions` and
    the collaborators `COLLABORATORS` names, and the options reference lists each of those
    collaborators by name (the table itself is read from the record)."""
    import dataclasses
    import inspect
    from pathlib import Path

    from toolreg.conversation import ConversationOptions
    from toolreg.conversation.core import ConversationCore
    from toolreg.conversation.options import COLLABORATORS

    signature = inspect.signature(ConversationCore.__init__).parameters
    keywords = [n for n, p in signature.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    positional = [
        n for n, p in signature.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    ]
    fields = [f.name for f in dataclasses.fields(ConversationOptions)]
    assert positional == ["self", "client", "model"]
    assert set(keywords) - set(fields) == set(COLLABORATORS) - {"client", "model"}
    assert set(fields) <= set(keywords)
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "options.md").read_text()
    for name in COLLABORATORS:
        assert f"`{name}`" in page, name
