"""Streaming: text and tool-call deltas assembled into the same reply as without streaming."""

from __future__ import annotations

from typing import Any

import pytest

from toolreg import Conversation, ConversationError, Reply, ToolRegistry
from toolreg.conversation.stream import StreamAssembler
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
