"""Streaming: text and tool-call deltas assembled into the same reply as without streaming."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolreg import Conversation, ConversationError, Reply, ToolRegistry
from toolreg.conversation.providers.openai_chat import StreamAssembler
from toolreg.testing import ScriptedServer, TurnLike, call, function_call, text, tool_calls

MODEL = "scripted-model"
LONG_CITY = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"


@pytest.fixture
def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register_tool
    def get_weather(city: str, unit: str = "c") -> dict[str, Any]:
        """Current weather of a city."""
        return {"city": city, "temp": 18, "unit": unit}

    return reg


def script() -> list[TurnLike]:
    return [
        tool_calls(
            call("get_weather", city=LONG_CITY, unit="f"),
            call("get_weather", city="Paris"),
            content="Let me check both.",
            usage=(30, 12),
        ),
        text("Wet in Wales, sunny in Paris: a long answer split in many pieces.", usage=(50, 9)),
    ]


def run(registry: ToolRegistry, *, stream: bool, **options: Any) -> tuple[Reply, list[Any]]:
    with ScriptedServer(script()) as server:
        conv = Conversation(server.client(), MODEL, registry=registry, stream=stream, **options)
        reply = conv.send("Weather in Wales and Paris?")
        server.assert_all_consumed()
        return reply, list(server.requests)


def test_streaming_gives_the_same_reply_as_not_streaming(registry: ToolRegistry) -> None:
    deltas: list[str] = []
    streamed, requests = run(registry, stream=True, on_text=deltas.append)
    plain, _ = run(registry, stream=False)

    assert streamed.messages == plain.messages
    assert streamed.text == plain.text
    assert streamed.usage == plain.usage
    assert (streamed.usage.prompt_tokens, streamed.usage.completion_tokens) == (80, 21)
    assert [r.content for r in streamed.tool_results] == [r.content for r in plain.tool_results]
    assert (streamed.rounds, streamed.stop_reason) == (plain.rounds, plain.stop_reason)

    echoed = streamed.messages[1]
    assert echoed["content"] == "Let me check both."
    arguments = [c["function"]["arguments"] for c in echoed["tool_calls"]]
    assert arguments == [f'{{"city": "{LONG_CITY}", "unit": "f"}}', '{"city": "Paris"}']
    assert [c["id"] for c in echoed["tool_calls"]] == ["call_1", "call_2"]

    # on_text got every text delta, in order, from both model calls.
    assert len(deltas) > 5
    assert "".join(deltas) == "Let me check both." + streamed.text
    for body in requests:
        assert body["stream"] is True
        assert body["stream_options"] == {"include_usage": True}


def test_stream_options_given_by_the_caller_are_kept(registry: ToolRegistry) -> None:
    reply, requests = run(registry, stream=True, stream_options={"include_usage": False})
    assert all(body["stream_options"] == {"include_usage": False} for body in requests)
    assert reply.usage.total_tokens == 0  # the server was told not to send usage


def test_streamed_legacy_function_call(registry: ToolRegistry) -> None:
    turns = [function_call("get_weather", city=LONG_CITY), text("Wet.")]
    with ScriptedServer(turns) as server:
        conv = Conversation(
            server.client(), MODEL, registry=registry, stream=True, dialect="functions"
        )
        reply = conv.send("go")
        second = server.assert_request(1, stream=True, contains_tool_result="get_weather")
    assert second["messages"][1]["function_call"] == {
        "name": "get_weather",
        "arguments": f'{{"city": "{LONG_CITY}"}}',
    }
    assert reply.tool_results[0].value["city"] == LONG_CITY
    assert reply.text == "Wet."


def test_on_text_errors_propagate_and_leave_the_history_alone(registry: ToolRegistry) -> None:
    def explode(_: str) -> None:
        raise RuntimeError("display broke")

    with ScriptedServer([text("Hello there, friend.")]) as server:
        conv = Conversation(server.client(), MODEL, registry=registry, stream=True, on_text=explode)
        with pytest.raises(RuntimeError, match="display broke"):
            conv.send("hi")
    assert conv.messages == []


# -- the assembler on its own, for chunk shapes ScriptedServer does not send ---------------------


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}


def fragment(**fields: Any) -> dict[str, Any]:
    return chunk({"tool_calls": [fields]})


def test_assembler_without_indexes_follows_ids() -> None:
    assembler = StreamAssembler()
    for piece in [
        fragment(id="a", function={"name": "f", "arguments": '{"x"'}),
        fragment(function={"arguments": ": 1}"}),
        fragment(id="b", function={"name": "g", "arguments": ""}),
        fragment(function={"arguments": "{}"}),
        chunk({}, "tool_calls"),
    ]:
        assembler.feed(piece)
    message = assembler.result()["message"]
    assert [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]
    ] == [
        ("a", "f", '{"x": 1}'),
        ("b", "g", "{}"),
    ]


def test_assembler_keeps_the_first_id_and_name_and_ignores_other_choices() -> None:
    assembler = StreamAssembler()
    assembler.feed(fragment(index=0, id="a", function={"name": "f", "arguments": "{"}))
    assembler.feed(fragment(index=0, id="a", function={"name": "f", "arguments": "}"}))
    assembler.feed({"choices": [{"index": 1, "delta": {"content": "other choice"}}]})
    assembler.feed(chunk({}, "tool_calls"))
    message = assembler.result()["message"]
    assert message["tool_calls"][0]["function"] == {"name": "f", "arguments": "{}"}
    assert message["content"] is None


def test_assembler_refuses_an_empty_stream() -> None:
    with pytest.raises(ConversationError, match="no chunks"):
        StreamAssembler().result()


JSON_TEXT = st.text(alphabet='ab{}[]",:\\ é\n\t', max_size=8)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-99, 99) | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner, max_size=3),
    max_leaves=8,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    arguments=st.dictionaries(JSON_TEXT, JSON_VALUES, max_size=4),
    padding=st.sampled_from([0, 0, 1100, 3000]),  # long arguments: read by ObjectEnd
    spaces=st.sampled_from(["", " ", "\n  "]),
    rng=st.randoms(use_true_random=False),
)
def test_assembler_gives_a_call_out_exactly_when_its_arguments_become_whole(
    arguments: dict[str, Any], padding: int, spaces: str, rng: Any
) -> None:
    """Whatever the pieces, a call is complete at the first piece after which its
    arguments are a whole JSON object, never before, and given out once."""
    if padding:
        arguments = {**arguments, "pad": '}{\\"' * (padding // 4)}
    text = spaces + json.dumps(arguments, ensure_ascii=rng.random() < 0.5) + spaces
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 40))))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assembler = StreamAssembler()
    assembler.feed(fragment(index=0, id="a", function={"name": "f", "arguments": ""}))
    given_at: list[int] = []
    for n, piece in enumerate(pieces):
        assembler.feed(fragment(index=0, function={"arguments": piece}))
        for message in assembler.completed():
            assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == arguments
            given_at.append(n)
    whole = [n for n in range(len(pieces)) if _whole("".join(pieces[: n + 1]))]
    assert given_at == whole[:1]  # at the first piece that makes it whole, once


def _whole(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False
