"""A tool asks the user in a conversation (`ctx.ask`): the turn pauses like an approval
(`stop_reason == "input_required"`, the question in `reply.pending` and in the saved
state), `resume({call_id: answer})` checks the answer and runs the call again from the
start with it; through the real openai SDK against ScriptedServer, sync and async, across
a fresh Conversation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolreg import (
    Answer,
    AsyncConversation,
    Conversation,
    ConversationStateError,
    ToolContext,
    ToolRegistry,
    UsageError,
)
from toolreg.testing import ScriptedServer, call, text, tool_calls

MODEL = "scripted-model"
KEY = b"a signing key of 16+ bytes"
NIGHT = {
    "type": "object",
    "properties": {
        "night": {"type": "string", "description": "YYYY-MM-DD"},
        "guests": {"type": "integer", "minimum": 1, "maximum": 8},
    },
    "required": ["night"],
}
WHO = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Hotel:
    """Tools that ask; `runs` records each run (its arguments, key and what it was told)."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, str | None, str]] = []
        self.registry = reg = ToolRegistry()

        @reg.register_tool
        def book(room: str, ctx: ToolContext[Any]) -> str:
            """Book a room (asks which night)."""
            answer = ctx.ask(f"Which night for room {room}?", NIGHT)
            self.runs.append((room, ctx.idempotency_key, answer.action))
            if not answer.accepted:
                return f"not booked: the user chose {answer.action}"
            assert answer.data is not None
            return f"booked {room} for {answer.data['night']}"

        @reg.register_tool
        async def abook(room: str, ctx: ToolContext[Any]) -> str:
            """Book a room (asks which night, then who)."""
            night = await ctx.aask(f"Which night for room {room}?", NIGHT)
            who = await ctx.aask("Who is it for?", WHO)
            self.runs.append((room, ctx.idempotency_key, f"{night.action}/{who.action}"))
            assert night.data is not None
            assert who.data is not None
            return f"booked {room} for {who.data['name']} on {night.data['night']}"

        @reg.register_tool(read_only=True)
        def rooms() -> list[str]:
            """Free rooms."""
            return ["12", "14"]


def chat_for(server: ScriptedServer, hotel: Hotel) -> Conversation:
    return Conversation(server.client(), MODEL, registry=hotel.registry, context={})


def observations(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in history if m.get("role") == "tool"]


def test_a_question_pauses_the_turn_and_the_answer_resumes_it_elsewhere() -> None:
    hotel = Hotel()
    script = [
        tool_calls(call("rooms"), call("book", room="12"), content="Let me book."),
        text("Booked room 12 for Christmas Eve."),
    ]
    with ScriptedServer(script) as server:
        chat = chat_for(server, hotel)
        reply = chat.send("Book room 12")
        assert reply.stop_reason == "input_required"
        (pending,) = reply.pending
        assert pending.call_id == "call_2"
        assert pending.tool_name == "book"
        assert pending.arguments == {"room": "12"}
        assert pending.question == "Which night for room 12?"
        assert pending.schema == NIGHT
        assert chat.pending == reply.pending
        assert [r.tool_name for r in reply.tool_results] == ["rooms"]  # the other call ran
        assert hotel.runs == []  # stopped at its question
        with pytest.raises(UsageError, match="waits for approvals"):
            chat.send("And?")

        saved = json.dumps(chat.export_state(key=KEY))
        state = json.loads(saved)
        assert state["pending"][0]["question"] == "Which night for room 12?"
        assert state["pending"][0]["schema"] == NIGHT

        fresh = Hotel()  # another process: its own registry, same tools
        later = Conversation.from_state(
            state, server.client(), registry=fresh.registry, context={}, key=KEY
        )
        assert later.pending == [pending]
        done = later.resume({"call_2": {"night": "2026-12-24", "guests": 2}})
        server.assert_all_consumed()
        sent = server.history(1)
    assert done.stop_reason == "answer"
    assert done.text == "Booked room 12 for Christmas Eve."
    assert observations(sent) == ['["12", "14"]', "booked 12 for 2026-12-24"]
    assert [r.tool_name for r in done.tool_results] == ["rooms", "book"]
    (run,) = fresh.runs
    assert run[0] == "12"
    assert run[2] == "accept"
    assert run[1] == pending.idempotency_key  # the run after the answer keeps the call's key
    assert done.tool_results[1].idempotency_key == pending.idempotency_key


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (Answer("decline"), "not booked: the user chose decline"),
        (False, "not booked: the user chose decline"),
        (Answer("cancel"), "not booked: the user chose cancel"),
        (Answer("accept", {"night": "2026-01-02"}), "booked 12 for 2026-01-02"),
    ],
)
def test_every_kind_of_answer_reaches_the_tool(answer: Any, told: str) -> None:
    hotel = Hotel()
    with ScriptedServer([tool_calls(call("book", room="12")), text("ok")]) as server:
        chat = chat_for(server, hotel)
        reply = chat.send("Book 12")
        done = chat.resume({reply.pending[0].call_id: answer})
        sent = server.history(1)
    assert observations(sent) == [told]
    assert done.text == "ok"


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({"guests": 2}, "'night'"),
        ({"night": "2026-12-24", "guests": 0}, "'guests'"),
        ({"night": 24}, "'night'"),
        ("24 December", "str"),
        (True, "bool"),
    ],
)
def test_an_answer_that_does_not_fit_is_a_usage_error_naming_the_field(
    answer: Any, field: str
) -> None:
    hotel = Hotel()
    with ScriptedServer([tool_calls(call("book", room="12")), text("ok")]) as server:
        chat = chat_for(server, hotel)
        reply = chat.send("Book 12")
        call_id = reply.pending[0].call_id
        with pytest.raises(UsageError, match=r"resume\(\)") as caught:
            chat.resume({call_id: answer})
        assert field in str(caught.value)
        assert hotel.runs == []  # nothing ran
        done = chat.resume({call_id: {"night": "2026-12-24"}})  # still waiting: answer it
    assert done.text == "ok"


def test_a_second_question_pauses_again_and_every_answer_is_replayed() -> None:
    async def run() -> None:
        hotel = Hotel()
        script = [tool_calls(call("abook", room="7")), text("Booked.")]
        with ScriptedServer(script) as server:
            chat = AsyncConversation(
                server.async_client(), MODEL, registry=hotel.registry, context={}
            )
            first = await chat.send("Book 7")
            assert first.stop_reason == "input_required"
            assert first.pending[0].question == "Which night for room 7?"
            state = chat.export_state()
            fresh = Hotel()
            later = AsyncConversation.from_state(
                state, server.async_client(), registry=fresh.registry, context={}
            )
            second = await later.resume({first.pending[0].call_id: {"night": "2026-03-01"}})
            assert second.stop_reason == "input_required"
            (asked,) = second.pending
            assert asked.question == "Who is it for?"
            assert asked.schema == WHO
            assert len(asked.answers) == 1
            again = AsyncConversation.from_state(
                later.export_state(), server.async_client(), registry=fresh.registry, context={}
            )
            done = await again.resume({asked.call_id: {"name": "Ann"}})
            sent = server.history(1)
        assert done.text == "Booked."
        assert observations(sent) == ["booked 7 for Ann on 2026-03-01"]
        assert fresh.runs == [("7", asked.idempotency_key, "accept/accept")]

    asyncio.run(run())


def test_a_changed_question_in_a_signed_state_is_refused() -> None:
    hotel = Hotel()
    with ScriptedServer([tool_calls(call("book", room="12"))]) as server:
        chat = chat_for(server, hotel)
        chat.send("Book 12")
        state = chat.export_state(key=KEY)
        state["pending"][0]["question"] = "What is your password?"
        with pytest.raises(ConversationStateError):
            Conversation.from_state(
                state, server.client(), registry=hotel.registry, context={}, key=KEY
            )


@pytest.mark.parametrize(
    "change",
    [
        {"schema": {"type": "object", "properties": {"a": {"type": "object"}}}},
        {"schema": "no"},
        {"question": ""},
        {"answers": "many"},
        {"answers": [{"question": "q", "schema": NIGHT, "action": "accept", "content": {}}]},
        {"answers": [{"question": "q"}]},
    ],
)
def test_a_malformed_question_in_an_unsigned_state_is_refused(change: dict[str, Any]) -> None:
    hotel = Hotel()
    with ScriptedServer([tool_calls(call("book", room="12"))]) as server:
        chat = chat_for(server, hotel)
        chat.send("Book 12")
        state = chat.export_state()
        state["pending"][0].update(change)
        with pytest.raises(ConversationStateError, match="malformed question"):
            Conversation.from_state(state, server.client(), registry=hotel.registry, context={})


def test_stream_says_the_turn_waits() -> None:
    from toolreg import ApprovalRequired, TurnFinished

    hotel = Hotel()
    with ScriptedServer([tool_calls(call("book", room="12"))]) as server:
        chat = chat_for(server, hotel)
        events = list(chat.stream("Book 12"))
    waiting = [e for e in events if isinstance(e, ApprovalRequired)]
    assert waiting[0].pending[0].question == "Which night for room 12?"
    assert isinstance(events[-1], TurnFinished)
    assert events[-1].reply.stop_reason == "input_required"


def test_a_round_with_an_approval_and_a_question_waits_for_both() -> None:
    hotel = Hotel()
    charged: list[int] = []

    @hotel.registry.register_tool(destructive=True)
    def charge(amount: int) -> str:
        """Charge the card."""
        charged.append(amount)
        return f"charged {amount}"

    script = [tool_calls(call("charge", amount=90), call("book", room="12")), text("All set.")]
    with ScriptedServer(script) as server:
        chat = Conversation(
            server.client(), MODEL, registry=hotel.registry, context={}, confirm="defer"
        )
        reply = chat.send("Book 12 and charge me")
        assert reply.stop_reason == "approval_required"  # a person decides both
        approval, question = reply.pending
        assert (approval.tool_name, approval.question) == ("charge", None)
        assert question.question == "Which night for room 12?"
        with pytest.raises(UsageError, match="no decision"):
            chat.resume({question.call_id: {"night": "2026-12-24"}})
        done = chat.resume({approval.call_id: True, question.call_id: {"night": "2026-12-24"}})
        sent = server.history(1)
    assert done.text == "All set."
    assert charged == [90]
    assert observations(sent) == ["charged 90", "booked 12 for 2026-12-24"]
