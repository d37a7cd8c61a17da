"""trim_history: unit tests, a property test of the pairing rule, and the driver's use of it."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import Conversation, ToolRegistry, trim_history
from toolreg.conversation.providers.history import trim_to_limits
from toolreg.testing import ScriptedServer, text, tool_call

Message = dict[str, Any]

SYSTEM = {"role": "system", "content": "You are terse."}


def user(content: str) -> Message:
    return {"role": "user", "content": content}


def answer(content: str) -> Message:
    return {"role": "assistant", "content": content}


def calls(*ids: str, content: str | None = None) -> Message:
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def result(call_id: str, content: str = "ok") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


HISTORY = [
    SYSTEM,
    user("one"),
    answer("1"),
    user("two"),
    calls("a", "b"),
    result("a"),
    result("b"),
    answer("2"),
    user("three"),
]


def test_no_limits_keeps_everything_in_a_new_list() -> None:
    trimmed = trim_history(HISTORY)
    assert trimmed == HISTORY
    assert trimmed is not HISTORY


def test_oldest_messages_go_first_and_the_system_message_stays() -> None:
    assert trim_history(HISTORY, max_messages=4) == [SYSTEM, answer("2"), user("three")]
    assert trim_history(HISTORY, max_messages=8) == [SYSTEM, *HISTORY[2:]]


def test_calls_and_their_answers_go_together() -> None:
    # 5 would cut between the assistant's calls and its answers: the whole group goes.
    assert trim_history(HISTORY, max_messages=5) == [SYSTEM, answer("2"), user("three")]
    assert trim_history(HISTORY, max_messages=6) == [SYSTEM, *HISTORY[4:]]


def test_the_newest_unit_is_kept_even_over_the_limit() -> None:
    assert trim_history(HISTORY, max_messages=0) == [SYSTEM, user("three")]
    assert trim_history(HISTORY, max_chars=1) == [SYSTEM, user("three")]
    ends_in_calls = HISTORY[:7]  # the question ("two") stays with the calls it led to
    assert trim_history(ends_in_calls, max_messages=1) == [SYSTEM, *HISTORY[3:7]]


def test_max_chars_counts_content_and_calls() -> None:
    history = [user("x" * 50), calls("a"), result("a", "y" * 20), user("z" * 10)]
    calls_chars = len(json.dumps(history[1]["tool_calls"], ensure_ascii=False))
    assert trim_history(history, max_chars=30 + calls_chars) == history[1:]
    assert trim_history(history, max_chars=29 + calls_chars) == history[3:]
    assert trim_history(history, max_chars=80 + calls_chars) == history


def test_both_limits_apply_and_count_the_system_message() -> None:
    budget = len(SYSTEM["content"]) + len("2") + len("three")
    assert trim_history(HISTORY, max_messages=8, max_chars=budget) == [SYSTEM, *HISTORY[7:]]
    assert trim_history(HISTORY, max_messages=2, max_chars=budget) == [SYSTEM, *HISTORY[8:]]
    assert trim_history(HISTORY, max_messages=8, max_chars=budget - 1) == [SYSTEM, *HISTORY[8:]]


def test_leading_system_and_developer_messages_are_all_kept() -> None:
    developer = {"role": "developer", "content": "Be exact."}
    history = [SYSTEM, developer, user("a"), answer("b"), user("c")]
    assert trim_history(history, max_messages=3) == [SYSTEM, developer, user("c")]


def test_an_orphaned_answer_at_the_start_is_dropped() -> None:
    history = [SYSTEM, result("gone"), user("hi"), answer("hello")]
    assert trim_history(history, max_messages=10) == [SYSTEM, user("hi"), answer("hello")]


def test_legacy_function_and_observation_answers_are_paired() -> None:
    legacy_call = {
        "role": "assistant",
        "content": "",
        "function_call": {"name": "f", "arguments": "{}"},
    }
    function_answer = {"role": "function", "name": "f", "content": "ok"}
    observation = {"role": "observation", "content": "ok"}
    for reply in (function_answer, observation):
        history = [user("a"), legacy_call, reply, user("b")]
        assert trim_history(history, max_messages=2) == [user("b")]
        assert trim_history(history, max_messages=3) == history[1:]


def test_the_input_is_not_modified() -> None:
    before = copy.deepcopy(HISTORY)
    trim_history(HISTORY, max_messages=2, max_chars=3)
    assert before == HISTORY


# -- the property --------------------------------------------------------------------------------


def size(message: Message) -> int:
    """The documented measure: content characters plus the JSON of the calls."""
    content = message.get("content")
    total = len(content) if isinstance(content, str) else 0
    if message.get("tool_calls"):
        total += len(json.dumps(message["tool_calls"], ensure_ascii=False))
    return total


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = [SYSTEM] if draw(st.booleans()) else []
    words = st.text(alphabet="abcdé 水", max_size=12)
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "answer", "calls"]))
        if kind == "user":
            messages.append(user(draw(words)))
        elif kind == "answer":
            messages.append(answer(draw(words)))
        else:
            first = sum(len(m.get("tool_calls", ())) for m in messages)
            ids = [f"call_{first + i}" for i in range(draw(st.integers(1, 3)))]
            content = draw(st.one_of(st.none(), words))
            messages.append(calls(*ids, content=content))
            messages.extend(result(i, draw(words)) for i in ids)
    return messages


def units_of(messages: list[Message]) -> list[int]:
    """Indexes where a unit starts (a message that is not a tool answer)."""
    return [i for i, m in enumerate(messages) if m["role"] != "tool"]


@settings(max_examples=200, deadline=None)
@given(
    histories(),
    st.one_of(st.none(), st.integers(0, 14)),
    st.one_of(st.none(), st.integers(0, 300)),
)
def test_trimming_keeps_the_pairing_rule(
    history: list[Message], max_messages: int | None, max_chars: int | None
) -> None:
    trimmed = trim_history(history, max_messages, max_chars)

    head = history[:1] if history[:1] == [SYSTEM] else []
    assert trimmed[: len(head)] == head
    rest, kept = history[len(head) :], trimmed[len(head) :]
    # the turn's question (the newest user message) is always kept...
    questions = [i for i, m in enumerate(rest) if m["role"] == "user"]
    question = questions[-1] if questions else None
    if question is not None:
        assert any(m is rest[question] for m in kept)
    # ...and the rest is a suffix of the non-system messages, cut at a unit boundary
    pinned = question is not None and kept[:1] and kept[0] is rest[question]
    suffix = kept[1:] if pinned and (len(kept) == 1 or kept[1] is not rest[question + 1]) else kept
    start = len(rest) - len(suffix)
    assert suffix == rest[start:]
    assert start == len(rest) or start in units_of(rest)
    if kept:
        assert kept[0]["role"] != "tool"
    elif rest:
        raise AssertionError("the newest unit must always be kept")

    # every answer has its call in the result, and every call its answer
    call_ids = [c["id"] for m in kept for c in m.get("tool_calls", ())]
    answer_ids = [m["tool_call_id"] for m in kept if m["role"] == "tool"]
    assert sorted(call_ids) == sorted(answer_ids)

    # limits hold unless only the question and the newest unit are left, and nothing more
    # could have been kept
    count, chars = len(trimmed), sum(size(m) for m in trimmed)

    def fits(n: int, c: int) -> bool:
        return (max_messages is None or n <= max_messages) and (max_chars is None or c <= max_chars)

    droppable = [i for i in units_of(rest) if i >= start and i != question]
    if len(droppable) > 1:
        assert fits(count, chars)
    before = [i for i in units_of(rest) if i < start and i != question]
    if before and start > 0:
        previous = max(before)
        extra = rest[previous : next(i for i in [*units_of(rest), len(rest)] if i > previous)]
        assert not fits(count + len(extra), chars + sum(size(m) for m in extra))


# -- the driver applies it before every call ---------------------------------------------------


def test_the_driver_sends_a_trimmed_history_and_keeps_the_whole_one() -> None:
    registry = ToolRegistry()

    @registry.register_tool
    def f() -> str:
        return "ok"

    script = [text("a1"), tool_call("f"), text("a2")]
    with ScriptedServer(script) as server:
        conv = Conversation(
            server.client(), "m", registry=registry, system="S", max_history_messages=4
        )
        conv.send("q1")
        reply = conv.send("q2")
        sent = server.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert sent[1] == {"role": "user", "content": "q2"}
    assert [m["role"] for m in reply.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]


def test_the_newest_question_is_never_trimmed() -> None:
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "old question"},
        {"role": "assistant", "content": "old answer"},
        {"role": "user", "content": "What is the weather in Paris and Rome?"},
        calls("c1", content=""),
        result("c1", "sunny"),
        calls("c2", content=""),
        result("c2", "cloudy"),
    ]
    kept, fits = trim_to_limits(history, 5, None)
    assert [m.get("content") for m in kept] == [
        "Be brief.",
        "What is the weather in Paris and Rome?",
        "",
        "cloudy",
    ]
    assert fits
    assert kept == trim_history(history, max_messages=5)
    tight, fits = trim_to_limits(history, 2, None)  # cannot hold system + question + newest
    assert [m.get("content") for m in tight] == [
        "Be brief.",
        "What is the weather in Paris and Rome?",
        "",
        "cloudy",
    ]
    assert not fits


def test_a_turn_that_cannot_fit_says_so_in_the_reply() -> None:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    script = [
        tool_call("get_weather", city="Paris"),
        tool_call("get_weather", city="Rome"),
        text("Sunny in both."),
    ]
    with ScriptedServer(script) as server:
        chat = Conversation(server.client(), "m", registry=reg, system="S", max_history_messages=3)
        reply = chat.send("Weather in Paris and Rome?")
        last = server.requests[2]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool"]
    assert last[1]["content"] == "Weather in Paris and Rome?"
    assert reply.over_history_limit is True
